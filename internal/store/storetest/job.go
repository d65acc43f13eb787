package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
)

// jobTests are the job store's conformance tests; Run adds them to its map.
var jobTests = map[string]func(*testing.T, store.Store){
	"JobCreateAndGet":         testJobCreateAndGet,
	"JobCreateAtomic":         testJobCreateAtomic,
	"JobCreateLarge":          testJobCreateLarge,
	"JobList":                 testJobList,
	"JobTransitions":          testJobTransitions,
	"JobSetStatusFields":      testJobSetStatusFields,
	"ProjectActiveJobCount":   testProjectActiveJobCount,
	"TaskClaimOrder":          testTaskClaimOrder,
	"TaskClaimFit":            testTaskClaimFit,
	"JobDependencies":         testJobDependencies,
	"TaskClaimConcurrent":     testTaskClaimConcurrent,
	"CancelRacesClaims":       testCancelRacesClaims,
	"AttemptLifecycle":        testAttemptLifecycle,
	"TaskCancelOpen":          testTaskCancelOpen,
	"JobEvents":               testJobEvents,
	"JobSchemaChecks":         testJobSchemaChecks,
	"TaskTransitions":         testTaskTransitions,
	"AttemptTransitions":      testAttemptTransitions,
	"JobEventFeed":            testJobEventFeed,
	"JobEventFeedCommitOrder": testJobEventFeedCommitOrder,
}

// jobFixture is an account with a project, ready for jobs.
type jobFixture struct {
	acct *store.Account
	proj *store.Project
}

func setupJobs(t *testing.T, s store.Store) jobFixture {
	t.Helper()
	a := mustAccount(t, s, "alice")
	return jobFixture{acct: a, proj: mustProject(t, s, a.ID, "p")}
}

// jobParams describes a queued, normal-priority job of n tasks submitted at
// submitted; tests adjust it before creating it.
func (f jobFixture) jobParams(n int, submitted time.Time) *store.JobCreateParams {
	tasks := make([]store.Task, n)
	for i := range tasks {
		tasks[i] = store.Task{ID: id.New(id.Task), Index: int64(i),
			Payload:      json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)),
			Meta:         json.RawMessage(fmt.Sprintf(`{"chunk_index":%d}`, i)),
			Requirements: json.RawMessage(`{"cpu":1}`)}
	}
	return &store.JobCreateParams{
		Job: store.Job{ID: id.New(id.Job), AccountID: f.acct.ID, ProjectID: f.proj.ID, ProjectName: f.proj.Name,
			PushID: "psh_x", Type: "structured_runner", Status: store.JobQueued, Priority: store.PriorityNormal,
			Request: json.RawMessage(`{"type":"structured_runner"}`), Payload: json.RawMessage(`{"items":[1,2]}`),
			SubmittedAt: submitted},
		Tasks: tasks,
		Event: store.JobEvent{ID: id.New(id.Event), Kind: "job.submitted", Data: json.RawMessage(`{"n":1}`), CreatedAt: submitted},
	}
}

func mustJob(t *testing.T, q store.Querier, p *store.JobCreateParams) *store.Job {
	t.Helper()
	j, err := q.JobCreate(ctx(t), p)
	if err != nil {
		t.Fatalf("JobCreate: %v", err)
	}
	return j
}

func mustSetStatus(t *testing.T, q store.Querier, jobID string, to store.JobStatus, now time.Time) *store.Job {
	t.Helper()
	j, err := q.JobSetStatus(ctx(t), &store.JobSetStatusParams{ID: jobID, To: to, Now: now})
	if err != nil {
		t.Fatalf("JobSetStatus(%s -> %s): %v", jobID, to, err)
	}
	return j
}

func mustClaim(t *testing.T, q store.Querier, host string, now time.Time) (*store.Task, *store.Attempt) {
	t.Helper()
	task, att, err := q.TaskClaim(ctx(t), &store.TaskClaimParams{HostID: host, AttemptID: id.New(id.Attempt),
		ResourceProfile: json.RawMessage(`{"cpu_count":4}`), Now: now})
	if err != nil {
		t.Fatalf("TaskClaim: %v", err)
	}
	return task, att
}

func mustFinish(t *testing.T, q store.Querier, p *store.AttemptFinishParams) *store.Attempt {
	t.Helper()
	a, err := q.AttemptFinish(ctx(t), p)
	if err != nil {
		t.Fatalf("AttemptFinish(%s): %v", p.AttemptID, err)
	}
	return a
}

func mustTask(t *testing.T, q store.Querier, taskID string) *store.Task {
	t.Helper()
	task, err := q.TaskGet(ctx(t), taskID)
	if err != nil {
		t.Fatalf("TaskGet(%s): %v", taskID, err)
	}
	return task
}

func ptr[T any](v T) *T { return &v }

func jobIDs(js []*store.Job) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.ID
	}
	return out
}

