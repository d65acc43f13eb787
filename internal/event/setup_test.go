package event_test

import (
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/event"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/job/submit"
	"github.com/skiffhq/skiff/internal/jobview"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/store/storetest"
)

// wait bounds how long a test waits for the broker to deliver.
const wait = 30 * time.Second

// fixture is a real SQLite store with a funded account and a published
// project, the job service that writes events into it and the read side
// the streams show them with.
type fixture struct {
	store   store.Store
	jobs    *job.Service
	views   *jobview.Service
	clock   *clock.Fake
	account string
	project *store.Project
}

func setup(t *testing.T) *fixture {
	t.Helper()
	db := storetest.OpenSQLite(t)
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	ctx := t.Context()
	a, err := db.AccountCreate(ctx, &store.AccountCreateParams{ID: id.New(id.Account), Name: "alice", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(now)
	if _, err := billing.New(db, clk, nil).GrantCredit(ctx, a.ID, 100_000_000, "test"); err != nil {
		t.Fatal(err)
	}
	p, err := db.ProjectCreate(ctx, &store.ProjectWriteParams{ID: id.New(id.Project), AccountID: a.ID, Name: "demo",
		SetupTimeoutS: 600, RuntimeKind: "oci", RuntimeVersion: 1, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	pu, err := db.PushCreate(ctx, &store.PushCreateParams{ID: id.New(id.Push), ProjectID: p.ID, AccountID: a.ID,
		ContentHash: "sha256:abc", SizeBytes: 1, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.PushStart(ctx, pu.ID, now); err != nil {
		t.Fatal(err)
	}
	if _, err := db.PushFinish(ctx, &store.PushFinishParams{ID: pu.ID, Status: store.PushPublished,
		ImageDigest: "sha256:d", Now: now}); err != nil {
		t.Fatal(err)
	}
	jobs := job.New(job.Config{Store: db, Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	views := jobview.New(jobview.Config{Store: db, Billing: jobs.Billing(), Clock: clk, Limits: jobs.Limits()})
	return &fixture{store: db, jobs: jobs, views: views, clock: clk, account: a.ID, project: p}
}

// submit admits a job of n tasks.
func (f *fixture) submit(t *testing.T, n int) *store.Job {
	t.Helper()
	raw := `{"project":"demo","runner_command":["/r"],"payload":{},"fan_out":{"items":[`
	for i := range n {
		if i > 0 {
			raw += ","
		}
		raw += "{}"
	}
	raw += "]}}"
	js, err := submit.Decode([]byte(raw))
	if err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	j, err := f.jobs.Submit(t.Context(), f.account, js)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// broker starts a broker over the fixture's store, stopped with the test.
func (f *fixture) broker(t *testing.T, cfg event.Config) *event.Broker {
	t.Helper()
	cfg.Feed = f.store
	b := event.New(cfg)
	if err := b.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return b
}

// frame is one frame a sink took.
type frame struct {
	name, id string
	value    any
}

// sink collects a stream's frames, in order.
type sink struct {
	mu     sync.Mutex
	frames []frame
	held   bool
	queued []frame
}

var _ event.Sink = (*sink)(nil)

func (s *sink) Frame(name, id string, v any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held {
		s.queued = append(s.queued, frame{name, id, v})
		return nil
	}
	s.frames = append(s.frames, frame{name, id, v})
	return nil
}

func (s *sink) Hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = true
}

func (s *sink) Release() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = false
	s.frames = append(s.frames, s.queued...)
	s.queued = nil
	return nil
}

// names are the names of the frames taken so far.
func (s *sink) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.frames))
	for i, f := range s.frames {
		out[i] = f.name
	}
	return out
}

func (s *sink) all() []frame {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]frame(nil), s.frames...)
}
