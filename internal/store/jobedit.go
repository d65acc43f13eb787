package store

import (
	"context"
	"encoding/json"
	"time"
)

// TaskSetRequirementsParams edits the requirements of a job that has not
// ended (PATCH /api/v1/jobs/:id/requirements).
//
// Every queued or running task of job JobID gets Requirements (the JSON the
// caller sees) and the CPU, MemoryMB and GPUs that TaskClaim matches against
// free capacity; ended tasks keep theirs. A running attempt keeps the
// resources it was placed with: the new ones apply from the task's next
// claim (a retry or requeue). Tasks' updated_at is left alone, since it
// says when a task last reported (stale_for_s) or was requeued (TaskClaim's
// AvoidRequeuedSince), neither of which an edit changes.
//
// The job's request becomes Request, guarded twice: the job must not have
// ended, and its request must still be PrevRequest, so that two edits at
// once cannot each overwrite the other's field from a stale read
// (optimistic concurrency; the loser gets ErrConflict and reads again).
//
// RateMicrosPerHour, when not zero, becomes the job's rate, and Billing,
// when set, its stored billing: an edit that re-prices the job. Attempts
// claimed from then on record the new rate; those already claimed keep
// theirs.
type TaskSetRequirementsParams struct {
	JobID             string
	Requirements      json.RawMessage
	CPU               float64
	MemoryMB          int64
	GPUs              int64
	Request           json.RawMessage
	PrevRequest       json.RawMessage
	RateMicrosPerHour int64
	Billing           json.RawMessage
	Now               time.Time
}

// JobEditStore holds the job store's methods for the API's edits and list
// views, beside JobStore.
type JobEditStore interface {
	// TaskSetRequirements applies p in one transaction (tasks, then the job:
	// the lock order of JobStore) and returns how many tasks changed.
	// ErrConflict when the job has ended or its request is no longer
	// p.PrevRequest (nothing changes then); ErrNotFound when there is no job.
	TaskSetRequirements(ctx context.Context, p *TaskSetRequirementsParams) (int64, error)
	// JobIDsWithOutput returns those of jobIDs (in any order) that have at
	// least one task with stdout, so that a page of the job list learns its
	// has_output flags in one query.
	JobIDsWithOutput(ctx context.Context, jobIDs []string) ([]string, error)
}
