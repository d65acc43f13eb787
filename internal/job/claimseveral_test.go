package job_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/store"
)

// fanOut submits a job of n trivial tasks.
func fanOut(t *testing.T, b *bundle, n int) *store.Job {
	t.Helper()
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`{"i":%d}`, i)
	}
	j, err := b.svc.Submit(t.Context(), b.account, decode(t,
		`{"project":"demo","runner_command":["/r"],"payload":{},"fan_out":{"items":[`+strings.Join(items, ",")+`]}}`))
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// upTo asks ClaimSeveral for at most n tasks for host.
func upTo(host string, n int) func([]job.Claimed) *store.TaskClaimParams {
	return func(prev []job.Claimed) *store.TaskClaimParams {
		if len(prev) >= n {
			return nil
		}
		return &store.TaskClaimParams{HostID: host, AttemptID: id.New(id.Attempt), FreeCPU: 64, FreeMemoryMB: 1 << 20, Now: time.Now()}
	}
}

func countEvents(t *testing.T, b *bundle, j *store.Job, kind string) int {
	t.Helper()
	evPage, err := b.views.Events(t.Context(), j, store.JobEventPageParams{Limit: 10_000})
	evs := evPage.Events
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// A host with three free slots gets three different tasks from one claim,
// the job moves to running once, and a claim of an empty queue takes
// nothing without failing.
func TestClaimSeveralFillsFreeSlotsOnce(t *testing.T) {
	onEngines(t, func(t *testing.T, b *bundle) {
		j := fanOut(t, b, 5)
		first, err := b.svc.ClaimSeveral(t.Context(), upTo("wkr_a", 3))
		if err != nil || len(first) != 3 {
			t.Fatalf("first claim: %d tasks, %v; want 3", len(first), err)
		}
		second, err := b.svc.ClaimSeveral(t.Context(), upTo("wkr_a", 3))
		if err != nil || len(second) != 2 {
			t.Fatalf("second claim: %d tasks, %v; want the 2 left", len(second), err)
		}
		seen := map[string]bool{}
		for _, c := range append(first, second...) {
			if seen[c.Task.ID] || c.Attempt.TaskID != c.Task.ID || c.Attempt.Number != 1 || c.Attempt.HostID != "wkr_a" {
				t.Errorf("claimed task %s (attempt %s of task %s, number %d): a task twice or a wrong attempt",
					c.Task.ID, c.Attempt.ID, c.Attempt.TaskID, c.Attempt.Number)
			}
			seen[c.Task.ID] = true
		}
		none, err := b.svc.ClaimSeveral(t.Context(), upTo("wkr_a", 3))
		if err != nil || len(none) != 0 {
			t.Errorf("claim of an empty queue: %d tasks, %v; want none, no error", len(none), err)
		}
		if _, _, err := b.svc.Claim(t.Context(), upTo("wkr_a", 1)(nil)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("single claim of an empty queue: %v, want not found", err)
		}
		got, err := b.store.JobGetByID(t.Context(), j.ID)
		if err != nil || got.Status != store.JobRunning {
			t.Fatalf("job %v, %v; want running", got.Status, err)
		}
		if n := countEvents(t, b, j, "job.running"); n != 1 {
			t.Errorf("%d job.running events, want 1", n)
		}
		if n := countEvents(t, b, j, "attempt.assigned"); n != 5 {
			t.Errorf("%d attempt.assigned events, want 5", n)
		}
	})
}

// Hosts claiming at once, and reporting every start and end concurrently
// and twice (delivery is at least once), run each task exactly once; the
// job ends once, completed, and is billed exactly the sum of its
// attempts.
func TestConcurrentClaimsAndReportsRunEachTaskOnce(t *testing.T) {
	onEngines(t, func(t *testing.T, b *bundle) {
		const n = 60
		if _, err := b.svc.Billing().GrantCredit(t.Context(), b.account, 100_000_000, "test"); err != nil {
			t.Fatal(err)
		}
		j := fanOut(t, b, n)
		start := time.Now()
		outcome := &job.Outcome{ExitCode: 0, StartedAt: start, EndedAt: start.Add(2 * time.Second), Result: json.RawMessage(`{"ok":true}`)}
		var mu sync.Mutex
		var failures []error
		fail := func(err error) {
			mu.Lock()
			failures = append(failures, err)
			mu.Unlock()
		}
		// report sends one attempt's start and end twice each, at once.
		report := func(a *store.Attempt) {
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(func() {
					if err := b.svc.AttemptStarted(t.Context(), a, time.Now()); err != nil && !errors.Is(err, store.ErrConflict) {
						fail(fmt.Errorf("start %s: %w", a.ID, err))
					}
				})
			}
			wg.Wait()
			for range 2 {
				wg.Go(func() {
					if err := b.svc.AttemptFinished(t.Context(), a, outcome, nil, ""); err != nil && !errors.Is(err, store.ErrConflict) {
						fail(fmt.Errorf("finish %s: %w", a.ID, err))
					}
				})
			}
			wg.Wait()
		}
		var hosts sync.WaitGroup
		for h := range 3 {
			hosts.Go(func() {
				for {
					claimed, err := b.svc.ClaimSeveral(t.Context(), upTo(fmt.Sprintf("wkr_%d", h), 4))
					if err != nil {
						fail(fmt.Errorf("claim: %w", err))
						return
					}
					if len(claimed) == 0 {
						return
					}
					var slots sync.WaitGroup
					for _, c := range claimed {
						slots.Go(func() { report(c.Attempt) })
					}
					slots.Wait()
				}
			})
		}
		hosts.Wait()
		if err := errors.Join(failures...); err != nil {
			t.Fatal(err)
		}
		got, err := b.store.JobGetByID(t.Context(), j.ID)
		if err != nil || got.Status != store.JobCompleted {
			t.Fatalf("job %v, %v; want completed", got.Status, err)
		}
		tasks, err := b.store.TaskList(t.Context(), j.ID)
		if err != nil {
			t.Fatal(err)
		}
		atts, err := b.store.AttemptList(t.Context(), j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(atts) != n {
			t.Errorf("%d attempts for %d tasks, want one each", len(atts), n)
		}
		var billed int64
		for _, a := range atts {
			if a.Status != store.AttemptSucceeded || a.CostMicros <= 0 {
				t.Errorf("attempt %s: %s, cost %d; want succeeded and billed", a.ID, a.Status, a.CostMicros)
			}
			billed += a.CostMicros
		}
		for _, tk := range tasks {
			if tk.Status != store.TaskSucceeded || tk.Attempts != 1 {
				t.Errorf("task %d: %s after %d attempts, want succeeded after 1", tk.Index, tk.Status, tk.Attempts)
			}
		}
		for kind, want := range map[string]int{"job.completed": 1, "job.running": 1, "attempt.started": n, "attempt.succeeded": n} {
			if got := countEvents(t, b, j, kind); got != want {
				t.Errorf("%d %s events, want %d", got, kind, want)
			}
		}
		h, err := b.store.HoldGetByJob(t.Context(), j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if h.CapturedMicros != billed || h.Status == store.HoldActive {
			t.Errorf("hold %s captured %d, want captured at the attempts' %d", h.Status, h.CapturedMicros, billed)
		}
	})
}
