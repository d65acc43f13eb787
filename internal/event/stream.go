package event

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strconv"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/jobview"
	"github.com/skiffhq/skiff/internal/store"
)

// The three streams of spec 6 (docs/streams.md). Each one subscribes to the
// broker first, then sends its snapshot (or, after a reconnect, the events
// the client missed, read from the store), then on every wake-up sends the
// frames of the events committed after the last one it sent: the store's
// event feed is the only source, the broker only says when to read it.
//
// This file is the engine (subscribe, resume, follow, ping, time out);
// frames.go builds each stream's frames. Writing them to a client is the
// adapter's (Sink): this package knows nothing of HTTP.

// feedBatch is how many events one read of the feed, or one emit, takes.
const feedBatch = 500

// StreamsConfig configures the streams.
type StreamsConfig struct {
	// Broker wakes streams when events commit; nil makes every Open fail
	// as unavailable.
	Broker *Broker
	// Store reads jobs and the event feed.
	Store store.Store
	// Views shows the jobs and tasks in the frames.
	Views *jobview.Service
	Clock clock.Clock
	// Timeout is a stream's life; it then sends a timeout frame and ends.
	// Default 1 hour.
	Timeout time.Duration
	// PingInterval is how often an idle stream sends a ping frame. Default
	// 15 s.
	PingInterval time.Duration
	// ReplayLimit is the most events a resume replays: a client that
	// missed more gets a fresh snapshot (resync gap_too_large). Default
	// 10,000.
	ReplayLimit int
	// Work bounds how many streams build frames at once (see Stream.turn).
	// Default half the CPUs, at least one.
	Work int
}

// Streams runs the live streams over one broker.
type Streams struct {
	cfg StreamsConfig
	// work bounds how many streams build and write frames at once (see
	// Stream.turn): a burst of frames never takes every core from the
	// requests beside it.
	work chan struct{}
}

// NewStreams returns the streams, with cfg's defaults filled in.
func NewStreams(cfg StreamsConfig) *Streams {
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Hour
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = 15 * time.Second
	}
	if cfg.ReplayLimit <= 0 {
		cfg.ReplayLimit = 10000
	}
	if cfg.Work <= 0 {
		cfg.Work = max(1, runtime.GOMAXPROCS(0)/2)
	}
	return &Streams{cfg: cfg, work: make(chan struct{}, cfg.Work)}
}

// Sink is where one stream's frames go: the adapter's writer (an SSE
// response). Frame writes one frame named name (id omitted when empty);
// between Hold and Release frames collect in memory and Release writes
// them at once.
type Sink interface {
	Frame(name, id string, v any) error
	Hold()
	Release() error
}

// Spec is what one kind of stream brings to the engine: which events it
// follows, and how it shows them (frames.go builds the three).
type Spec struct {
	Filter Filter
	Feed   store.JobEventFeedParams
	// Ended reports whether there is nothing more to show (every job
	// ended): a client that resumes with nothing missed then gets no
	// stream at all (Stream.Ended). Nil: never.
	Ended func() bool
	// Emit sends the frames of a batch of events and says whether the
	// stream is done (it sent the done frame).
	Emit func(sink Sink, evs []*store.JobEvent) (bool, error)
	// Snapshot sends the snapshot frame of a fresh stream at position pos
	// (resync says why a resume was refused) and says whether the stream
	// is done.
	Snapshot func(sink Sink, pos int64, resync *string) (bool, error)
	// Resumed, when set, runs after a resumed stream sent what its client
	// missed, and says whether the stream is done.
	Resumed func(sink Sink) (bool, error)
}

// LastEventID is where a client asks to resume: Asked when it sent a
// Last-Event-ID, Valid when that was a position (a non-negative integer).
type LastEventID struct {
	Pos          int64
	Asked, Valid bool
}

// PosID is the frame id of a position, what a client sends back as its
// Last-Event-ID.
func PosID(p int64) string { return strconv.FormatInt(p, 10) }

// Stream is one open stream: subscribed, with where it starts decided.
type Stream struct {
	s      *Streams
	spec   *Spec
	sub    *Subscription
	missed []*store.JobEvent
	cursor int64
	resume bool
	resync *string
}

