package fleet_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
	"github.com/skiffhq/skiff/internal/store"
)

func agentCapacity(slots int) agentproto.Capacity {
	return agentproto.Capacity{CPU: float64(slots), MemoryMB: int64(slots) * 1024, Slots: slots}
}

// TestJobsInGVisor runs real jobs through the controller and a gVisor host:
// every outcome of the runner protocol, and what it does to tasks and jobs.
func TestJobsInGVisor(t *testing.T) {
	engines(t, func(t *testing.T, st store.Store) { testJobsInGVisor(t, harnessOptions{store: st}) })
}

func testJobsInGVisor(t *testing.T, opts harnessOptions) {
	h := newHarness(t, opts)
	h.host(2)

	t.Run("success with result, progress and env", func(t *testing.T) {
		j := h.submit(apiv1.JobSubmit{Payload: payload(t, sandboxtest.Payload{
			Stdout: "hello from the task", Progress: []string{`{"pct":50}`, `{"pct":100}`},
			Env: []string{"SKIFF_TASK_ID", "PROJECT_VAR"}, Cwd: true,
		})})
		j = h.wait(j, time.Minute)
		if j.Status != store.JobCompleted {
			t.Fatalf("status: got %s (%s), want completed", j.Status, j.Error)
		}
		tasks, atts := h.tasks(j)
		task := tasks[0]
		if task.Status != store.TaskSucceeded || task.ExitCode == nil || *task.ExitCode != 0 {
			t.Fatalf("task: got %s exit %v", task.Status, task.ExitCode)
		}
		r := sandboxtest.DecodeReport(t, task.Result)
		if r.Cwd != "/app" || r.Env["SKIFF_TASK_ID"] != task.ID || r.Env["PROJECT_VAR"] != "from-project" {
			t.Errorf("runner saw cwd %q, env %v; want /app, its task id and the project env", r.Cwd, r.Env)
		}
		if !strings.Contains(task.Output, "hello from the task") {
			t.Errorf("output: got %q", task.Output)
		}
		if string(task.LatestProgress) != `{"pct":100}` {
			t.Errorf("latest_progress: got %s", task.LatestProgress)
		}
		if len(atts) != 1 || atts[0].Status != store.AttemptSucceeded || atts[0].StartedAt == nil ||
			!strings.HasPrefix(atts[0].HostID, "wkr_") {
			t.Fatalf("attempts: %+v", atts)
		}
		var prof agentproto.ResourceProfile
		if err := json.Unmarshal(atts[0].ResourceProfile, &prof); err != nil || prof.CPUCount == 0 || prof.MemoryTotalMB == 0 {
			t.Errorf("resource profile: %s (%v)", atts[0].ResourceProfile, err)
		}
		var sum job.Summary
		if err := json.Unmarshal(j.Summary, &sum); err != nil || sum.TaskOutcomeCounts.Succeeded != 1 {
			t.Errorf("summary: %s (%v)", j.Summary, err)
		}
		kinds := h.eventKinds(j)
		for _, want := range []string{"job.submitted", "job.running", "attempt.started", "attempt.succeeded", "job.completed"} {
			if !slices.Contains(kinds, want) {
				t.Errorf("events: %v lack %s", kinds, want)
			}
		}
	})

	t.Run("non-zero exit retries then fails with a failure payload", func(t *testing.T) {
		j := h.submit(apiv1.JobSubmit{MaxRetries: ptr[int64](1),
			Payload: payload(t, sandboxtest.Payload{Stderr: "bad input", NoResult: true, Exit: 3})})
		j = h.wait(j, time.Minute)
		if j.Status != store.JobFailed || j.Error == "" || j.RecommendedAction == "" {
			t.Fatalf("job: got %s %q %q, want failed with error and recommended action", j.Status, j.Error, j.RecommendedAction)
		}
		tasks, atts := h.tasks(j)
		if len(atts) != 2 || atts[0].RetryDecision != "retry" || atts[1].RetryDecision != "none" ||
			atts[0].Status != store.AttemptFailed || atts[1].Status != store.AttemptFailed {
			t.Fatalf("attempts: want 2 failed (retry, none), got %s", attemptsString(atts))
		}
		task := tasks[0]
		if task.RetriesUsed != 1 || !strings.Contains(task.ErrorText, "bad input") {
			t.Errorf("task: retries %d, error %q", task.RetriesUsed, task.ErrorText)
		}
		var fp job.FailurePayload
		if err := json.Unmarshal(task.Result, &fp); err != nil {
			t.Fatalf("result: %s (%v)", task.Result, err)
		}
		if fp.FailureKind != job.FailureExit || fp.ExitCode == nil || *fp.ExitCode != 3 || fp.Cwd != "/app" ||
			!slices.Equal(fp.Command, []string{"/usr/local/bin/runner"}) || !strings.Contains(fp.CombinedOutput, "bad input") {
			t.Errorf("failure payload: %+v", fp)
		}
	})

	t.Run("exit 137 requeues free until the cap", func(t *testing.T) {
		j := h.submit(apiv1.JobSubmit{Payload: payload(t, sandboxtest.Payload{NoResult: true, Exit: 137})})
		j = h.wait(j, 2*time.Minute)
		tasks, atts := h.tasks(j)
		if j.Status != store.JobFailed || len(atts) != job.MaxInfraRequeues+1 {
			t.Fatalf("job %s with %d attempts, want failed after %d: %s", j.Status, len(atts), job.MaxInfraRequeues+1, attemptsString(atts))
		}
		if tasks[0].RetriesUsed != 0 || tasks[0].InfraRequeues != job.MaxInfraRequeues {
			t.Errorf("task: retries_used %d (want 0), infra_requeues %d", tasks[0].RetriesUsed, tasks[0].InfraRequeues)
		}
		var fp job.FailurePayload
		_ = json.Unmarshal(tasks[0].Result, &fp)
		if fp.FailureKind != job.FailureInfraLimit {
			t.Errorf("failure kind: got %q, want %q", fp.FailureKind, job.FailureInfraLimit)
		}
		if n := count(h.eventKinds(j), "attempt.infra_requeued"); n != job.MaxInfraRequeues {
			t.Errorf("attempt.infra_requeued events: got %d", n)
		}
	})

	t.Run("failure_class infra requeues free three times, then uses retries", func(t *testing.T) {
		j := h.submit(apiv1.JobSubmit{MaxRetries: ptr[int64](1),
			Payload: payload(t, sandboxtest.Payload{FailureClass: "infra", Exit: 1})})
		j = h.wait(j, 2*time.Minute)
		tasks, atts := h.tasks(j)
		want := job.MaxDeclaredInfraRequeues + 2 // three free, one retry, the last
		if j.Status != store.JobFailed || len(atts) != want {
			t.Fatalf("job %s with %d attempts, want failed after %d: %s", j.Status, len(atts), want, attemptsString(atts))
		}
		if tasks[0].DeclaredInfra != job.MaxDeclaredInfraRequeues || tasks[0].RetriesUsed != 1 {
			t.Errorf("task: declared_infra %d, retries_used %d", tasks[0].DeclaredInfra, tasks[0].RetriesUsed)
		}
		// The runner's own result is kept on the failed task, with the
		// failure payload's fields added.
		var res map[string]any
		if err := json.Unmarshal(tasks[0].Result, &res); err != nil || res["failure_class"] != "infra" ||
			res["failure_kind"] != job.FailureExit || res["payload"] == nil {
			t.Errorf("result: %s (%v)", tasks[0].Result, err)
		}
	})

	t.Run("a command missing from the image fails at once", func(t *testing.T) {
		j := h.wait(h.submit(apiv1.JobSubmit{RunnerCommand: []string{"/no/such/runner"}, Payload: payload(t, sandboxtest.Payload{})}), time.Minute)
		tasks, atts := h.tasks(j)
		if j.Status != store.JobFailed || len(atts) != 1 || atts[0].TerminalKind != "start_failed" || atts[0].CostMicros != 0 {
			t.Fatalf("job %s, attempts %s: want one uncharged start_failed attempt", j.Status, attemptsString(atts))
		}
		var fp job.FailurePayload
		_ = json.Unmarshal(tasks[0].Result, &fp)
		if fp.FailureKind != job.FailureStart || !strings.Contains(tasks[0].ErrorText, "/no/such/runner") {
			t.Errorf("failure: %+v, error %q", fp, tasks[0].ErrorText)
		}
	})

	t.Run("timeout kills the attempt", func(t *testing.T) {
		j := h.submit(apiv1.JobSubmit{TimeoutS: ptr[int64](1), Payload: payload(t, sandboxtest.Payload{SleepMS: 30000})})
		j = h.wait(j, time.Minute)
		tasks, atts := h.tasks(j)
		if j.Status != store.JobFailed || atts[0].TerminalKind != "timeout" {
			t.Fatalf("job %s, attempts %s; want failed by timeout", j.Status, attemptsString(atts))
		}
		var fp job.FailurePayload
		_ = json.Unmarshal(tasks[0].Result, &fp)
		if fp.FailureKind != job.FailureTimeout {
			t.Errorf("failure kind: got %q", fp.FailureKind)
		}
	})

	t.Run("fan-out partial", func(t *testing.T) {
		items := []json.RawMessage{payload(t, sandboxtest.Payload{Stdout: "ok"}), payload(t, sandboxtest.Payload{Exit: 2, NoResult: true})}
		j := h.submit(apiv1.JobSubmit{Payload: json.RawMessage(`{}`), FanOut: &apiv1.JobFanOut{Items: items}})
		j = h.wait(j, time.Minute)
		if j.Status != store.JobPartial {
			t.Fatalf("status: got %s, want partial", j.Status)
		}
		var sum job.Summary
		_ = json.Unmarshal(j.Summary, &sum)
		if sum.TaskOutcomeCounts.Succeeded != 1 || sum.TaskOutcomeCounts.Failed != 1 {
			t.Errorf("counts: %+v", sum.TaskOutcomeCounts)
		}
	})

	t.Run("cancel kills the running attempt", func(t *testing.T) {
		j := h.submit(apiv1.JobSubmit{Payload: payload(t, sandboxtest.Payload{SleepMS: 60000})})
		h.waitFor(j, time.Minute, "attempt running", func(_ []*store.Task, a []*store.Attempt) bool {
			return len(a) == 1 && a[0].Status == store.AttemptRunning
		})
		start := time.Now()
		if _, _, err := h.jobs.Cancel(context.Background(), h.accountID, j.ID, "test"); err != nil {
			t.Fatal(err)
		}
		// The host hears of it on its lease and stops the runner; its slot
		// is then free again: a new job runs at once.
		next := h.submit(apiv1.JobSubmit{Payload: payload(t, sandboxtest.Payload{})})
		if got := h.wait(next, time.Minute); got.Status != store.JobCompleted {
			t.Fatalf("job after cancel: %s", got.Status)
		}
		got := h.wait(j, time.Second)
		_, atts := h.tasks(got)
		if got.Status != store.JobCancelled || atts[0].Status != store.AttemptCancelled {
			t.Fatalf("cancelled job: %s, attempt %s", got.Status, atts[0].Status)
		}
		t.Logf("cancel to next job done: %s", time.Since(start))
	})
}