func testJobCreateAndGet(t *testing.T, s store.Store) {
	f := setupJobs(t, s)
	b := mustAccount(t, s, "bob")
	p := f.jobParams(3, t0)
	p.Job.ClientRef, p.Job.Variant = ptr("ref-1"), ptr("v2")
	p.Job.Meta = json.RawMessage(`{"k":"v"}`)
	p.Job.Tags = []string{"x", "y", "x"}
	p.Job.TaskCount = 99 // ignored: the store counts the tasks
	j := mustJob(t, s, p)
	if j.Status != store.JobQueued || j.TaskCount != 3 || j.PushID != "psh_x" || j.ProjectName != "p" ||
		*j.ClientRef != "ref-1" || *j.Variant != "v2" || string(j.Meta) != `{"k":"v"}` ||
		string(j.Summary) != "{}" || !reflect.DeepEqual(j.Tags, []string{"x", "y", "x"}) ||
		!j.SubmittedAt.Equal(t0) || !j.UpdatedAt.Equal(t0) || j.StartedAt != nil || j.FinishedAt != nil {
		t.Errorf("created job = %+v", j)
	}
	got, err := s.JobGet(ctx(t), f.acct.ID, j.ID)
	if err != nil || !reflect.DeepEqual(got, j) {
		t.Fatalf("JobGet = %+v, %v; want %+v", got, err, j)
	}
	_, err = s.JobGet(ctx(t), b.ID, j.ID)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.JobGet(ctx(t), f.acct.ID, "job_nope")
	wantErr(t, err, store.ErrNotFound)
	if got, err := s.JobGetByID(ctx(t), j.ID); err != nil || got.AccountID != f.acct.ID {
		t.Fatalf("JobGetByID = %+v, %v", got, err)
	}
	_, err = s.JobGetByID(ctx(t), "job_nope")
	wantErr(t, err, store.ErrNotFound)

	// Absent optional fields come back absent.
	bare := f.jobParams(0, t0)
	bare.Job.Request, bare.Job.Payload = nil, nil
	bj := mustJob(t, s, bare)
	if bj.ClientRef != nil || bj.Variant != nil || bj.Tags == nil || len(bj.Tags) != 0 || string(bj.Payload) != "null" ||
		string(bj.Request) != "{}" || bj.TaskCount != 0 {
		t.Errorf("bare job = %+v", bj)
	}

	tasks, err := s.TaskList(ctx(t), j.ID)
	if err != nil || len(tasks) != 3 {
		t.Fatalf("TaskList = %d tasks, %v; want 3", len(tasks), err)
	}
	for i, task := range tasks {
		want := p.Tasks[i]
		if task.ID != want.ID || task.Index != int64(i) || task.JobID != j.ID || task.Status != store.TaskQueued ||
			task.Priority != store.PriorityNormal || !task.SubmittedAt.Equal(t0) || task.Attempts != 0 ||
			string(task.Payload) != string(want.Payload) || string(task.Meta) != string(want.Meta) ||
			string(task.Requirements) != `{"cpu":1}` || task.Result != nil || task.LatestProgress != nil ||
			task.ExitCode != nil || task.StartedAt != nil || task.CompletedAt != nil {
			t.Errorf("task %d = %+v", i, task)
		}
	}
	if got := mustTask(t, s, p.Tasks[1].ID); !reflect.DeepEqual(got, tasks[1]) {
		t.Errorf("TaskGet = %+v, want %+v", got, tasks[1])
	}
	_, err = s.TaskGet(ctx(t), "tsk_nope")
	wantErr(t, err, store.ErrNotFound)
	counts, err := s.TaskCountByStatus(ctx(t), j.ID)
	if err != nil || !reflect.DeepEqual(counts, map[store.TaskStatus]int64{store.TaskQueued: 3}) {
		t.Errorf("TaskCountByStatus = %v, %v; want queued 3", counts, err)
	}
	evs, err := s.JobEventList(ctx(t), j.ID, 10)
	if err != nil || len(evs) != 1 || evs[0].ID != p.Event.ID || evs[0].JobID != j.ID || evs[0].Kind != "job.submitted" ||
		string(evs[0].Data) != `{"n":1}` || !evs[0].CreatedAt.Equal(t0) {
		t.Fatalf("JobEventList = %+v, %v", evs, err)
	}
}