// Available fails, as unavailable, when no broker runs streams here.
func (s *Streams) Available() error {
	if s.cfg.Broker == nil {
		return fault.New(fault.KindUnavailable, "streams_unavailable", "Poll the job instead.",
			"event streams are not running on this server")
	}
	return nil
}

// Open subscribes to the broker (before anything is read, so that nothing
// committed meanwhile is missed) and finds where the stream starts (see
// resumePoint). Close it when done.
func (s *Streams) Open(ctx context.Context, spec *Spec, from LastEventID) (*Stream, error) {
	if err := s.Available(); err != nil {
		return nil, err
	}
	sub, err := s.cfg.Broker.Subscribe(spec.Filter)
	if err != nil {
		return nil, fault.New(fault.KindUnavailable, "streams_unavailable", "Retry in a few seconds.",
			"event streams are not running: %v", err)
	}
	st := &Stream{s: s, spec: spec, sub: sub}
	if err := st.resumePoint(ctx, from); err != nil {
		sub.Close()
		return nil, err
	}
	return st, nil
}

// Close ends the stream's subscription.
func (st *Stream) Close() { st.sub.Close() }

// Ended reports whether a resumed stream has nothing to send and never
// will: its client missed nothing and every job it follows ended. The
// adapter answers without a stream (HTTP 204, which tells EventSource to
// stop reconnecting).
func (st *Stream) Ended() bool {
	return st.resume && len(st.missed) == 0 && st.spec.Ended != nil && st.spec.Ended()
}

// resumePoint decides where a stream starts: after the client's
// Last-Event-ID when it sent a usable one and missed no more than the
// replay limit (the missed events are kept), or at a fresh snapshot
// (resume false, with the reason when the client asked to resume).
//
// It runs after the subscription opened: the newest position, read now, is
// where a snapshot read next stands (it shows every event up to it), and
// the subscription wakes the stream for every event after it.
func (st *Stream) resumePoint(ctx context.Context, from LastEventID) error {
	last, err := st.s.cfg.Views.LastEventPosition(ctx)
	if err != nil {
		return err
	}
	st.cursor = last
	if !from.Asked {
		return nil
	}
	if !from.Valid || from.Pos > last {
		// Not a position this store handed out.
		why := apiv1.ResyncInvalidLastEvent
		st.resync = &why
		return nil
	}
	feed := st.spec.Feed
	feed.After, feed.Limit = from.Pos, st.s.cfg.ReplayLimit+1
	missed, err := st.s.eventsAfter(ctx, &feed)
	if err != nil {
		return err
	}
	if len(missed) > st.s.cfg.ReplayLimit {
		why := apiv1.ResyncGapTooLarge
		st.resync = &why
		return nil
	}
	st.missed, st.cursor, st.resume = missed, from.Pos, true
	return nil
}

// Run sends what the client missed (or a snapshot), then follows the
// events until the stream is done, times out, or ctx ends (the client
// left). log is the caller's (with its request's attributes).
func (st *Stream) Run(ctx context.Context, sink Sink, log *slog.Logger) error {
	emit := func(evs []*store.JobEvent) (bool, error) { return st.spec.Emit(sink, evs) }
	if st.resume {
		if len(st.missed) > 0 {
			if done, err := emit(st.missed); done || err != nil {
				return err
			}
			st.cursor = st.missed[len(st.missed)-1].Position
		}
		if st.spec.Resumed != nil {
			if done, err := st.spec.Resumed(sink); done || err != nil {
				return err
			}
		}
	} else if done, err := st.spec.Snapshot(sink, st.cursor, st.resync); done || err != nil {
		return err
	}
	return st.follow(ctx, sink, emit, log)
}

