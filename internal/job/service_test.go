package job_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/job/submit"
	"github.com/skiffhq/skiff/internal/jobview"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/store/sqlite"
	"github.com/skiffhq/skiff/internal/store/storetest"
	"github.com/skiffhq/skiff/internal/testenv"
)

type bundle struct {
	svc     *job.Service
	views   *jobview.Service // the read side over the same store
	store   store.Store
	clock   *clock.Fake // the service's clock; tests read balances and quotes at its time
	account string
	project *store.Project
}

// setup gives a fresh store with one account and one project; published
// says whether the project has a published revision.
func setup(t testing.TB, published bool) *bundle {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "skiff.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(t.Context(), time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	return setupOn(t, db, published)
}

// setupOn is setup over a migrated store.
// onEngines runs fn on each store engine with a funded account and a
// published project (setupOn), skipping PostgreSQL when none is set.
func onEngines(t *testing.T, fn func(t *testing.T, b *bundle)) {
	for _, eng := range storetest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			if eng.Skip != "" {
				testenv.Skip(t, eng.Skip)
			}
			fn(t, setupOn(t, eng.Open(t), true))
		})
	}
}

func setupOn(t testing.TB, db store.Store, published bool) *bundle {
	t.Helper()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	ctx := t.Context()
	a, err := db.AccountCreate(ctx, &store.AccountCreateParams{ID: id.New(id.Account), Name: "alice", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(now)
	if _, err := billing.New(db, clk, nil).GrantCredit(ctx, a.ID, 50_000_000, "test"); err != nil {
		t.Fatal(err)
	}
	p, err := db.ProjectCreate(ctx, &store.ProjectWriteParams{ID: id.New(id.Project), AccountID: a.ID, Name: "demo",
		SetupTimeoutS: 600, RuntimeKind: "oci", RuntimeVersion: 1, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if published {
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
	}
	svc := job.New(job.Config{Store: db, Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	views := jobview.New(jobview.Config{Store: db, Billing: svc.Billing(), Clock: clk, Limits: svc.Limits()})
	return &bundle{svc: svc, views: views, store: db, clock: clk, account: a.ID, project: p}
}

func decode(t testing.TB, body string) *apiv1.JobSubmit {
	t.Helper()
	js, err := submit.Decode([]byte(body))
	if err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return js
}

func TestSubmitStoresJobTasksAndEventTogether(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	j, err := b.svc.Submit(t.Context(), b.account, decode(t,
		`{"project":"demo","runner_command":["/runner"],"payload":{"xs":[1,2,3]},"fan_out":{"by":"xs"},"tags":["a"],"priority":"high"}`))
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != store.JobQueued || j.TaskCount != 3 || j.Priority != store.PriorityHigh {
		t.Errorf("job = status %s, %d tasks, priority %d; want queued, 3, high", j.Status, j.TaskCount, j.Priority)
	}
	tasks, attempts, err := b.views.Tasks(t.Context(), j)
	if err != nil || len(tasks) != 3 || len(attempts) != 0 {
		t.Fatalf("tasks = %d, attempts = %d, %v; want 3, 0", len(tasks), len(attempts), err)
	}
	var p map[string]any
	if err := json.Unmarshal(tasks[1].Payload, &p); err != nil {
		t.Fatal(err)
	}
	if xs, _ := p["xs"].([]any); len(xs) != 1 || xs[0] != 2.0 {
		t.Errorf("task 1 payload xs = %v, want [2]", p["xs"])
	}
	evPage, err := b.views.Events(t.Context(), j, store.JobEventPageParams{Limit: 10})
	evs := evPage.Events
	if err != nil || len(evs) != 1 || evs[0].Kind != "job.submitted" {
		t.Errorf("events = %v, %v; want one job.submitted", evs, err)
	}
}

func TestSubmitRefusals(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		published bool
		body      string
		code      string
	}{
		"unpublished project": {false, `{"project":"demo","runner_command":["/r"]}`, "project_not_published"},
		"unknown project":     {true, `{"project":"nope","runner_command":["/r"]}`, "unknown_project"},
		"unknown dependency":  {true, `{"project":"demo","runner_command":["/r"],"depends_on":["job_zzz"]}`, "unknown_dependency"},
		"callback url":        {true, `{"project":"demo","runner_command":["/r"],"callback_url":"http://x"}`, "callback_url_unsupported"},
		"max_retries":         {true, `{"project":"demo","runner_command":["/r"],"max_retries":11}`, "invalid_job"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tc.published)
			_, err := b.svc.Submit(t.Context(), b.account, decode(t, tc.body))
			fe, ok := fault.As(err)
			if !ok || fe.Kind != fault.KindInvalid || fe.Code != tc.code {
				t.Fatalf("got %v, want an invalid fault with code %s", err, tc.code)
			}
			if fe.Action == "" {
				t.Error("no recommended action")
			}
			jobs, total, err := b.views.List(t.Context(), &store.JobListParams{AccountID: b.account})
			if err != nil || total != 0 || len(jobs) != 0 {
				t.Errorf("a refused submission stored %d jobs (%v)", total, err)
			}
		})
	}
}

func TestDependentJobWaitsInPlanning(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	first, err := b.svc.Submit(t.Context(), b.account, decode(t, `{"project":"demo","runner_command":["/r"]}`))
	if err != nil {
		t.Fatal(err)
	}
	dep, err := b.svc.Submit(t.Context(), b.account, decode(t, `{"project":"demo","runner_command":["/r"],"depends_on":["`+first.ID+`"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if dep.Status != store.JobPlanning {
		t.Errorf("dependent job status = %s, want planning", dep.Status)
	}
	n, err := b.svc.ProjectActiveJobCount(t.Context(), b.project.ID)
	if err != nil || n != 2 {
		t.Errorf("active jobs = %d, %v; want 2", n, err)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	j, err := b.svc.Submit(t.Context(), b.account, decode(t, `{"project":"demo","runner_command":["/r"],"fan_out":{"items":[{},{}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, running, err := b.svc.Cancel(t.Context(), b.account, j.ID, "no longer needed")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.JobCancelled || len(running) != 0 {
		t.Errorf("cancelled job = %s with %d running attempts; want cancelled, 0", got.Status, len(running))
	}
	tasks, _, _ := b.views.Tasks(t.Context(), got)
	for _, tk := range tasks {
		if tk.Status != store.TaskCancelled {
			t.Errorf("task %d status = %s, want cancelled", tk.Index, tk.Status)
		}
	}
	_, _, err = b.svc.Cancel(t.Context(), b.account, j.ID, "again")
	if !fault.Is(err, fault.KindConflict) {
		t.Errorf("second cancel: got %v, want a conflict", err)
	}
	_, _, err = b.svc.Cancel(t.Context(), "acct_other", j.ID, "")
	if !fault.Is(err, fault.KindNotFound) {
		t.Errorf("another account's cancel: got %v, want not found", err)
	}
}
