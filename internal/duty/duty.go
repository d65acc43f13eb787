// Package duty runs singleton duties: work that must run on exactly one
// controller at a time when several serve one database (the build queue,
// the sweeps). Each duty is a lease in the store; the controller that holds
// it runs the duty and renews the lease, and when it dies the lease expires
// and another controller takes the duty over. With no lease store (one
// process on SQLite) every duty simply runs here.
//
// The package knows nothing of what the duties do.
package duty

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/store"
)

// Leases is the part of the store the runner uses.
type Leases interface {
	LeaseAcquire(ctx context.Context, p *store.LeaseParams) (*store.Lease, error)
	LeaseRenew(ctx context.Context, p *store.LeaseParams) (*store.Lease, error)
	LeaseRelease(ctx context.Context, name, holder string) error
}

// Config configures a Runner.
type Config struct {
	// Leases is where duties are claimed; nil runs every duty here at once.
	Leases Leases
	// Holder names this controller; unique per process.
	Holder string
	Clock  clock.Clock
	// TTL is how long a lease lasts unrenewed: the longest a dead holder
	// keeps a duty from the others. Default 10 s.
	TTL time.Duration
	// Interval is how often a holder renews and a waiting controller tries
	// to take a duty (real time). Default TTL/5.
	Interval time.Duration
	// Margin is how long before its lease expires a holder that could not
	// renew stops the duty, so that it has stopped by the time another
	// controller may take over. Default Interval.
	Margin time.Duration
	Log    *slog.Logger
}

// Runner runs duties under leases.
type Runner struct {
	cfg Config

	mu   sync.Mutex
	held map[string]int64 // duty -> epoch, while held here
}

// New returns a Runner with defaults filled in.
func New(cfg Config) *Runner {
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.TTL <= 0 {
		cfg.TTL = 10 * time.Second
	}
	if cfg.Interval <= 0 {
		cfg.Interval = cfg.TTL / 5
	}
	if cfg.Margin <= 0 {
		cfg.Margin = cfg.Interval
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Runner{cfg: cfg, held: map[string]int64{}}
}

// Held lists the duties this controller holds now.
func (r *Runner) Held() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.held))
	for name := range r.held {
		out = append(out, name)
	}
	return out
}

// Run runs fn whenever this controller holds the duty name, until ctx ends.
// fn's context ends when the lease is lost (or ctx ends); Run waits for fn
// to return before it tries to take the duty again. When fn returns by
// itself the duty is released, and taken again (here or elsewhere) at the
// next try. Run releases the lease when ctx ends, so that another
// controller takes the duty over without waiting for the expiry.
func (r *Runner) Run(ctx context.Context, name string, fn func(ctx context.Context)) {
	if r.cfg.Leases == nil {
		r.setHeld(name, 1)
		fn(ctx)
		r.setHeld(name, 0)
		return
	}
	for ctx.Err() == nil {
		now := r.cfg.Clock.Now()
		l, err := r.cfg.Leases.LeaseAcquire(ctx, &store.LeaseParams{Name: name, Holder: r.cfg.Holder, Now: now, Until: now.Add(r.cfg.TTL)})
		switch {
		case err == nil:
			r.hold(ctx, name, l, fn)
		case errors.Is(err, store.ErrConflict) || ctx.Err() != nil:
		default:
			r.cfg.Log.Warn("duty: take lease", "duty", name, "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(r.cfg.Interval):
		}
	}
}

// hold runs fn under the lease l until the lease is lost, fn returns or ctx
// ends, renewing it every Interval.
func (r *Runner) hold(ctx context.Context, name string, l *store.Lease, fn func(ctx context.Context)) {
	log := r.cfg.Log.With("duty", name, "epoch", l.Epoch)
	log.Info("duty taken")
	r.setHeld(name, l.Epoch)
	defer r.setHeld(name, 0)
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(dctx)
	}()
	stop := func() { cancel(); <-done }
	expires := l.ExpiresAt
	tick := time.NewTicker(r.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			stop()
			r.release(name, log)
			return
		case <-done:
			r.release(name, log)
			return
		case <-tick.C:
		}
		now := r.cfg.Clock.Now()
		nl, err := r.cfg.Leases.LeaseRenew(ctx, &store.LeaseParams{Name: name, Holder: r.cfg.Holder, Now: now, Until: now.Add(r.cfg.TTL)})
		switch {
		case err == nil:
			expires = nl.ExpiresAt
		case errors.Is(err, store.ErrConflict):
			log.Warn("duty lost: the lease expired or changed hands")
			stop()
			return
		case ctx.Err() != nil:
		case !now.Before(expires.Add(-r.cfg.Margin)):
			// The store does not answer and the lease is about to run
			// out: stop before another controller may take the duty.
			log.Warn("duty given up: the lease could not be renewed before it expires", "err", err)
			stop()
			return
		default:
			log.Warn("duty: renew lease; trying again", "err", err, "expires", expires)
		}
	}
}

func (r *Runner) release(name string, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.cfg.Leases.LeaseRelease(ctx, name, r.cfg.Holder); err != nil {
		log.Warn("duty: release lease", "err", err)
		return
	}
	log.Info("duty released")
}

func (r *Runner) setHeld(name string, epoch int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if epoch == 0 {
		delete(r.held, name)
	} else {
		r.held[name] = epoch
	}
}