// follow sends the frames of the events after the cursor as the
// subscription delivers them (emit turns a batch into frames and says when
// the stream is done), pings while idle, and ends the stream with a
// timeout frame when its life is over. A subscription closed under it (the
// client read too slowly, or the server stops) ends the stream; the client
// resumes with Last-Event-ID.
//
// The subscription is the broker's read of the store's feed, in position
// order, of every event after its start that the filter selects; it opened
// before the stream's snapshot or missed events were read, so together
// they leave no gap, and what it repeats (at or before the cursor) is
// skipped. No stream reads the store for its deltas: with a thousand
// streams, one read of the feed serves them all.
func (st *Stream) follow(ctx context.Context, sink Sink, emit func([]*store.JobEvent) (bool, error), log *slog.Logger) error {
	cfg := &st.s.cfg
	life := time.NewTimer(cfg.Timeout)
	defer life.Stop()
	ping := time.NewTicker(cfg.PingInterval)
	defer ping.Stop()
	var batch []*store.JobEvent
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-life.C:
			return st.closing(sink, apiv1.TimeoutStreamLife)
		case <-ping.C:
			if err := sink.Frame(apiv1.FramePing, "", map[string]any{"time": cfg.Clock.Now()}); err != nil {
				return nil
			}
		case e, ok := <-st.sub.C:
			if !ok {
				// The broker gave up on this stream: its client fell
				// behind, or the server stops. Either way the client is
				// told where to resume before the connection closes.
				reason := apiv1.TimeoutServerShutdown
				if errors.Is(st.sub.Err(), ErrSlow) {
					reason = apiv1.TimeoutSlowReader
					log.InfoContext(ctx, "stream closed: client fell behind")
				}
				return st.closing(sink, reason)
			}
			batch = takeQueued(st.sub.C, append(batch[:0], e), feedBatch)
			fresh := batch[:0]
			for _, e := range batch {
				if e.Position > st.cursor {
					fresh = append(fresh, e)
				}
			}
			if len(fresh) == 0 {
				continue
			}
			done, err := st.s.turn(ctx, sink, func() (bool, error) { return emit(fresh) })
			if err != nil || done {
				return err
			}
			st.cursor = fresh[len(fresh)-1].Position
		}
	}
}

// turn runs fn, which makes one batch of a stream's frames, when the
// streams' work has room: the frames of a thousand streams woken at once
// are built a few at a time, leaving the other cores to the requests
// beside them (with 1,000 streams on 2 cores, submissions were 13 to 25 %
// slower without it; BenchmarkWatchStreams). The frames are collected
// while fn runs and written after the turn is given back, so that a client
// slow to read holds up only its own stream.
func (s *Streams) turn(ctx context.Context, sink Sink, fn func() (bool, error)) (bool, error) {
	select {
	case s.work <- struct{}{}:
	case <-ctx.Done():
		return true, nil
	}
	sink.Hold()
	done, err := func() (bool, error) {
		defer func() { <-s.work }() // given back even if fn panics
		return fn()
	}()
	if werr := sink.Release(); werr != nil && err == nil {
		return true, werr
	}
	return done, err
}

// closing ends a stream with a timeout frame saying why and where its
// client resumes. A client that stopped reading may never take it: the
// sink's write gives up after its own timeout.
func (st *Stream) closing(sink Sink, reason string) error {
	at := PosID(st.cursor)
	action := "Reconnect with Last-Event-ID " + at + " to go on where this stream ended."
	switch reason {
	case apiv1.TimeoutSlowReader:
		action = "Read the stream as it arrives, then reconnect with Last-Event-ID " + at + "; nothing is lost."
	case apiv1.TimeoutServerShutdown:
		action = "The server is restarting: reconnect with Last-Event-ID " + at + " in a few seconds; nothing is lost."
	}
	return sink.Frame(apiv1.FrameTimeout, "", apiv1.TimeoutFrame{Reason: reason,
		StreamTimeoutS: st.s.cfg.Timeout.Seconds(), LastEventID: at, RecommendedAction: action})
}

// takeQueued appends to batch, without blocking, the events already
// queued on c, up to max in all: one emit for what arrived together.
func takeQueued(c <-chan *store.JobEvent, batch []*store.JobEvent, max int) []*store.JobEvent {
	for len(batch) < max {
		select {
		case e, ok := <-c:
			if !ok {
				return batch
			}
			batch = append(batch, e)
		default:
			return batch
		}
	}
	return batch
}

// eventsAfter lists committed events after a position.
func (s *Streams) eventsAfter(ctx context.Context, p *store.JobEventFeedParams) ([]*store.JobEvent, error) {
	return s.cfg.Views.EventsAfter(ctx, p)
}