// TestPriorityOrder: with one slot, queued jobs start high, then normal,
// then low, whatever order they were submitted in.
func TestPriorityOrder(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	var jobs []*store.Job
	for _, p := range []string{"low", "normal", "high"} {
		jobs = append(jobs, h.submit(apiv1.JobSubmit{Priority: ptr(p), Payload: payload(t, sandboxtest.Payload{})}))
	}
	h.host(1)
	var starts []time.Time
	for _, j := range jobs {
		h.wait(j, time.Minute)
		_, atts := h.tasks(j)
		starts = append(starts, atts[0].AssignedAt)
	}
	if !(starts[2].Before(starts[1]) && starts[1].Before(starts[0])) {
		t.Errorf("assignment times low %v, normal %v, high %v: want high first, low last", starts[0], starts[1], starts[2])
	}
}

// TestRetryPrefersAnotherHost: a failed attempt's retry goes to the other
// host while one is registered.
func TestRetryPrefersAnotherHost(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.host(1)
	h.host(1)
	j := h.submit(apiv1.JobSubmit{MaxRetries: ptr[int64](1), Payload: payload(t, sandboxtest.Payload{Exit: 1, NoResult: true})})
	h.wait(j, time.Minute)
	_, atts := h.tasks(j)
	if len(atts) != 2 || atts[0].HostID == atts[1].HostID {
		t.Fatalf("attempts: want 2 on different hosts, got %s", attemptsString(atts))
	}
}