// testJobCreateAtomic checks that a job is stored whole or not at all, in its
// own transaction or in the caller's.
func testJobCreateAtomic(t *testing.T, s store.Store) {
	f := setupJobs(t, s)
	gone := func(p *store.JobCreateParams) {
		t.Helper()
		_, err := s.JobGetByID(ctx(t), p.Job.ID)
		wantErr(t, err, store.ErrNotFound)
		for _, task := range p.Tasks {
			_, err := s.TaskGet(ctx(t), task.ID)
			wantErr(t, err, store.ErrNotFound)
		}
		if evs, _ := s.JobEventList(ctx(t), p.Job.ID, 0); len(evs) != 0 {
			t.Errorf("events of a job that is not there: %v", evs)
		}
		if _, total, _ := s.JobList(ctx(t), &store.JobListParams{AccountID: f.acct.ID, Tag: "atomic"}); total != 0 {
			t.Errorf("tag rows of a job that is not there: %d", total)
		}
	}

	// The caller's transaction rolls back.
	p := f.jobParams(600, t0) // more than one insert batch
	p.Job.Tags = []string{"atomic"}
	boom := errors.New("boom")
	err := s.InTx(ctx(t), func(q store.Querier) error {
		mustJob(t, q, p)
		if err := q.JobEventCreate(ctx(t), &store.JobEvent{ID: id.New(id.Event), JobID: p.Job.ID, Kind: "job.queued", CreatedAt: t0}); err != nil {
			return err
		}
		return boom
	})
	wantErr(t, err, boom)
	gone(p)

	// A failure in JobCreate's own transaction (a duplicate task index in
	// the second batch) leaves nothing behind.
	p = f.jobParams(700, t0)
	p.Job.Tags = []string{"atomic"}
	p.Tasks[650].Index = 3
	if _, err := s.JobCreate(ctx(t), p); err == nil {
		t.Fatal("JobCreate with a duplicate task index succeeded")
	}
	gone(p)

	// The same job id twice is a conflict.
	p = f.jobParams(1, t0)
	mustJob(t, s, p)
	again := f.jobParams(1, t0)
	again.Job.ID = p.Job.ID
	_, err = s.JobCreate(ctx(t), again)
	wantErr(t, err, store.ErrConflict)

	// A committed transaction keeps the job and what was done with it.
	p = f.jobParams(2, t0)
	p.Job.Priority = store.PriorityHigh // ahead of the job above
	var claimed string
	if err := s.InTx(ctx(t), func(q store.Querier) error {
		mustJob(t, q, p)
		task, _ := mustClaim(t, q, "wkr_a", t0)
		claimed = task.ID
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if task := mustTask(t, s, claimed); task.Status != store.TaskRunning || task.JobID != p.Job.ID {
		t.Errorf("claimed in a committed tx: %+v", task)
	}

	// Neither a terminal status nor a missing first event is accepted.
	p = f.jobParams(1, t0)
	p.Job.Status = store.JobCompleted
	if _, err := s.JobCreate(ctx(t), p); err == nil {
		t.Error("JobCreate of a completed job succeeded")
	}
	p = f.jobParams(1, t0)
	p.Event.ID = ""
	if _, err := s.JobCreate(ctx(t), p); err == nil {
		t.Error("JobCreate without an event succeeded")
	}
	gone(p)
}

// testJobCreateLarge stores a 10,000-task job and claims from a queue that
// deep. It logs the times; it asserts none, as machines differ.
func testJobCreateLarge(t *testing.T, s store.Store) {
	f := setupJobs(t, s)
	const n = 10_000
	p := f.jobParams(n, t0)
	start := time.Now()
	mustJob(t, s, p)
	t.Logf("%s: JobCreate of %d tasks took %v", s.Engine(), n, time.Since(start))

	start = time.Now()
	tasks, err := s.TaskList(ctx(t), p.Job.ID)
	if err != nil || len(tasks) != n {
		t.Fatalf("TaskList = %d tasks, %v; want %d", len(tasks), err, n)
	}
	t.Logf("%s: TaskList of %d tasks took %v", s.Engine(), n, time.Since(start))
	for i, task := range tasks {
		if task.Index != int64(i) || task.ID != p.Tasks[i].ID {
			t.Fatalf("task %d = index %d id %s, want %s", i, task.Index, task.ID, p.Tasks[i].ID)
		}
	}

	const claims = 300
	start = time.Now()
	for i := range claims {
		task, _ := mustClaim(t, s, "wkr_a", t0.Add(time.Second))
		if task.Index != int64(i) {
			t.Fatalf("claim %d took task %d, want %d", i, task.Index, i)
		}
	}
	el := time.Since(start)
	t.Logf("%s: %d claims from a queue of %d took %v (%.0f claims/s)", s.Engine(), claims, n, el, claims/el.Seconds())
	counts, _ := s.TaskCountByStatus(ctx(t), p.Job.ID)
	if counts[store.TaskQueued] != n-claims || counts[store.TaskRunning] != claims {
		t.Errorf("counts = %v", counts)
	}
}

func testJobList(t *testing.T, s store.Store) {
	f := setupJobs(t, s)
	p2 := mustProject(t, s, f.acct.ID, "p2")
	bob := jobFixture{acct: mustAccount(t, s, "bob")}
	bob.proj = mustProject(t, s, bob.acct.ID, "p")

	// Ten jobs of alice's, one a minute; spec is what varies.
	type spec struct {
		status store.JobStatus
		typ    string
		tags   []string
		other  bool // in project p2
	}
	specs := []spec{
		{store.JobQueued, "structured_runner", []string{"nightly"}, false},
		{store.JobRunning, "sweep", nil, false},
		{store.JobCompleted, "sweep", []string{"nightly", "gpu"}, true},
		{store.JobFailed, "structured_runner", []string{"gpu"}, false},
		{store.JobPlanning, "map_reduce", nil, true},
		{store.JobCancelled, "structured_runner", []string{"nightly"}, false},
		{store.JobRunning, "benchmark", []string{"nightly"}, true},
		{store.JobQueued, "structured_runner", nil, false},
		{store.JobCompleted, "sweep", []string{"gpu"}, false},
		{store.JobQueued, "structured_runner", []string{"nightly"}, true},
	}
	path := map[store.JobStatus][]store.JobStatus{
		store.JobRunning:   {store.JobRunning},
		store.JobCompleted: {store.JobRunning, store.JobCompleted},
		store.JobFailed:    {store.JobRunning, store.JobFailed},
		store.JobCancelled: {store.JobCancelled},
	}
	var all []string // newest first
	for i, sp := range specs {
		p := f.jobParams(1, t0.Add(time.Duration(i)*time.Minute))
		p.Job.Type, p.Job.Tags = sp.typ, sp.tags
		if sp.other {
			p.Job.ProjectID, p.Job.ProjectName = p2.ID, p2.Name
		}
		if sp.status == store.JobPlanning {
			p.Job.Status = store.JobPlanning
		}
		j := mustJob(t, s, p)
		for _, to := range path[sp.status] {
			mustSetStatus(t, s, j.ID, to, t0.Add(time.Hour))
		}
		all = append([]string{j.ID}, all...)
	}
	// bob's jobs share every attribute and must never show.
	var bobJob string
	for i := range 3 {
		p := bob.jobParams(1, t0.Add(time.Duration(i)*time.Minute))
		p.Job.Tags = []string{"nightly", "gpu"}
		bobJob = mustJob(t, s, p).ID
	}
	pick := func(idx ...int) []string { // indexes into specs, returned newest first
		var out []string
		for i := len(specs) - 1; i >= 0; i-- {
			if slices.Contains(idx, i) {
				out = append(out, all[len(specs)-1-i])
			}
		}
		return out
	}
	since := t0.Add(6 * time.Minute)
	for _, tc := range []struct {
		name string
		p    store.JobListParams
		want []string
	}{
		{"all", store.JobListParams{}, all},
		{"statuses", store.JobListParams{Statuses: []store.JobStatus{store.JobRunning, store.JobFailed}}, pick(1, 3, 6)},
		{"one status", store.JobListParams{Statuses: []store.JobStatus{store.JobPlanning}}, pick(4)},
		{"project", store.JobListParams{ProjectID: p2.ID}, pick(2, 4, 6, 9)},
		{"type", store.JobListParams{Type: "sweep"}, pick(1, 2, 8)},
		{"tag", store.JobListParams{Tag: "gpu"}, pick(2, 3, 8)},
		{"unknown tag", store.JobListParams{Tag: "nope"}, nil},
		{"since is inclusive", store.JobListParams{Since: &since}, pick(6, 7, 8, 9)},
		{"ids", store.JobListParams{IDs: []string{all[0], all[5], bobJob, "job_nope"}}, []string{all[0], all[5]}},
		{"combined", store.JobListParams{Statuses: []store.JobStatus{store.JobQueued, store.JobRunning}, Tag: "nightly",
			ProjectID: p2.ID, Type: "benchmark"}, pick(6)},
		{"combined with since", store.JobListParams{Tag: "nightly", Since: &since, Statuses: []store.JobStatus{store.JobQueued}}, pick(9)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p
			p.AccountID = f.acct.ID
			js, total, err := s.JobList(ctx(t), &p)
			if err != nil {
				t.Fatal(err)
			}
			if got := jobIDs(js); !slices.Equal(got, tc.want) || total != len(tc.want) {
				t.Errorf("got %v (total %d), want %v (total %d)", got, total, tc.want, len(tc.want))
			}
		})
	}
	js, total, _ := s.JobList(ctx(t), &store.JobListParams{AccountID: bob.acct.ID})
	if total != 3 || len(js) != 3 || slices.ContainsFunc(js, func(j *store.Job) bool { return j.AccountID != bob.acct.ID }) {
		t.Errorf("bob's list = %v, total %d", jobIDs(js), total)
	}

	// Pages cover the list once, in order, with the total on each.
	var paged []string
	for off := 0; off < 12; off += 3 {
		js, total, err := s.JobList(ctx(t), &store.JobListParams{AccountID: f.acct.ID, Limit: 3, Offset: off})
		if err != nil || total != 10 {
			t.Fatalf("page at %d: total %d, %v", off, total, err)
		}
		paged = append(paged, jobIDs(js)...)
	}
	if !slices.Equal(paged, all) {
		t.Errorf("pages = %v, want %v", paged, all)
	}
	js, total, _ = s.JobList(ctx(t), &store.JobListParams{AccountID: f.acct.ID, Tag: "nightly", Limit: 2, Offset: 1})
	if want := pick(0, 2, 5, 6, 9)[1:3]; !slices.Equal(jobIDs(js), want) || total != 5 {
		t.Errorf("tag page = %v (total %d), want %v (total 5)", jobIDs(js), total, want)
	}

	// Jobs submitted at the same instant are ordered by id, so pages
	// neither repeat nor skip one.
	var ties []string
	for range 5 {
		tp := f.jobParams(0, t0.Add(time.Hour))
		tp.Job.ProjectID = "prj_ties"
		ties = append(ties, mustJob(t, s, tp).ID)
	}
	slices.Sort(ties)
	slices.Reverse(ties)
	var tiePages []string
	for off := 0; off < 5; off += 2 {
		js, _, _ := s.JobList(ctx(t), &store.JobListParams{AccountID: f.acct.ID, ProjectID: "prj_ties", Limit: 2, Offset: off})
		tiePages = append(tiePages, jobIDs(js)...)
	}
	if !slices.Equal(tiePages, ties) {
		t.Errorf("pages over equal times = %v, want %v", tiePages, ties)
	}
}

// reach creates a job and walks it to status st along allowed transitions.
func reach(t *testing.T, s store.Store, f jobFixture, st store.JobStatus) *store.Job {
	t.Helper()
	p := f.jobParams(1, t0)
	if st == store.JobPlanning {
		p.Job.Status = store.JobPlanning
	}
	j := mustJob(t, s, p)
	var path []store.JobStatus
	switch st {
	case store.JobRunning:
		path = []store.JobStatus{store.JobRunning}
	case store.JobCompleted, store.JobPartial, store.JobFailed:
		path = []store.JobStatus{store.JobRunning, st}
	case store.JobCancelled:
		path = []store.JobStatus{store.JobCancelled}
	}
	for _, to := range path {
		j = mustSetStatus(t, s, j.ID, to, t0.Add(time.Minute))
	}
	if j.Status != st {
		t.Fatalf("reached %s, want %s", j.Status, st)
	}
	return j
}

// testJobTransitions walks the transition table pair by pair: the store
// makes exactly the moves the table allows.
func testJobTransitions(t *testing.T, s store.Store) {
	f := setupJobs(t, s)
	for _, from := range store.JobStatuses {
		for _, to := range store.JobStatuses {
			j := reach(t, s, f, from)
			got, err := s.JobSetStatus(ctx(t), &store.JobSetStatusParams{ID: j.ID, From: []store.JobStatus{from}, To: to,
				Now: t0.Add(time.Hour)})
			if from.CanTransition(to) {
				if err != nil || got.Status != to {
					t.Errorf("%s -> %s: got %v, %v; want it allowed", from, to, got, err)
				}
				continue
			}
			if !errors.Is(err, store.ErrConflict) {
				t.Errorf("%s -> %s: got error %v, want ErrConflict", from, to, err)
			}
			if now, _ := s.JobGetByID(ctx(t), j.ID); now.Status != from || !now.UpdatedAt.Equal(j.UpdatedAt) {
				t.Errorf("%s -> %s refused but the job changed: %+v", from, to, now)
			}
		}
	}

	// From must name the status the job is in.
	j := reach(t, s, f, store.JobQueued)
	_, err := s.JobSetStatus(ctx(t), &store.JobSetStatusParams{ID: j.ID, From: []store.JobStatus{store.JobPlanning},
		To: store.JobCancelled, Now: t0})
	wantErr(t, err, store.ErrConflict)
	// From may list several; nil means any status the table allows.
	got, err := s.JobSetStatus(ctx(t), &store.JobSetStatusParams{ID: j.ID,
		From: []store.JobStatus{store.JobPlanning, store.JobQueued}, To: store.JobCancelled, Now: t0})
	if err != nil || got.Status != store.JobCancelled {
		t.Errorf("cancel from [planning queued] = %v, %v", got, err)
	}
	j = reach(t, s, f, store.JobRunning)
	if got := mustSetStatus(t, s, j.ID, store.JobPartial, t0); got.Status != store.JobPartial {
		t.Errorf("running -> partial with nil From = %s", got.Status)
	}
	_, err = s.JobSetStatus(ctx(t), &store.JobSetStatusParams{ID: j.ID, To: store.JobCancelled, Now: t0})
	wantErr(t, err, store.ErrConflict)

	// A job that does not exist is not found, allowed move or not.
	_, err = s.JobSetStatus(ctx(t), &store.JobSetStatusParams{ID: "job_nope", To: store.JobCancelled, Now: t0})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.JobSetStatus(ctx(t), &store.JobSetStatusParams{ID: "job_nope", From: []store.JobStatus{store.JobCompleted},
		To: store.JobRunning, Now: t0})
	wantErr(t, err, store.ErrNotFound)
}

func testJobSetStatusFields(t *testing.T, s store.Store) {
	f := setupJobs(t, s)
	p := f.jobParams(1, t0)
	p.Job.Summary = json.RawMessage(`{"billing_estimate":1}`)
	j := mustJob(t, s, p)
	t1, t2, t3 := t0.Add(time.Second), t0.Add(2*time.Second), t0.Add(3*time.Second)
	j = mustSetStatus(t, s, j.ID, store.JobRunning, t1)
	if !j.StartedAt.Equal(t1) || !j.UpdatedAt.Equal(t1) || j.FinishedAt != nil || string(j.Summary) != `{"billing_estimate":1}` {
		t.Errorf("running job = %+v", j)
	}
	j, err := s.JobSetStatus(ctx(t), &store.JobSetStatusParams{ID: j.ID, From: []store.JobStatus{store.JobRunning},
		To: store.JobFailed, Error: "task 0 exited 1", RecommendedAction: "read the task output",
		Summary: json.RawMessage(`{"failed":1}`), Now: t2})
	if err != nil {
		t.Fatal(err)
	}
	if !j.StartedAt.Equal(t1) || !j.FinishedAt.Equal(t2) || !j.UpdatedAt.Equal(t2) || j.Error != "task 0 exited 1" ||
		j.RecommendedAction != "read the task output" || string(j.Summary) != `{"failed":1}` {
		t.Errorf("failed job = %+v", j)
	}

	// A job cancelled before it ran never started.
	p = f.jobParams(1, t0)
	p.Job.Status = store.JobPlanning
	c := mustJob(t, s, p)
	c = mustSetStatus(t, s, c.ID, store.JobCancelled, t3)
	if c.StartedAt != nil || !c.FinishedAt.Equal(t3) || c.Error != "" {
		t.Errorf("cancelled job = %+v", c)
	}
	if got, _ := s.JobGet(ctx(t), f.acct.ID, c.ID); !reflect.DeepEqual(got, c) {
		t.Errorf("JobGet after the move = %+v, want %+v", got, c)
	}
}

func testProjectActiveJobCount(t *testing.T, s store.Store) {
	f := setupJobs(t, s)
	for _, st := range store.JobStatuses {
		reach(t, s, f, st)
	}
	n, err := s.ProjectActiveJobCount(ctx(t), f.proj.ID)
	if err != nil || n != 3 {
		t.Errorf("ProjectActiveJobCount = %d, %v; want 3 (planning, queued, running)", n, err)
	}
	other := mustProject(t, s, f.acct.ID, "other")
	if n, _ := s.ProjectActiveJobCount(ctx(t), other.ID); n != 0 {
		t.Errorf("other project's count = %d, want 0", n)
	}
}

func testTaskClaimOrder(t *testing.T, s store.Store) {
	f := setupJobs(t, s)
	_, _, err := s.TaskClaim(ctx(t), &store.TaskClaimParams{HostID: "wkr_a", AttemptID: id.New(id.Attempt), Now: t0})
	wantErr(t, err, store.ErrNotFound)

	mk := func(n, prio int, at time.Duration, status store.JobStatus) *store.JobCreateParams {
		p := f.jobParams(n, t0.Add(at))
		p.Job.Priority, p.Job.Status = prio, status
		mustJob(t, s, p)
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
	if task, _ := mustClaim(t, s, "wkr_a", now); task.ID != planning.Tasks[0].ID {
		t.Errorf("claimed %s, want the formerly planning job's task", task.ID)
	}
}

// testTaskClaimConcurrent has many claimers race for the same queue: every
// task is claimed exactly once, and none fails.
func testTaskClaimConcurrent(t *testing.T, s store.Store) {
	f := setupJobs(t, s)
	const jobs, perJob, claimers = 3, 100, 16
	want := map[string]bool{}
	for i := range jobs {
		p := f.jobParams(perJob, t0.Add(time.Duration(i)*time.Second))
		mustJob(t, s, p)
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
	f := setupJobs(t, s)
	p := f.jobParams(200, t0)
	mustJob(t, s, p)
	const claimers = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	claims := 0
	cancelNow := make(chan struct{})
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
				mu.Unlock()
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

func testAttemptLifecycle(t *testing.T, s store.Store) {
	f := setupJobs(t, s)
	p := f.jobParams(1, t0)
	mustJob(t, s, p)
	taskID := p.Tasks[0].ID
	t1 := t0.Add(time.Second)
	_, a1 := mustClaim(t, s, "wkr_a", t1)

	open, err := s.AttemptListOpen(ctx(t), "")
	if err != nil || len(open) != 1 || open[0].ID != a1.ID {
		t.Fatalf("AttemptListOpen = %v, %v", open, err)
	}
	if open, _ := s.AttemptListOpen(ctx(t), "wkr_a"); len(open) != 1 {
		t.Errorf("open on wkr_a = %v", open)
	}
	if open, _ := s.AttemptListOpen(ctx(t), "wkr_b"); len(open) != 0 {
		t.Errorf("open on wkr_b = %v", open)
	}

	// Progress is taken only while the task runs.
	wantErr(t, s.TaskSetProgress(ctx(t), &store.TaskSetProgressParams{TaskID: "tsk_nope", Now: t1}), store.ErrNotFound)
	t2 := t0.Add(2 * time.Second)
	if err := s.AttemptStart(ctx(t), a1.ID, t2); err != nil {
		t.Fatal(err)
	}
	wantErr(t, s.AttemptStart(ctx(t), a1.ID, t2), store.ErrConflict)
	wantErr(t, s.AttemptStart(ctx(t), "att_nope", t2), store.ErrNotFound)
	if err := s.TaskSetProgress(ctx(t), &store.TaskSetProgressParams{TaskID: taskID,
		Progress: json.RawMessage(`{"pct":50}`), Output: ptr("line 1\n"), Now: t2}); err != nil {
		t.Fatal(err)
	}
	if err := s.TaskSetProgress(ctx(t), &store.TaskSetProgressParams{TaskID: taskID, Now: t2}); err != nil {
		t.Fatal(err)
	}
	if task := mustTask(t, s, taskID); string(task.LatestProgress) != `{"pct":50}` || task.Output != "line 1\n" {
		t.Errorf("task after progress = %+v", task)
	}

	// A failed run requeues the task and keeps its output for the next.
	t3 := t0.Add(3 * time.Second)
	fin := mustFinish(t, s, &store.AttemptFinishParams{AttemptID: a1.ID, Status: store.AttemptFailed, TerminalKind: "exit",
		RetryDecision: "retry", ExitCode: ptr(int64(1)), TaskStatus: store.TaskQueued, RetriesUsed: 1,
		Output: ptr("out 1"), ErrorText: ptr("err 1"), Now: t3})
	if fin.Status != store.AttemptFailed || !fin.EndedAt.Equal(t3) || !fin.StartedAt.Equal(t2) || *fin.ExitCode != 1 ||
		fin.TerminalKind != "exit" || fin.RetryDecision != "retry" || !fin.UpdatedAt.Equal(t3) {
		t.Errorf("finished attempt = %+v", fin)
	}
	task := mustTask(t, s, taskID)
	if task.Status != store.TaskQueued || task.RetriesUsed != 1 || task.Output != "out 1" || task.ErrorText != "err 1" ||
		*task.ExitCode != 1 || task.CompletedAt != nil || !task.StartedAt.Equal(t1) || task.Attempts != 1 {
		t.Errorf("requeued task = %+v", task)
	}
	_, err = s.AttemptFinish(ctx(t), &store.AttemptFinishParams{AttemptID: a1.ID, Status: store.AttemptSucceeded,
		TaskStatus: store.TaskSucceeded, Now: t3})
	wantErr(t, err, store.ErrConflict)
	_, err = s.AttemptFinish(ctx(t), &store.AttemptFinishParams{AttemptID: "att_nope", Status: store.AttemptSucceeded,
		TaskStatus: store.TaskSucceeded, Now: t3})
	wantErr(t, err, store.ErrNotFound)
	if again := mustTask(t, s, taskID); !reflect.DeepEqual(again, task) {
		t.Errorf("refused finish changed the task: %+v", again)
	}
	wantErr(t, s.TaskSetProgress(ctx(t), &store.TaskSetProgressParams{TaskID: taskID, Output: ptr("late"), Now: t3}), store.ErrConflict)
	wantErr(t, s.AttemptStart(ctx(t), a1.ID, t3), store.ErrConflict)

	// The second attempt is lost before it starts: a free requeue that keeps
	// the last exit code.
	t4 := t0.Add(4 * time.Second)
	task, a2 := mustClaim(t, s, "wkr_b", t4)
	if a2.Number != 2 || task.Attempts != 2 || task.LastHostID != "wkr_b" || !task.StartedAt.Equal(t1) {
		t.Errorf("second claim: task %+v attempt %+v", task, a2)
	}
	mustFinish(t, s, &store.AttemptFinishParams{AttemptID: a2.ID, Status: store.AttemptLost, TerminalKind: "lost",
		RetryDecision: "requeue_free", TaskStatus: store.TaskQueued, RetriesUsed: 1, InfraRequeues: 1, Now: t4})
	task = mustTask(t, s, taskID)
	if task.Status != store.TaskQueued || task.InfraRequeues != 1 || *task.ExitCode != 1 || task.Output != "out 1" {
		t.Errorf("task after a lost attempt = %+v", task)
	}

	// The third succeeds.
	t5 := t0.Add(5 * time.Second)
	_, a3 := mustClaim(t, s, "wkr_c", t5)
	if err := s.AttemptStart(ctx(t), a3.ID, t5); err != nil {
		t.Fatal(err)
	}
	mustFinish(t, s, &store.AttemptFinishParams{AttemptID: a3.ID, Status: store.AttemptSucceeded, TerminalKind: "exit",
		RetryDecision: "none", ExitCode: ptr(int64(0)), TaskStatus: store.TaskSucceeded, Result: json.RawMessage(`{"v":1}`),
		Output: ptr("final"), RetriesUsed: 1, InfraRequeues: 1, DeclaredInfra: 0, Now: t5})
	task = mustTask(t, s, taskID)
	if task.Status != store.TaskSucceeded || !task.CompletedAt.Equal(t5) || string(task.Result) != `{"v":1}` ||
		*task.ExitCode != 0 || task.Output != "final" || task.ErrorText != "err 1" || task.Attempts != 3 {
		t.Errorf("succeeded task = %+v", task)
	}
	atts, err := s.AttemptList(ctx(t), p.Job.ID)
	if err != nil || len(atts) != 3 || atts[0].ID != a1.ID || atts[1].ID != a2.ID || atts[2].ID != a3.ID {
		t.Fatalf("AttemptList = %v, %v", atts, err)
	}
	if atts[1].Status != store.AttemptLost || atts[1].StartedAt != nil || !atts[1].EndedAt.Equal(t4) {
		t.Errorf("lost attempt = %+v", atts[1])
	}
	if open, _ := s.AttemptListOpen(ctx(t), ""); len(open) != 0 {
		t.Errorf("open attempts after the end = %v", open)
	}
	if counts, _ := s.TaskCountByStatus(ctx(t), p.Job.ID); !reflect.DeepEqual(counts, map[store.TaskStatus]int64{store.TaskSucceeded: 1}) {
		t.Errorf("counts = %v", counts)
	}

	// Malformed finishes are refused before they touch anything.
	for _, bad := range []*store.AttemptFinishParams{
		{AttemptID: a3.ID, Status: store.AttemptRunning, TaskStatus: store.TaskSucceeded, Now: t5},
		{AttemptID: a3.ID, Status: store.AttemptSucceeded, TaskStatus: store.TaskRunning, Now: t5},
	} {
		if _, err := s.AttemptFinish(ctx(t), bad); err == nil {
			t.Errorf("AttemptFinish(%s, task %s) succeeded", bad.Status, bad.TaskStatus)
		}
	}
}

func testTaskCancelOpen(t *testing.T, s store.Store) {
	f := setupJobs(t, s)
	p := f.jobParams(4, t0)
	mustJob(t, s, p)
	other := f.jobParams(1, t0.Add(time.Hour))
	mustJob(t, s, other)
	t1 := t0.Add(time.Second)
	_, a0 := mustClaim(t, s, "wkr_a", t1) // task 0: assigned
	_, a1 := mustClaim(t, s, "wkr_a", t1) // task 1: running
	if err := s.AttemptStart(ctx(t), a1.ID, t1); err != nil {
		t.Fatal(err)
	}
	_, a2 := mustClaim(t, s, "wkr_b", t1) // task 2: succeeded
	mustFinish(t, s, &store.AttemptFinishParams{AttemptID: a2.ID, Status: store.AttemptSucceeded, TerminalKind: "exit",
		ExitCode: ptr(int64(0)), TaskStatus: store.TaskSucceeded, Now: t1})
	_, a3 := mustClaim(t, s, "wkr_b", t1) // task 3: back in the queue after an out-of-memory kill
	mustFinish(t, s, &store.AttemptFinishParams{AttemptID: a3.ID, Status: store.AttemptInfra, TerminalKind: "oom",
		ExitCode: ptr(int64(137)), TaskStatus: store.TaskQueued, InfraRequeues: 1, Now: t1})

	t2 := t0.Add(2 * time.Second)
	ids, err := s.TaskCancelOpen(ctx(t), p.Job.ID, t2)
	want := []string{a0.ID, a1.ID}
	slices.Sort(want)
	if err != nil || !slices.Equal(ids, want) {
		t.Fatalf("TaskCancelOpen = %v, %v; want %v", ids, err, want)
	}
	tasks, _ := s.TaskList(ctx(t), p.Job.ID)
	for i, task := range tasks {
		if i == 2 {
			if task.Status != store.TaskSucceeded || !task.CompletedAt.Equal(t1) {
				t.Errorf("finished task was touched: %+v", task)
			}
			continue
		}
		if task.Status != store.TaskCancelled || !task.CompletedAt.Equal(t2) {
			t.Errorf("task %d = %+v, want cancelled at %v", i, task, t2)
		}
	}
	atts, _ := s.AttemptList(ctx(t), p.Job.ID)
	// By task index, then number: tasks 0, 1, 2, 3.
	if got := []string{atts[0].ID, atts[1].ID, atts[2].ID, atts[3].ID}; !slices.Equal(got, []string{a0.ID, a1.ID, a2.ID, a3.ID}) {
		t.Errorf("AttemptList order = %v", got)
	}
	for _, a := range atts {
		switch a.ID {
		case a0.ID, a1.ID:
			if a.Status != store.AttemptCancelled || a.TerminalKind != "cancelled" || !a.EndedAt.Equal(t2) {
				t.Errorf("open attempt after cancel = %+v", a)
			}
		case a2.ID:
			if a.Status != store.AttemptSucceeded {
				t.Errorf("ended attempt was touched: %+v", a)
			}
		}
	}
	ids, err = s.TaskCancelOpen(ctx(t), p.Job.ID, t2)
	if err != nil || len(ids) != 0 {
		t.Errorf("second TaskCancelOpen = %v, %v; want nothing", ids, err)
	}
	_, err = s.AttemptFinish(ctx(t), &store.AttemptFinishParams{AttemptID: a1.ID, Status: store.AttemptSucceeded,
		TaskStatus: store.TaskSucceeded, Now: t2})
	wantErr(t, err, store.ErrConflict)
	if task := mustTask(t, s, other.Tasks[0].ID); task.Status != store.TaskQueued {
		t.Errorf("another job's task was cancelled: %+v", task)
	}
	if open, _ := s.AttemptListOpen(ctx(t), ""); len(open) != 0 {
		t.Errorf("open attempts after cancel = %v", open)
	}
}

func testJobEvents(t *testing.T, s store.Store) {
	f := setupJobs(t, s)
	p := f.jobParams(1, t0)
	mustJob(t, s, p)
	other := f.jobParams(1, t0)
	mustJob(t, s, other)
	// Written out of time order; read back in the order written (their
	// positions), whatever their times.
	for _, e := range []store.JobEvent{
		{Kind: "task.started", TaskID: p.Tasks[0].ID, CreatedAt: t0.Add(2 * time.Second)},
		{Kind: "job.queued", CreatedAt: t0.Add(time.Second)},
		{Kind: "attempt.lost", TaskID: p.Tasks[0].ID, AttemptID: "att_x", Data: json.RawMessage(`{"host":"wkr_a"}`),
			CreatedAt: t0.Add(3 * time.Second)},
	} {
		e.ID, e.JobID = id.New(id.Event), p.Job.ID
		if err := s.JobEventCreate(ctx(t), &e); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := s.JobEventList(ctx(t), p.Job.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	if fmt.Sprint(kinds) != "[job.submitted task.started job.queued attempt.lost]" {
		t.Errorf("kinds = %v", kinds)
	}
	last := evs[3]
	if last.TaskID != p.Tasks[0].ID || last.AttemptID != "att_x" || string(last.Data) != `{"host":"wkr_a"}` ||
		string(evs[1].Data) != "{}" {
		t.Errorf("events = %+v", evs)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Position <= evs[i-1].Position {
			t.Errorf("positions not increasing: %d then %d", evs[i-1].Position, evs[i].Position)
		}
	}
	if evs, _ := s.JobEventList(ctx(t), p.Job.ID, 2); len(evs) != 2 || evs[1].Kind != "task.started" {
		t.Errorf("limit 2 = %v", evs)
	}
	if evs, _ := s.JobEventList(ctx(t), other.Job.ID, 0); len(evs) != 1 {
		t.Errorf("other job's events = %v", evs)
	}
	if err := s.JobEventCreate(ctx(t), &store.JobEvent{ID: id.New(id.Event), JobID: "job_nope", Kind: "x", CreatedAt: t0}); err == nil {
		t.Error("an event of a job that does not exist was stored")
	}
}

// testJobSchemaChecks shows that the database itself refuses impossible rows
// and that deleting a job removes everything hanging off it.
func testJobSchemaChecks(t *testing.T, s store.Store) {
	f := setupJobs(t, s)
	p := f.jobParams(2, t0)
	p.Job.Tags = []string{"keep"}
	mustJob(t, s, p)
	_, att := mustClaim(t, s, "wkr_a", t0)
	for _, bad := range []struct{ what, sql string }{
		{"unknown job status", "UPDATE jobs SET status = 'paused' WHERE id = $1"},
		{"terminal job without finished_at", "UPDATE jobs SET status = 'completed' WHERE id = $1"},
		{"running job without started_at", "UPDATE jobs SET status = 'running' WHERE id = $1"},
		{"unknown priority", "UPDATE jobs SET priority = 7 WHERE id = $1"},
		{"unknown task status", "UPDATE tasks SET status = 'paused' WHERE job_id = $1"},
		{"terminal task without completed_at", "UPDATE tasks SET status = 'failed' WHERE job_id = $1"},
		{"unknown attempt status", "UPDATE attempts SET status = 'paused' WHERE job_id = $1"},
		{"ended attempt without ended_at", "UPDATE attempts SET status = 'failed' WHERE job_id = $1"},
		{"task of a missing job", "UPDATE tasks SET job_id = 'job_nope' WHERE job_id = $1"},
	} {
		if err := rawExec(t, s, bad.sql, p.Job.ID); err == nil {
			t.Errorf("%s: the database accepted it", bad.what)
		}
	}
	if err := rawExec(t, s, "UPDATE attempts SET job_id = $2 WHERE id = $1", att.ID, "job_nope"); err == nil {
		t.Error("attempt of a missing job: the database accepted it")
	}

	if err := rawExec(t, s, "DELETE FROM jobs WHERE id = $1", p.Job.ID); err != nil {
		t.Fatalf("delete job: %v", err)
	}
	for _, task := range p.Tasks {
		_, err := s.TaskGet(ctx(t), task.ID)
		wantErr(t, err, store.ErrNotFound)
	}
	if atts, _ := s.AttemptList(ctx(t), p.Job.ID); len(atts) != 0 {
		t.Errorf("attempts survived their job: %v", atts)
	}
	if open, _ := s.AttemptListOpen(ctx(t), ""); len(open) != 0 {
		t.Errorf("open attempts survived their job: %v", open)
	}
	// Recreating the very same job (ids of tasks, tags and event included)
	// works only if nothing of the first one was left.
	if _, err := s.JobCreate(ctx(t), p); err != nil {
		t.Errorf("recreating a deleted job: %v", err)
	}
}

// testTaskClaimFit: a claim takes the first task that fits the free
// capacity, and passes over a task its host ran last when asked to.
func testTaskClaimFit(t *testing.T, s store.Store) {
	f := setupJobs(t, s)
	t0 := time.Unix(1_800_000_000, 0).UTC()
	p := f.jobParams(2, t0)
	p.Tasks[0].CPU, p.Tasks[0].MemoryMB = 4, 8192
	p.Tasks[1].CPU, p.Tasks[1].MemoryMB = 1, 512
	mustJob(t, s, p)
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

// testJobDependencies: dependency rows are written with the job and answer
// both directions.
func testJobDependencies(t *testing.T, s store.Store) {
	f := setupJobs(t, s)
	t0 := time.Unix(1_800_000_000, 0).UTC()
	a := mustJob(t, s, f.jobParams(1, t0))
	b := mustJob(t, s, f.jobParams(1, t0))
	p := f.jobParams(1, t0)
	p.Job.Status = store.JobPlanning
	p.DependsOn = []string{b.ID, a.ID, a.ID}
	c := mustJob(t, s, p)
	got, err := s.JobDependencyStatuses(ctx(t), c.ID)
	if err != nil || len(got) != 2 || got[a.ID] != store.JobQueued || got[b.ID] != store.JobQueued {
		t.Fatalf("JobDependencyStatuses: got %v, %v", got, err)
	}
	deps, err := s.JobDependents(ctx(t), a.ID)
	if err != nil || len(deps) != 1 || deps[0] != c.ID {
		t.Fatalf("JobDependents: got %v, %v", deps, err)
	}
	mustSetStatus(t, s, c.ID, store.JobQueued, t0)
	if deps, err := s.JobDependents(ctx(t), a.ID); err != nil || len(deps) != 0 {
		t.Fatalf("JobDependents of a job whose dependent left planning: got %v, %v", deps, err)
	}
}

// testJobEventFeed: the feed lists committed events after a position, by
// position, filtered by job, account or project.
func testJobEventFeed(t *testing.T, s store.Store) {
	f := setupJobs(t, s)
	a := f.jobParams(1, t0)
	mustJob(t, s, a)
	b := f.jobParams(1, t0)
	mustJob(t, s, b)
	bob := mustAccount(t, s, "bob")
	g := jobFixture{acct: bob, proj: mustProject(t, s, bob.ID, "q")}
	c := g.jobParams(1, t0)
	mustJob(t, s, c)
	for _, jobID := range []string{a.Job.ID, b.Job.ID, c.Job.ID, a.Job.ID} {
		if err := s.JobEventCreate(ctx(t), &store.JobEvent{ID: id.New(id.Event), JobID: jobID, Kind: "job.queued", CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	feed := func(p store.JobEventFeedParams) []string {
		t.Helper()
		evs, err := s.JobEventFeed(ctx(t), &p)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		var last int64
		for _, e := range evs {
			if e.Position <= last || e.Position <= p.After {
				t.Errorf("position %d after %d (cursor %d)", e.Position, last, p.After)
			}
			last = e.Position
			out = append(out, map[string]string{a.Job.ID: "a", b.Job.ID: "b", c.Job.ID: "c"}[e.JobID]+":"+e.Kind)
		}
		return out
	}
	all := feed(store.JobEventFeedParams{})
	want := "[a:job.submitted b:job.submitted c:job.submitted a:job.queued b:job.queued c:job.queued a:job.queued]"
	if fmt.Sprint(all) != want {
		t.Errorf("feed = %v, want %s", all, want)
	}
	last, err := s.JobEventLastPosition(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := s.JobEventFeed(ctx(t), &store.JobEventFeedParams{})
	if last != evs[len(evs)-1].Position {
		t.Errorf("last position = %d, want %d", last, evs[len(evs)-1].Position)
	}
	if got := feed(store.JobEventFeedParams{After: evs[3].Position}); fmt.Sprint(got) != "[b:job.queued c:job.queued a:job.queued]" {
		t.Errorf("after the 4th = %v", got)
	}
	if got := feed(store.JobEventFeedParams{JobIDs: []string{a.Job.ID, c.Job.ID}, Limit: 3}); fmt.Sprint(got) != "[a:job.submitted c:job.submitted a:job.queued]" {
		t.Errorf("jobs a, c, limit 3 = %v", got)
	}
	if got := feed(store.JobEventFeedParams{AccountID: bob.ID}); fmt.Sprint(got) != "[c:job.submitted c:job.queued]" {
		t.Errorf("bob's = %v", got)
	}
	if got := feed(store.JobEventFeedParams{ProjectID: f.proj.ID, After: evs[2].Position}); fmt.Sprint(got) != "[a:job.queued b:job.queued a:job.queued]" {
		t.Errorf("project p after the 3rd = %v", got)
	}
	if got := feed(store.JobEventFeedParams{After: last}); len(got) != 0 {
		t.Errorf("after the last = %v", got)
	}
	if n, err := s.TaskQueuedCount(ctx(t)); err != nil || n != 3 {
		t.Errorf("queued tasks = %d, %v; want 3", n, err)
	}
}

// testJobEventFeedCommitOrder: an event written early by a transaction that
// commits late is still read by a reader that already passed the events
// committed meanwhile: positions follow commit order, not insert order.
// SQLite has one writer, so the interleaving cannot happen there.
func testJobEventFeedCommitOrder(t *testing.T, s store.Store) {
	if s.Engine() == "sqlite" {
		t.Log("SQLite runs one write transaction at a time: commit order is insert order")
		return
	}
	f := setupJobs(t, s)
	p := f.jobParams(1, t0)
	mustJob(t, s, p)
	inserted, release := make(chan struct{}), make(chan struct{})
	slow := make(chan error, 1)
	go func() {
		slow <- s.InTx(ctx(t), func(q store.Querier) error {
			if err := q.JobEventCreate(ctx(t), &store.JobEvent{ID: id.New(id.Event), JobID: p.Job.ID, Kind: "slow", CreatedAt: t0}); err != nil {
				return err
			}
			close(inserted)
			<-release
			return nil
		})
	}()
	<-inserted
	if err := s.JobEventCreate(ctx(t), &store.JobEvent{ID: id.New(id.Event), JobID: p.Job.ID, Kind: "fast", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	first, err := s.JobEventFeed(ctx(t), &store.JobEventFeedParams{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(first); n != 2 || first[1].Kind != "fast" {
		t.Fatalf("before the slow commit: %d events, last %q; want job.submitted, fast", n, first[n-1].Kind)
	}
	close(release)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	rest, err := s.JobEventFeed(ctx(t), &store.JobEventFeedParams{After: first[1].Position})
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != 1 || rest[0].Kind != "slow" {
		t.Errorf("after the fast event: %d events; want the slow one", len(rest))
	}
}
