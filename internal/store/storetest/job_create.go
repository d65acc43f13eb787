package storetest

// JobCreate, its atomicity, its schema checks and the dependency rows it writes.

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

func testJobCreateAndGet(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	b := tf.Account(t, s, &tf.AccountOpts{Name: "bob"})
	p := tf.JobParams(t, s, &tf.JobOpts{Project: f, Tasks: 3})
	p.Job.ClientRef, p.Job.Variant = ptr("ref-1"), ptr("v2")
	p.Job.Meta = json.RawMessage(`{"k":"v"}`)
	p.Job.Tags = []string{"x", "y", "x"}
	p.Job.TaskCount = 99 // ignored: the store counts the tasks
	j := tf.JobFrom(t, s, p)
	if j.Status != store.JobQueued || j.TaskCount != 3 || j.PushID != "psh_x" || j.ProjectName != "p" ||
		*j.ClientRef != "ref-1" || *j.Variant != "v2" || string(j.Meta) != `{"k":"v"}` ||
		string(j.Summary) != "{}" || !reflect.DeepEqual(j.Tags, []string{"x", "y", "x"}) ||
		!j.SubmittedAt.Equal(t0) || !j.UpdatedAt.Equal(t0) || j.StartedAt != nil || j.FinishedAt != nil {
		t.Errorf("created job = %+v", j)
	}
	got, err := s.JobGet(ctx(t), f.AccountID, j.ID)
	if err != nil || !reflect.DeepEqual(got, j) {
		t.Fatalf("JobGet = %+v, %v; want %+v", got, err, j)
	}
	_, err = s.JobGet(ctx(t), b.ID, j.ID)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.JobGet(ctx(t), f.AccountID, "job_nope")
	wantErr(t, err, store.ErrNotFound)
	if got, err := s.JobGetByID(ctx(t), j.ID); err != nil || got.AccountID != f.AccountID {
		t.Fatalf("JobGetByID = %+v, %v", got, err)
	}
	_, err = s.JobGetByID(ctx(t), "job_nope")
	wantErr(t, err, store.ErrNotFound)

	// Absent optional fields come back absent.
	bare := tf.JobParams(t, s, &tf.JobOpts{Project: f, Tasks: tf.TasksNone})
	bare.Job.Request, bare.Job.Payload = nil, nil
	bj := tf.JobFrom(t, s, bare)
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
	f := tf.Project(t, s, nil)
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
		if _, total, _ := s.JobList(ctx(t), &store.JobListParams{AccountID: f.AccountID, Tag: "atomic"}); total != 0 {
			t.Errorf("tag rows of a job that is not there: %d", total)
		}
	}

	// The caller's transaction rolls back.
	p := tf.JobParams(t, s, &tf.JobOpts{Project: f, Tasks: 600}) // more than one insert batch
	p.Job.Tags = []string{"atomic"}
	boom := errors.New("boom")
	err := s.InTx(ctx(t), func(q store.Querier) error {
		tf.JobFrom(t, q, p)
		if err := q.JobEventCreate(ctx(t), &store.JobEvent{ID: id.New(id.Event), JobID: p.Job.ID, Kind: "job.queued", CreatedAt: t0}); err != nil {
			return err
		}
		return boom
	})
	wantErr(t, err, boom)
	gone(p)

	// A failure in JobCreate's own transaction (a duplicate task index in
	// the second batch) leaves nothing behind.
	p = tf.JobParams(t, s, &tf.JobOpts{Project: f, Tasks: 700})
	p.Job.Tags = []string{"atomic"}
	p.Tasks[650].Index = 3
	if _, err := s.JobCreate(ctx(t), p); err == nil {
		t.Fatal("JobCreate with a duplicate task index succeeded")
	}
	gone(p)

	// The same job id twice is a conflict.
	p = tf.JobParams(t, s, &tf.JobOpts{Project: f})
	tf.JobFrom(t, s, p)
	again := tf.JobParams(t, s, &tf.JobOpts{Project: f})
	again.Job.ID = p.Job.ID
	_, err = s.JobCreate(ctx(t), again)
	wantErr(t, err, store.ErrConflict)

	// A committed transaction keeps the job and what was done with it.
	p = tf.JobParams(t, s, &tf.JobOpts{Project: f, Tasks: 2})
	p.Job.Priority = store.PriorityHigh // ahead of the job above
	var claimed string
	if err := s.InTx(ctx(t), func(q store.Querier) error {
		tf.JobFrom(t, q, p)
		task, _ := tf.Attempt(t, q, &tf.AttemptOpts{HostID: "wkr_a"})
		claimed = task.ID
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if task := mustTask(t, s, claimed); task.Status != store.TaskRunning || task.JobID != p.Job.ID {
		t.Errorf("claimed in a committed tx: %+v", task)
	}

	// Neither a terminal status nor a missing first event is accepted.
	p = tf.JobParams(t, s, &tf.JobOpts{Project: f})
	p.Job.Status = store.JobCompleted
	if _, err := s.JobCreate(ctx(t), p); err == nil {
		t.Error("JobCreate of a completed job succeeded")
	}
	p = tf.JobParams(t, s, &tf.JobOpts{Project: f})
	p.Event.ID = ""
	if _, err := s.JobCreate(ctx(t), p); err == nil {
		t.Error("JobCreate without an event succeeded")
	}
	gone(p)
}

// testJobCreateLarge stores a 10,000-task job and claims from a queue that
// deep. It logs the times; it asserts none, as machines differ.
func testJobCreateLarge(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	const n = 10_000
	p := tf.JobParams(t, s, &tf.JobOpts{Project: f, Tasks: n})
	start := time.Now()
	tf.JobFrom(t, s, p)
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
		task, _ := tf.Attempt(t, s, &tf.AttemptOpts{HostID: "wkr_a", Now: t0.Add(time.Second)})
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

// testJobSchemaChecks shows that the database itself refuses impossible rows
// and that deleting a job removes everything hanging off it.
func testJobSchemaChecks(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	p := tf.JobParams(t, s, &tf.JobOpts{Project: f, Tasks: 2})
	p.Job.Tags = []string{"keep"}
	tf.JobFrom(t, s, p)
	_, att := tf.Attempt(t, s, &tf.AttemptOpts{HostID: "wkr_a"})
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

// testJobDependencies: dependency rows are written with the job and answer
// both directions.
func testJobDependencies(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	t0 := time.Unix(1_800_000_000, 0).UTC()
	a := tf.Job(t, s, &tf.JobOpts{Project: f})
	b := tf.Job(t, s, &tf.JobOpts{Project: f})
	p := tf.JobParams(t, s, &tf.JobOpts{Project: f})
	p.Job.Status = store.JobPlanning
	p.DependsOn = []string{b.ID, a.ID, a.ID}
	c := tf.JobFrom(t, s, p)
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
