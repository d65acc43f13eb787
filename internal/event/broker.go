// Package event owns the live streams of job lifecycle events (spec 6):
// the broker that fans the store's event feed out to subscribers, and the
// stream engine that runs each stream over it (subscribe, resume from a
// Last-Event-ID, snapshot, follow, ping, time out) and builds its frames.
//
// The events the job service writes in each state change's transaction are
// the only source: the broker tails the store's event feed
// (store.JobEventFeed, in position order) and hands each new event to the
// subscribers it concerns. A wake-up (a local commit, or on PostgreSQL a
// notification from any controller) makes it read the feed at once; a slow
// poll covers a lost wake-up. Subscribers have bounded buffers: one that
// falls behind is closed, never waited for, and its client resumes from
// the store.
//
// Writing frames to a client is an adapter's (Sink; httpapi writes them as
// server-sent events): this package does not know HTTP, and the layering
// test keeps it so.
package event

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

// ErrSlow ends a subscription whose buffer filled: its reader fell behind.
var ErrSlow = errors.New("event: subscriber fell behind")

// ErrClosed ends a subscription when the broker stops.
var ErrClosed = errors.New("event: broker stopped")

// Feed is what the broker reads.
type Feed interface {
	JobEventFeed(ctx context.Context, p *store.JobEventFeedParams) ([]*store.JobEvent, error)
	JobEventLastPosition(ctx context.Context) (int64, error)
}

// Config configures a Broker.
type Config struct {
	Feed Feed
	Log  *slog.Logger
	// PollInterval is how often the feed is read without a wake-up: the
	// bound on delay when a wake-up is lost. Default 1 s.
	PollInterval time.Duration
	// Buffer is how many events a subscriber may have waiting before it is
	// closed as slow. Default 1024.
	Buffer int
	// Batch is how many events one read of the feed takes. Default 500.
	Batch int
	// OnEvent, when set, sees every event the broker reads, in position
	// order (metrics count from it).
	OnEvent func(*store.JobEvent)
}

// Broker fans the event feed out to subscribers.
type Broker struct {
	cfg  Config
	wake chan struct{}

	mu      sync.Mutex
	last    int64 // position delivered up to
	started bool
	stopped bool
	subs    map[*Subscription]struct{}
	// byJob indexes the subscriptions that follow given jobs (job and
	// watch streams), so that an event is offered to its job's streams
	// only, not matched against a thousand others; the rest (project
	// streams) are in wide.
	byJob map[string]map[*Subscription]struct{}
	wide  map[*Subscription]struct{}
	// closed holds the subscriptions closed as slow during a delivery,
	// removed once it is over (the maps are being ranged over then).
	closed []*Subscription
}

// New returns a broker; Start begins its delivery.
func New(cfg Config) *Broker {
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = 1024
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 500
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Broker{cfg: cfg, wake: make(chan struct{}, 1), subs: map[*Subscription]struct{}{},
		byJob: map[string]map[*Subscription]struct{}{}, wide: map[*Subscription]struct{}{}}
}

// Start reads the feed's current end and delivers what follows it until ctx
// ends; then every subscription is closed with ErrClosed.
func (b *Broker) Start(ctx context.Context) error {
	last, err := b.cfg.Feed.JobEventLastPosition(ctx)
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.last, b.started = last, true
	b.mu.Unlock()
	go b.run(ctx)
	return nil
}

// Wake makes the broker read the feed now. It never blocks.
func (b *Broker) Wake() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

func (b *Broker) run(ctx context.Context) {
	t := time.NewTicker(b.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			b.stop()
			return
		case <-b.wake:
		case <-t.C:
		}
		if err := b.poll(ctx); err != nil && ctx.Err() == nil {
			b.cfg.Log.Warn("read event feed", "err", err)
		}
	}
}

func (b *Broker) poll(ctx context.Context) error {
	for {
		b.mu.Lock()
		after := b.last
		b.mu.Unlock()
		evs, err := b.cfg.Feed.JobEventFeed(ctx, &store.JobEventFeedParams{After: after, Limit: b.cfg.Batch})
		if err != nil {
			return err
		}
		b.mu.Lock()
		for _, e := range evs {
			if b.cfg.OnEvent != nil {
				b.cfg.OnEvent(e)
			}
			for s := range b.byJob[e.JobID] {
				s.offer(e)
			}
			for s := range b.wide {
				if s.filter.match(e) {
					s.offer(e)
				}
			}
			b.last = e.Position
		}
		for _, s := range b.closed {
			b.remove(s)
		}
		b.closed = b.closed[:0]
		b.mu.Unlock()
		if len(evs) < b.cfg.Batch {
			return nil
		}
	}
}

func (b *Broker) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	for s := range b.subs {
		s.close(ErrClosed)
		b.remove(s)
	}
}

// add registers s. Called under b.mu.
func (b *Broker) add(s *Subscription) {
	b.subs[s] = struct{}{}
	if s.filter.JobIDs == nil {
		b.wide[s] = struct{}{}
		return
	}
	for id := range s.filter.JobIDs {
		if b.byJob[id] == nil {
			b.byJob[id] = map[*Subscription]struct{}{}
		}
		b.byJob[id][s] = struct{}{}
	}
}

// remove forgets s. Called under b.mu.
func (b *Broker) remove(s *Subscription) {
	delete(b.subs, s)
	delete(b.wide, s)
	for id := range s.filter.JobIDs {
		if m := b.byJob[id]; m != nil {
			delete(m, s)
			if len(m) == 0 {
				delete(b.byJob, id)
			}
		}
	}
}

// Filter selects the events a subscription receives: of the jobs in JobIDs
// when it is set, else of one account (AccountID) and, when ProjectID is
// set, one project; empty fields select everything.
type Filter struct {
	JobIDs    map[string]bool
	AccountID string
	ProjectID string
}

func (f *Filter) match(e *store.JobEvent) bool {
	if f.JobIDs != nil {
		return f.JobIDs[e.JobID]
	}
	return (f.AccountID == "" || f.AccountID == e.AccountID) && (f.ProjectID == "" || f.ProjectID == e.ProjectID)
}

// Subscription receives, on C and in position order, every event after
// From that its filter selects, until it is closed: by Close, by the broker
// stopping (ErrClosed) or by falling Buffer events behind (ErrSlow). Err
// says why once C is closed.
type Subscription struct {
	C      <-chan *store.JobEvent
	From   int64
	ch     chan *store.JobEvent
	filter Filter
	b      *Broker
	err    error // set under b.mu
}

// Subscribe opens a subscription; it fails when the broker is not running.
func (b *Broker) Subscribe(f Filter) (*Subscription, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.started || b.stopped {
		return nil, ErrClosed
	}
	ch := make(chan *store.JobEvent, b.cfg.Buffer)
	s := &Subscription{C: ch, From: b.last, ch: ch, filter: f, b: b}
	b.add(s)
	return s, nil
}

// offer queues e, or closes the subscription when its buffer is full.
// Called under b.mu.
func (s *Subscription) offer(e *store.JobEvent) {
	if s.err != nil {
		return
	}
	select {
	case s.ch <- e:
	default:
		s.close(ErrSlow)
		s.b.closed = append(s.b.closed, s)
	}
}

func (s *Subscription) close(err error) {
	if s.err == nil {
		s.err = err
		close(s.ch)
	}
}

// Err says why C was closed (nil while it is open).
func (s *Subscription) Err() error {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	return s.err
}

// Close ends the subscription.
func (s *Subscription) Close() {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	s.close(errors.New("event: subscription closed"))
	s.b.remove(s)
}

// Count is how many subscriptions are open.
func (b *Broker) Count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}