// TestHostLostAndControllerRestart: a controller that dies under a running
// attempt loses nothing. The restarted controller waits for the host to
// come back; a host that does not is declared lost, its attempt is recorded
// as lost and requeued free, and another host runs the task to the end.
func TestHostLostAndControllerRestart(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	_, stopFirst := h.host(1)
	j := h.submit(apiv1.JobSubmit{Payload: payload(t, sandboxtest.Payload{SleepMS: 3000, Stdout: "done"})})
	h.waitFor(j, time.Minute, "attempt running", func(_ []*store.Task, a []*store.Attempt) bool {
		return len(a) == 1 && a[0].Status == store.AttemptRunning
	})
	// The controller crashes: its host can no longer reach it, and its
	// own host goes away with it without a word.
	h.stop()
	stopFirst()
	h.start()
	h.host(1)
	got := h.wait(j, 2*time.Minute)
	tasks, atts := h.tasks(got)
	if got.Status != store.JobCompleted || len(atts) != 2 || atts[0].Status != store.AttemptLost ||
		atts[1].Status != store.AttemptSucceeded {
		t.Fatalf("job %s, attempts %s: want the first lost and the second succeeded", got.Status, attemptsString(atts))
	}
	if tasks[0].RetriesUsed != 0 || tasks[0].InfraRequeues != 1 {
		t.Errorf("task: retries_used %d (want 0), infra_requeues %d (want 1)", tasks[0].RetriesUsed, tasks[0].InfraRequeues)
	}
	if !slices.Contains(h.eventKinds(j), "attempt.lost") {
		t.Errorf("events lack attempt.lost: %v", h.eventKinds(j))
	}
}

