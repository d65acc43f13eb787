package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

// jobEditTests are the conformance tests of store.JobEditStore and of the
// job list's client_ref filter; Run adds them to its map.
var jobEditTests = map[string]func(*testing.T, store.Store){
	"TaskSetRequirements":        testTaskSetRequirements,
	"TaskSetRequirementsGuarded": testTaskSetRequirementsGuarded,
	"TaskSetRequirementsReprice": testTaskSetRequirementsReprice,
	"JobIDsWithOutput":           testJobIDsWithOutput,
	"JobListByClientRef":         testJobListByClientRef,
}

// Queued and running tasks take the new requirements, ended ones keep
// theirs, the job's request changes with them, and claims use the new
// capacity columns at once.
func testTaskSetRequirements(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	p := tf.JobParams(t, s, &tf.JobOpts{Project: f, Tasks: 3})
	for i := range p.Tasks {
		p.Tasks[i].CPU, p.Tasks[i].MemoryMB = 1, 512
	}
	j := tf.JobFrom(t, s, p)
	t1 := t0.Add(time.Second)
	claim := func(attemptID string) (*store.Task, *store.Attempt) {
		t.Helper()
		task, a, err := s.TaskClaim(ctx(t), &store.TaskClaimParams{HostID: "wkr_a", AttemptID: attemptID, FreeCPU: 8,
			FreeMemoryMB: 8192, Now: t1})
		if err != nil {
			t.Fatalf("TaskClaim: %v", err)
		}
		return task, a
	}
	done, a0 := claim("att_0")
	mustFinish(t, s, &store.AttemptFinishParams{AttemptID: a0.ID, Status: store.AttemptSucceeded, TerminalKind: "exit",
		RetryDecision: "none", TaskStatus: store.TaskSucceeded, Now: t1})
	running, _ := claim("att_1")
	before := mustTask(t, s, running.ID)

	req := json.RawMessage(`{"cpu":4,"memory_mb":4096,"gpu_count":1}`)
	newRequest := json.RawMessage(`{"type":"structured_runner","requirements":{"cpu":4}}`)
	t2 := t0.Add(time.Minute)
	n, err := s.TaskSetRequirements(ctx(t), &store.TaskSetRequirementsParams{JobID: j.ID, Requirements: req, CPU: 4,
		MemoryMB: 4096, GPUs: 1, Request: newRequest, PrevRequest: j.Request, Now: t2})
	if err != nil || n != 2 {
		t.Fatalf("TaskSetRequirements = %d, %v; want 2 tasks (one queued, one running)", n, err)
	}
	tasks, err := s.TaskList(ctx(t), j.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		switch task.ID {
		case done.ID:
			if string(task.Requirements) != `{"cpu":1}` || task.CPU != 1 || task.MemoryMB != 512 || task.GPUs != 0 {
				t.Errorf("succeeded task: got %s cpu %v mem %d gpus %d, want its old requirements", task.Requirements, task.CPU, task.MemoryMB, task.GPUs)
			}
		default:
			if !jsonSame(t, task.Requirements, req) || task.CPU != 4 || task.MemoryMB != 4096 || task.GPUs != 1 {
				t.Errorf("%s task: got %s cpu %v mem %d gpus %d, want %s 4 4096 1", task.Status, task.Requirements, task.CPU, task.MemoryMB, task.GPUs, req)
			}
		}
	}
	if after := mustTask(t, s, running.ID); !after.UpdatedAt.Equal(before.UpdatedAt) || after.Status != store.TaskRunning {
		t.Errorf("running task: got updated_at %v status %s, want %v running (an edit is not a report)", after.UpdatedAt, after.Status, before.UpdatedAt)
	}
	got, err := s.JobGet(ctx(t), f.AccountID, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonSame(t, got.Request, newRequest) || !got.UpdatedAt.Equal(t2) {
		t.Errorf("job: got request %s updated %v, want %s at %v", got.Request, got.UpdatedAt, newRequest, t2)
	}

	// The last queued task now needs 4 CPUs, 4096 MB and a GPU.
	_, _, err = s.TaskClaim(ctx(t), &store.TaskClaimParams{HostID: "wkr_b", AttemptID: "att_small", FreeCPU: 2,
		FreeMemoryMB: 8192, FreeGPUs: 1, Now: t2})
	wantErr(t, err, store.ErrNotFound)
	task, _, err := s.TaskClaim(ctx(t), &store.TaskClaimParams{HostID: "wkr_b", AttemptID: "att_big", FreeCPU: 4,
		FreeMemoryMB: 4096, FreeGPUs: 1, Now: t2})
	if err != nil || task.CPU != 4 {
		t.Fatalf("claim with room for the new requirements = %+v, %v", task, err)
	}
}

// An attempt records the task's resources and the job's rate when it is
// claimed; an edit that re-prices the job changes its rate and billing, so
// that later claims record the new ones while the attempt already claimed
// keeps its own. An edit without a rate keeps the job's.
func testTaskSetRequirementsReprice(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	p := tf.JobParams(t, s, &tf.JobOpts{Project: f, Tasks: 2})
	p.Job.RateMicrosPerHour = 1000
	p.Job.Billing = json.RawMessage(`{"billing_estimate":{"rate_usd_per_hour":1000}}`)
	for i := range p.Tasks {
		p.Tasks[i].CPU, p.Tasks[i].MemoryMB = 1, 256
	}
	j := tf.JobFrom(t, s, p)
	claim := func(attemptID string) *store.Attempt {
		t.Helper()
		_, a, err := s.TaskClaim(ctx(t), &store.TaskClaimParams{HostID: "wkr_a", AttemptID: attemptID, FreeCPU: 8,
			FreeMemoryMB: 8192, FreeGPUs: 1, Now: t0})
		if err != nil {
			t.Fatalf("TaskClaim: %v", err)
		}
		return a
	}
	old := claim("att_old")
	if old.CPU != 1 || old.MemoryMB != 256 || old.GPUs != 0 || old.RateMicrosPerHour != 1000 {
		t.Errorf("claimed attempt: got cpu %v memory %d gpus %d rate %d, want 1 256 0 1000", old.CPU, old.MemoryMB, old.GPUs, old.RateMicrosPerHour)
	}
	billing := json.RawMessage(`{"billing_estimate":{"rate_usd_per_hour":2000}}`)
	request := json.RawMessage(`{"requirements":{"memory_mb":512}}`)
	if _, err := s.TaskSetRequirements(ctx(t), &store.TaskSetRequirementsParams{JobID: j.ID, Requirements: json.RawMessage(`{"memory_mb":512}`),
		CPU: 2, MemoryMB: 512, GPUs: 1, Request: request, PrevRequest: j.Request, RateMicrosPerHour: 2000, Billing: billing,
		Now: t0}); err != nil {
		t.Fatal(err)
	}
	got, err := s.JobGetByID(ctx(t), j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.RateMicrosPerHour != 2000 || !jsonSame(t, got.Billing, billing) {
		t.Errorf("re-priced job: got rate %d billing %s, want 2000 %s", got.RateMicrosPerHour, got.Billing, billing)
	}
	next := claim("att_new")
	if next.CPU != 2 || next.MemoryMB != 512 || next.GPUs != 1 || next.RateMicrosPerHour != 2000 {
		t.Errorf("attempt claimed after the edit: got cpu %v memory %d gpus %d rate %d, want 2 512 1 2000", next.CPU, next.MemoryMB, next.GPUs, next.RateMicrosPerHour)
	}
	atts, err := s.AttemptList(ctx(t), j.ID)
	if err != nil || len(atts) != 2 {
		t.Fatalf("AttemptList = %d, %v", len(atts), err)
	}
	if a := atts[0]; a.ID != old.ID || a.CPU != 1 || a.MemoryMB != 256 || a.RateMicrosPerHour != 1000 {
		t.Errorf("attempt claimed before the edit, read back: got %s cpu %v memory %d rate %d, want %s 1 256 1000", a.ID, a.CPU, a.MemoryMB, a.RateMicrosPerHour, old.ID)
	}
	if a, err := s.AttemptGet(ctx(t), next.ID); err != nil || a.RateMicrosPerHour != 2000 || a.MemoryMB != 512 {
		t.Errorf("AttemptGet: got %+v, %v; want rate 2000, 512 MB", a, err)
	}

	// Without a rate or billing, both stay.
	if _, err := s.TaskSetRequirements(ctx(t), &store.TaskSetRequirementsParams{JobID: j.ID, Requirements: json.RawMessage(`{}`),
		CPU: 2, MemoryMB: 512, GPUs: 1, Request: json.RawMessage(`{"x":1}`), PrevRequest: request, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.JobGetByID(ctx(t), j.ID); err != nil || got.RateMicrosPerHour != 2000 || !jsonSame(t, got.Billing, billing) {
		t.Errorf("edit without a rate: got rate %d billing %s, %v; want 2000 %s", got.RateMicrosPerHour, got.Billing, err, billing)
	}
}

// A stale request, an ended job or an unknown one change nothing.
func testTaskSetRequirementsGuarded(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	p := tf.JobParams(t, s, &tf.JobOpts{Project: f, Tasks: 2})
	j := tf.JobFrom(t, s, p)
	edit := func(jobID string, prev json.RawMessage) error {
		_, err := s.TaskSetRequirements(ctx(t), &store.TaskSetRequirementsParams{JobID: jobID,
			Requirements: json.RawMessage(`{"cpu":9}`), CPU: 9, MemoryMB: 9, Request: json.RawMessage(`{"edited":true}`),
			PrevRequest: prev, Now: t0.Add(time.Minute)})
		return err
	}
	unchanged := func(what string) {
		t.Helper()
		tasks, err := s.TaskList(ctx(t), j.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			if string(task.Requirements) != `{"cpu":1}` || task.CPU != 0 {
				t.Errorf("%s: task %d got %s cpu %v, want the old requirements (rolled back)", what, task.Index, task.Requirements, task.CPU)
			}
		}
		got, err := s.JobGet(ctx(t), f.AccountID, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Request) != string(j.Request) {
			t.Errorf("%s: job request got %s, want %s", what, got.Request, j.Request)
		}
	}
	wantErr(t, edit(j.ID, json.RawMessage(`{"type":"other"}`)), store.ErrConflict)
	unchanged("stale request")
	wantErr(t, edit("job_nope", j.Request), store.ErrNotFound)

	// Inside a caller's transaction the refusal is the caller's to roll back.
	err := s.InTx(ctx(t), func(q store.Querier) error {
		_, err := q.TaskSetRequirements(ctx(t), &store.TaskSetRequirementsParams{JobID: j.ID,
			Requirements: json.RawMessage(`{"cpu":9}`), CPU: 9, Request: json.RawMessage(`{}`),
			PrevRequest: json.RawMessage(`{"stale":1}`), Now: t0})
		return err
	})
	wantErr(t, err, store.ErrConflict)
	unchanged("stale request in a transaction")

	if _, err := s.TaskCancelOpen(ctx(t), j.ID, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	mustSetStatus(t, s, j.ID, store.JobCancelled, t0.Add(time.Second))
	wantErr(t, edit(j.ID, j.Request), store.ErrConflict)
	unchanged("ended job")
}

func testJobIDsWithOutput(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	quiet := tf.Job(t, s, &tf.JobOpts{Project: f, Tasks: 2})
	loud := tf.Job(t, s, &tf.JobOpts{Project: f, Tasks: 2, SubmittedAt: t0.Add(time.Second)})
	// Claims take the oldest job first: both of quiet's tasks, then loud's.
	for range 3 {
		task, a := tf.Attempt(t, s, &tf.AttemptOpts{HostID: "wkr_a", Now: t0.Add(time.Minute)})
		out := ""
		if task.JobID == loud.ID {
			out = "hello\n"
		}
		mustFinish(t, s, &store.AttemptFinishParams{AttemptID: a.ID, Status: store.AttemptSucceeded, TerminalKind: "exit",
			RetryDecision: "none", TaskStatus: store.TaskSucceeded, Output: &out, Now: t0.Add(time.Minute)})
	}
	got, err := s.JobIDsWithOutput(ctx(t), []string{quiet.ID, loud.ID, "job_nope"})
	if err != nil || !slices.Equal(got, []string{loud.ID}) {
		t.Errorf("JobIDsWithOutput = %v, %v; want [%s]", got, err, loud.ID)
	}
	if got, err := s.JobIDsWithOutput(ctx(t), nil); err != nil || len(got) != 0 {
		t.Errorf("JobIDsWithOutput(none) = %v, %v; want nothing", got, err)
	}
}

func testJobListByClientRef(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	bob := tf.Project(t, s, &tf.ProjectOpts{AccountID: tf.Account(t, s, &tf.AccountOpts{Name: "bob"}).ID, Name: "p"})
	var want []string
	for i, ref := range []*string{ptr("run-1"), nil, ptr("run-2"), ptr("run-1"), ptr("RUN-1")} {
		p := tf.JobParams(t, s, &tf.JobOpts{Project: f, SubmittedAt: t0.Add(time.Duration(i) * time.Minute)})
		p.Job.ClientRef = ref
		j := tf.JobFrom(t, s, p)
		if ref != nil && *ref == "run-1" {
			want = append([]string{j.ID}, want...)
		}
	}
	bp := tf.JobParams(t, s, &tf.JobOpts{Project: bob})
	bp.Job.ClientRef = ptr("run-1")
	tf.JobFrom(t, s, bp)
	jobs, total, err := s.JobList(ctx(t), &store.JobListParams{AccountID: f.AccountID, ClientRef: "run-1"})
	if err != nil || total != 2 || !slices.Equal(jobIDs(jobs), want) {
		t.Errorf("JobList(client_ref run-1) = %v (total %d), %v; want %v", jobIDs(jobs), total, err, want)
	}
	jobs, total, err = s.JobList(ctx(t), &store.JobListParams{AccountID: f.AccountID, ClientRef: "run-1",
		Statuses: []store.JobStatus{store.JobQueued}, Limit: 1, Offset: 1})
	if err != nil || total != 2 || len(jobs) != 1 || jobs[0].ID != want[1] {
		t.Errorf("JobList(client_ref, status, page 2) = %v (total %d), %v; want [%s]", jobIDs(jobs), total, err, want[1])
	}
}

func jsonSame(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("decode %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}
