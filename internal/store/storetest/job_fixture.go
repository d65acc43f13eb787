package storetest

// Fixtures and helpers of the job store tests.

import (
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

func mustSetStatus(t *testing.T, q store.Querier, jobID string, to store.JobStatus, now time.Time) *store.Job {
	t.Helper()
	j, err := q.JobSetStatus(ctx(t), &store.JobSetStatusParams{ID: jobID, To: to, Now: now})
	if err != nil {
		t.Fatalf("JobSetStatus(%s -> %s): %v", jobID, to, err)
	}
	return j
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