func attemptsString(atts []*store.Attempt) string {
	var b strings.Builder
	for _, a := range atts {
		exit := "-"
		if a.ExitCode != nil {
			exit = strconv.FormatInt(*a.ExitCode, 10)
		}
		b.WriteString("[#" + strconv.FormatInt(a.Number, 10) + " " + string(a.Status) + " " + a.TerminalKind + " " + a.RetryDecision + " exit " + exit + " on " + a.HostID + "] ")
	}
	return b.String()
}

func count(ss []string, s string) int {
	n := 0
	for _, x := range ss {
		if x == s {
			n++
		}
	}
	return n
}

// TestDependencies: a job waits in planning until its dependency ends; a
// completed dependency queues it, a failed one cancels it and, in turn, the
// jobs waiting on it.
func TestDependencies(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	first := h.submit(apiv1.JobSubmit{Payload: payload(t, sandboxtest.Payload{SleepMS: 1500})})
	after := h.submit(apiv1.JobSubmit{DependsOn: []string{first.ID}, Payload: payload(t, sandboxtest.Payload{})})
	if after.Status != store.JobPlanning {
		t.Fatalf("dependent job: got %s, want planning", after.Status)
	}
	failing := h.submit(apiv1.JobSubmit{Payload: payload(t, sandboxtest.Payload{Exit: 1, NoResult: true})})
	doomed := h.submit(apiv1.JobSubmit{DependsOn: []string{first.ID, failing.ID}, Payload: payload(t, sandboxtest.Payload{})})
	chained := h.submit(apiv1.JobSubmit{DependsOn: []string{doomed.ID}, Payload: payload(t, sandboxtest.Payload{})})
	h.host(2)

	if got := h.wait(after, time.Minute); got.Status != store.JobCompleted {
		t.Errorf("dependent of a completed job: got %s (%s), want completed", got.Status, got.Error)
	}
	for _, j := range []*store.Job{doomed, chained} {
		got := h.wait(j, time.Minute)
		_, atts := h.tasks(got)
		if got.Status != store.JobCancelled || len(atts) != 0 || !strings.Contains(got.Error, "dependency") {
			t.Errorf("job %s: got %s (%q) with %d attempts, want cancelled by its dependency without running", j.ID, got.Status, got.Error, len(atts))
		}
	}
	// A dependency that already ended decides at submit.
	late := h.submit(apiv1.JobSubmit{DependsOn: []string{first.ID}, Payload: payload(t, sandboxtest.Payload{})})
	if late.Status != store.JobQueued {
		t.Errorf("job on an ended dependency: got %s, want queued at once", late.Status)
	}
	if got := h.wait(late, time.Minute); got.Status != store.JobCompleted {
		t.Errorf("late dependent: got %s", got.Status)
	}
}
