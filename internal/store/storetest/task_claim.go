package storetest

// TaskClaim: dispatch order, fit, concurrency and its race with cancels.

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

func testTaskClaimOrder(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	_, _, err := s.TaskClaim(ctx(t), &store.TaskClaimParams{HostID: "wkr_a", AttemptID: id.New(id.Attempt), Now: t0})
	wantErr(t, err, store.ErrNotFound)

	mk := func(n, prio int, at time.Duration, status store.JobStatus) *store.JobCreateParams {
		p := tf.JobParams(t, s, &tf.JobOpts{Project: f, Tasks: n, SubmittedAt: t0.Add(at)})
		p.Job.Priority, p.Job.Status = prio, status
		tf.JobFrom(t, s, p)
		return p
	}
	low := mk(1, store.PriorityLow, 0, store.JobQueued)
	normalOld := mk(2, store.PriorityNormal, time.Second, store.JobQueued)
	normalNew := mk(1, store.PriorityNormal, 2*time.Second, store.JobQueued)
	high := mk(2, store.PriorityHigh, 3*time.Second, store.JobQueued)
	planning := mk(1, store.PriorityHigh, 0, store.JobPlanning) // not dispatched yet
	cancelled := mk(1, store.PriorityHigh, 0, store.JobQueued)  // terminal job, task left queued
	mustSetStatus(t, s, cancelled.Job.ID, store.JobCancelled, t0)
	running := mk(1, store.PriorityNormal, 5*time.Second, store.JobQueued)
	mustSetStatus(t, s, running.Job.ID, store.JobRunning, t0) // a running job's tasks still dispatch

	want := []string{high.Tasks[0].ID, high.Tasks[1].ID, normalOld.Tasks[0].ID, normalOld.Tasks[1].ID,
		normalNew.Tasks[0].ID, running.Tasks[0].ID, low.Tasks[0].ID}
	now := t0.Add(time.Minute)
	for i, wantID := range want {
		attID := id.New(id.Attempt)
		host := fmt.Sprintf("wkr_%d", i)
		task, att, err := s.TaskClaim(ctx(t), &store.TaskClaimParams{HostID: host, AttemptID: attID,
			ResourceProfile: json.RawMessage(`{"cpu_count":4}`), Now: now})
		if err != nil {
			t.Fatalf("claim %d: %v", i, err)
		}
		if task.ID != wantID {
			t.Fatalf("claim %d got task %s (job %s, index %d), want %s", i, task.ID, task.JobID, task.Index, wantID)
		}
		if task.Status != store.TaskRunning || task.Attempts != 1 || task.LastHostID != host || !task.StartedAt.Equal(now) ||
			!task.UpdatedAt.Equal(now) {
			t.Errorf("claimed task = %+v", task)
		}
		if att.ID != attID || att.TaskID != task.ID || att.JobID != task.JobID || att.Number != 1 ||
			att.Status != store.AttemptAssigned || att.HostID != host || string(att.ResourceProfile) != `{"cpu_count":4}` ||
			!att.AssignedAt.Equal(now) || att.StartedAt != nil || att.EndedAt != nil || att.ExitCode != nil {
			t.Errorf("attempt = %+v", att)
		}
	}
	_, _, err = s.TaskClaim(ctx(t), &store.TaskClaimParams{HostID: "wkr_a", AttemptID: id.New(id.Attempt), Now: now})
	wantErr(t, err, store.ErrNotFound)
	if task := mustTask(t, s, cancelled.Tasks[0].ID); task.Status != store.TaskQueued {
		t.Errorf("task of a cancelled job was touched: %+v", task)
	}

	// Once planning is over, the job's tasks dispatch.
	mustSetStatus(t, s, planning.Job.ID, store.JobQueued, now)
	if task, _ := tf.Attempt(t, s, &tf.AttemptOpts{HostID: "wkr_a", Now: now}); task.ID != planning.Tasks[0].ID {
		t.Errorf("claimed %s, want the formerly planning job's task", task.ID)
	}
}

