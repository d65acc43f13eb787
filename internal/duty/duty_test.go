package duty_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/duty"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/store/postgres"
	"github.com/skiffhq/skiff/internal/store/postgres/pgtest"
)

// controllers opens n stores on one fresh PostgreSQL database, each with
// its own connection pool, as n controllers would.
func controllers(t *testing.T, n int) []store.Store {
	t.Helper()
	url := pgtest.NewDatabase(t)
	var out []store.Store
	for i := range n {
		db, err := postgres.Open(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if i == 0 {
			if _, err := db.Migrate(t.Context(), time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, db)
	}
	return out
}

// cuttable is a lease store whose connection can be cut, as when its
// controller is killed or partitioned: every call then fails.
type cuttable struct {
	duty.Leases
	cut   atomic.Bool
	tries atomic.Int64
}

var errCut = errors.New("connection cut")

func (c *cuttable) LeaseAcquire(ctx context.Context, p *store.LeaseParams) (*store.Lease, error) {
	c.tries.Add(1)
	if c.cut.Load() {
		return nil, errCut
	}
	return c.Leases.LeaseAcquire(ctx, p)
}

func (c *cuttable) LeaseRenew(ctx context.Context, p *store.LeaseParams) (*store.Lease, error) {
	if c.cut.Load() {
		return nil, errCut
	}
	return c.Leases.LeaseRenew(ctx, p)
}

func (c *cuttable) LeaseRelease(ctx context.Context, name, holder string) error {
	if c.cut.Load() {
		return errCut
	}
	return c.Leases.LeaseRelease(ctx, name, holder)
}

// gauge counts the duty's runs at once and remembers the most it saw.
type gauge struct {
	now, most atomic.Int64
	runs      atomic.Int64
}

func (g *gauge) enter() {
	g.runs.Add(1)
	n := g.now.Add(1)
	for {
		m := g.most.Load()
		if n <= m || g.most.CompareAndSwap(m, n) {
			return
		}
	}
}

func (g *gauge) leave() { g.now.Add(-1) }

// waitFor polls cond; the test's deadline bounds it.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-t.Context().Done():
			t.Fatalf("gave up waiting for %s", what)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// TestTakeOverWhenHolderDies: controller A holds the duty; B keeps trying
// and does not run it. A's store connection is cut (A is killed or
// partitioned): A stops the duty before its lease runs out, and B takes it
// over once the lease has expired, never both at once.
func TestTakeOverWhenHolderDies(t *testing.T) {
	t.Parallel()
	dbs := controllers(t, 2)
	clk := clock.NewFake(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	log := slog.New(slog.DiscardHandler)
	leasesA := &cuttable{Leases: dbs[0]}
	leasesB := &cuttable{Leases: dbs[1]}
	const ttl = 10 * time.Second
	cfg := func(l duty.Leases, holder string) duty.Config {
		return duty.Config{Leases: l, Holder: holder, Clock: clk, TTL: ttl, Interval: 5 * time.Millisecond,
			Margin: time.Second, Log: log.With("holder", holder)}
	}
	var g gauge
	var who sync.Map
	work := func(holder string) func(ctx context.Context) {
		return func(ctx context.Context) {
			g.enter()
			defer g.leave()
			who.Store(holder, true)
			<-ctx.Done()
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	a := duty.New(cfg(leasesA, "ctl-a"))
	wg.Add(2)
	go func() { defer wg.Done(); a.Run(ctx, "builds", work("ctl-a")) }()
	waitFor(t, "A to take the duty", func() bool { _, ok := who.Load("ctl-a"); return ok })
	b := duty.New(cfg(leasesB, "ctl-b"))
	go func() { defer wg.Done(); b.Run(ctx, "builds", work("ctl-b")) }()
	waitFor(t, "B to try a few times", func() bool { return leasesB.tries.Load() >= 5 })
	if _, ok := who.Load("ctl-b"); ok || len(b.Held()) != 0 {
		t.Fatal("B ran the duty while A held it")
	}

	leasesA.cut.Store(true)
	// Within the margin before expiry A gives the duty up; B may not take
	// it yet.
	clk.Advance(ttl - time.Second/2)
	waitFor(t, "A to give the duty up", func() bool { return g.now.Load() == 0 && len(a.Held()) == 0 })
	tries := leasesB.tries.Load()
	waitFor(t, "B to try again", func() bool { return leasesB.tries.Load() >= tries+3 })
	if _, ok := who.Load("ctl-b"); ok {
		t.Fatal("B took the duty before A's lease expired")
	}
	clk.Advance(time.Second)
	waitFor(t, "B to take the duty over", func() bool { _, ok := who.Load("ctl-b"); return ok })
	leases, err := dbs[1].LeaseList(t.Context(), "builds")
	if err != nil || len(leases) != 1 || leases[0].Holder != "ctl-b" || leases[0].Epoch != 2 {
		t.Fatalf("leases after the take-over: %+v, %v; want ctl-b's, epoch 2", leases, err)
	}
	cancel()
	wg.Wait()
	if g.most.Load() != 1 {
		t.Errorf("the duty ran %d times at once, want 1", g.most.Load())
	}
}

// TestReleasedOnShutdown: a controller that stops releases its duties, and
// another takes them over at its next try, without waiting for the expiry
// (the clock does not move).
func TestReleasedOnShutdown(t *testing.T) {
	t.Parallel()
	dbs := controllers(t, 2)
	clk := clock.NewFake(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	cfg := func(l duty.Leases, holder string) duty.Config {
		return duty.Config{Leases: l, Holder: holder, Clock: clk, TTL: time.Hour, Interval: 5 * time.Millisecond,
			Log: slog.New(slog.DiscardHandler)}
	}
	var g gauge
	started := make(chan string, 2)
	work := func(holder string) func(ctx context.Context) {
		return func(ctx context.Context) {
			g.enter()
			defer g.leave()
			started <- holder
			<-ctx.Done()
		}
	}
	ctxA, stopA := context.WithCancel(t.Context())
	ctxB, stopB := context.WithCancel(t.Context())
	defer stopB()
	doneA := make(chan struct{})
	go func() { defer close(doneA); duty.New(cfg(dbs[0], "ctl-a")).Run(ctxA, "sweeps", work("ctl-a")) }()
	if h := <-started; h != "ctl-a" {
		t.Fatalf("first holder %s", h)
	}
	doneB := make(chan struct{})
	go func() { defer close(doneB); duty.New(cfg(dbs[1], "ctl-b")).Run(ctxB, "sweeps", work("ctl-b")) }()
	stopA()
	<-doneA
	if h := <-started; h != "ctl-b" {
		t.Fatalf("second holder %s", h)
	}
	stopB()
	<-doneB
	if g.most.Load() != 1 {
		t.Errorf("the duty ran %d times at once, want 1", g.most.Load())
	}
}

// TestOneHolderAmongMany: four controllers contend for one duty on the real
// clock; each run gives the duty back after a moment, so it changes hands
// many times. It never runs twice at once.
func TestOneHolderAmongMany(t *testing.T) {
	t.Parallel()
	dbs := controllers(t, 4)
	var g gauge
	var holders sync.Map
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for i, db := range dbs {
		holder := string(rune('a'+i)) + "-ctl"
		r := duty.New(duty.Config{Leases: db, Holder: holder, TTL: 5 * time.Second, Interval: time.Millisecond,
			Log: slog.New(slog.DiscardHandler)})
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.Run(ctx, "retention", func(ctx context.Context) {
				g.enter()
				defer g.leave()
				holders.Store(holder, true)
				select {
				case <-ctx.Done():
				case <-time.After(3 * time.Millisecond):
				}
			})
		}()
	}
	waitFor(t, "40 runs", func() bool { return g.runs.Load() >= 40 })
	cancel()
	wg.Wait()
	if g.most.Load() != 1 {
		t.Errorf("the duty ran %d times at once, want 1", g.most.Load())
	}
	n := 0
	holders.Range(func(any, any) bool { n++; return true })
	if n < 2 {
		t.Errorf("%d controllers ran the duty, want it to change hands", n)
	}
}

// TestWithoutLeasesRunsHere: one process (SQLite) runs every duty at once.
func TestWithoutLeasesRunsHere(t *testing.T) {
	t.Parallel()
	r := duty.New(duty.Config{Holder: "only"})
	ran := false
	r.Run(t.Context(), "builds", func(context.Context) { ran = true })
	if !ran {
		t.Fatal("the duty did not run")
	}
}
