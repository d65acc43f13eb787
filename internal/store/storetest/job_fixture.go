package storetest

// Fixtures and helpers of the job store tests.

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
)

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