// testTaskClaimFit: a claim takes the first task that fits the free
// capacity, and passes over a task its host ran last when asked to.
func testTaskClaimFit(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	t0 := time.Unix(1_800_000_000, 0).UTC()
	p := tf.JobParams(t, s, &tf.JobOpts{Project: f, Tasks: 2})
	p.Tasks[0].CPU, p.Tasks[0].MemoryMB = 4, 8192
	p.Tasks[1].CPU, p.Tasks[1].MemoryMB = 1, 512
	tf.JobFrom(t, s, p)
	claim := func(host string, cpu float64, mem int64, avoid time.Time) (*store.Task, error) {
		task, _, err := s.TaskClaim(ctx(t), &store.TaskClaimParams{HostID: host, AttemptID: id.New(id.Attempt),
			FreeCPU: cpu, FreeMemoryMB: mem, AvoidRequeuedSince: avoid, Now: t0})
		return task, err
	}
	if _, err := claim("wkr_a", 0.5, 4096, time.Time{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("claim with 0.5 cpu: got %v, want ErrNotFound", err)
	}
	task, err := claim("wkr_a", 2, 4096, time.Time{})
	if err != nil || task.Index != 1 || task.CPU != 1 || task.MemoryMB != 512 {
		t.Fatalf("claim with 2 cpu: got %+v, %v; want task 1 (the one that fits)", task, err)
	}
	task, err = claim("wkr_a", 8, 16384, time.Time{})
	if err != nil || task.Index != 0 {
		t.Fatalf("claim with 8 cpu: got %+v, %v; want task 0", task, err)
	}
	// Requeue task 0 after a failure on wkr_a: wkr_a passes over it while
	// avoiding, wkr_b takes it.
	atts, _ := s.AttemptListOpen(ctx(t), "wkr_a")
	var att0 string
	for _, a := range atts {
		if a.TaskID == task.ID {
			att0 = a.ID
		}
	}
	if _, err := s.AttemptFinish(ctx(t), &store.AttemptFinishParams{AttemptID: att0, Status: store.AttemptFailed,
		TerminalKind: "exit", RetryDecision: "retry", TaskStatus: store.TaskQueued, RetriesUsed: 1, Now: t0.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	if _, err := claim("wkr_a", 8, 16384, t0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("claim by the host that ran it, avoiding: got %v, want ErrNotFound", err)
	}
	if task, err := claim("wkr_b", 8, 16384, t0); err != nil || task.Index != 0 || task.Attempts != 2 {
		t.Fatalf("claim by another host: got %+v, %v", task, err)
	}
}

// testTaskClaimConcurrent has many claimers race for the same queue: every
// task is claimed exactly once, and none fails.
func testTaskClaimConcurrent(t *testing.T, s store.Store) {
	claimRace(t, []store.Store{s})
}

// ClaimRaceAcrossStores is the same race over several stores on one
// database, each with its own connection pool: controllers dispatching at
// once, with no leader. The first store is seeded.
func ClaimRaceAcrossStores(t *testing.T, stores []store.Store) {
	claimRace(t, stores)
}

func claimRace(t *testing.T, stores []store.Store) {
	s := stores[0]
	f := tf.Project(t, s, nil)
	const jobs, perJob, claimers = 3, 100, 16
	want := map[string]bool{}
	for i := range jobs {
		p := tf.JobParams(t, s, &tf.JobOpts{Project: f, Tasks: perJob, SubmittedAt: t0.Add(time.Duration(i) * time.Second)})
		tf.JobFrom(t, s, p)
		for _, task := range p.Tasks {
			want[task.ID] = true
		}
	}
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, claimers)
	start := time.Now()
	for c := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			host := fmt.Sprintf("wkr_%d", c)
			s := stores[c%len(stores)]
			for {
				task, att, err := s.TaskClaim(ctx(t), &store.TaskClaimParams{HostID: host, AttemptID: id.New(id.Attempt), Now: t0})
				if errors.Is(err, store.ErrNotFound) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				if att.TaskID != task.ID || att.Number != 1 || task.LastHostID != host {
					errs <- fmt.Errorf("claim gave task %+v with attempt %+v", task, att)
					return
				}
				mu.Lock()
				got[task.ID]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("claimer: %v", err)
	}
	el := time.Since(start)
	t.Logf("%s: %d claimers took %d tasks in %v (%.0f claims/s)", s.Engine(), claimers, len(got), el, float64(len(got))/el.Seconds())
	if len(got) != len(want) {
		t.Errorf("claimed %d distinct tasks, want %d", len(got), len(want))
	}
	for tid, n := range got {
		if n != 1 || !want[tid] {
			t.Errorf("task %s claimed %d times (known: %v)", tid, n, want[tid])
		}
	}
	open, _ := s.AttemptListOpen(ctx(t), "")
	if len(open) != len(want) {
		t.Errorf("%d open attempts, want %d", len(open), len(want))
	}
}

// testCancelRacesClaims cancels a job while hosts claim and finish its
// tasks: nothing fails but the refused finishes of cancelled attempts (no
// deadlock), and no attempt is left open on a cancelled task.
func testCancelRacesClaims(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	p := tf.JobParams(t, s, &tf.JobOpts{Project: f, Tasks: 200})
	tf.JobFrom(t, s, p)
	const claimers = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	claims := 0
	cancelNow, cancelDone := make(chan struct{}), make(chan struct{})
	errs := make(chan error, claimers+1)
	for c := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			host := fmt.Sprintf("wkr_%d", c)
			for i := 0; ; i++ {
				task, att, err := s.TaskClaim(ctx(t), &store.TaskClaimParams{HostID: host, AttemptID: id.New(id.Attempt), Now: t0})
				if errors.Is(err, store.ErrNotFound) {
					return
				}
				if err != nil {
					errs <- fmt.Errorf("claim: %w", err)
					return
				}
				mu.Lock()
				if claims++; claims == 40 {
					close(cancelNow)
				}
				n := claims
				mu.Unlock()
				if n > 40 {
					// Claims go on beside the cancel, but no faster than
					// a claim a millisecond per host until it committed:
					// eight fast claimers could otherwise finish every
					// task before the cancel's goroutine even ran.
					select {
					case <-cancelDone:
					case <-time.After(time.Millisecond):
					}
				}
				fin := &store.AttemptFinishParams{AttemptID: att.ID, Status: store.AttemptSucceeded, TerminalKind: "exit",
					ExitCode: ptr(int64(0)), TaskStatus: store.TaskSucceeded, Now: t0}
				if i%3 == 0 { // some go back to the queue
					fin.Status, fin.TaskStatus, fin.RetriesUsed = store.AttemptFailed, store.TaskQueued, task.RetriesUsed+1
				}
				if _, err := s.AttemptFinish(ctx(t), fin); err != nil && !errors.Is(err, store.ErrConflict) {
					errs <- fmt.Errorf("finish: %w", err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-cancelNow
		errs <- s.InTx(ctx(t), func(q store.Querier) error { // in the lock order JobStore documents
			if _, err := q.TaskCancelOpen(ctx(t), p.Job.ID, t0); err != nil {
				return err
			}
			_, err := q.JobSetStatus(ctx(t), &store.JobSetStatusParams{ID: p.Job.ID, To: store.JobCancelled, Now: t0})
			return err
		})
		close(cancelDone)
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("%v", err)
		}
	}
	if open, _ := s.AttemptListOpen(ctx(t), ""); len(open) != 0 {
		t.Errorf("%d attempts left open after the cancel", len(open))
	}
	counts, _ := s.TaskCountByStatus(ctx(t), p.Job.ID)
	if counts[store.TaskQueued] != 0 || counts[store.TaskRunning] != 0 || counts[store.TaskCancelled] == 0 {
		t.Errorf("task counts after the cancel = %v", counts)
	}
}

// testClaimNeverBeforeRequeue: a claimer whose clock reading was taken
// before a requeue committed (another controller, a stall between reading
// the clock and the claim) still stamps the new attempt no earlier than
// the end of the one before it: a task's attempts never seem to overlap.
func testClaimNeverBeforeRequeue(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	p := tf.JobParams(t, s, &tf.JobOpts{Project: f})
	tf.JobFrom(t, s, p)
	_, a1 := tf.Attempt(t, s, &tf.AttemptOpts{HostID: "wkr_a", Now: t0.Add(time.Second)})
	ended := t0.Add(10 * time.Second)
	fin := mustFinish(t, s, &store.AttemptFinishParams{AttemptID: a1.ID, Status: store.AttemptLost, TerminalKind: "lost",
		RetryDecision: "requeue", TaskStatus: store.TaskQueued, InfraRequeues: 1, Now: ended})
	_, a2 := tf.Attempt(t, s, &tf.AttemptOpts{HostID: "wkr_b", Now: t0.Add(5 * time.Second)})
	if fin.EndedAt == nil || a2.AssignedAt.Before(*fin.EndedAt) {
		t.Errorf("attempt 2 assigned at %v, before attempt 1 ended at %v", a2.AssignedAt, fin.EndedAt)
	}
	// A claim whose clock is ahead keeps its own time.
	later := t0.Add(time.Minute)
	mustFinish(t, s, &store.AttemptFinishParams{AttemptID: a2.ID, Status: store.AttemptLost, TerminalKind: "lost",
		RetryDecision: "requeue", TaskStatus: store.TaskQueued, InfraRequeues: 2, Now: t0.Add(20 * time.Second)})
	if _, a3 := tf.Attempt(t, s, &tf.AttemptOpts{HostID: "wkr_c", Now: later}); !a3.AssignedAt.Equal(later) {
		t.Errorf("attempt 3 assigned at %v, want %v", a3.AssignedAt, later)
	}
}
