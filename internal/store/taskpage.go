package store

import "context"

// TaskPageStore reads a large job's tasks a page at a time, so that the
// views of a job of 10,000 tasks read only the page they show (GET
// /api/v1/jobs/:id/tasks, GET /api/v1/results/:job_id).
type TaskPageStore interface {
	// TaskListPage lists at most limit of a job's tasks in index order,
	// skipping the first offset (the (job_id, idx) index). An offset past
	// the end gives an empty list; limit <= 0 gives none.
	TaskListPage(ctx context.Context, jobID string, offset, limit int) ([]*Task, error)
	// AttemptListForTasks lists the attempts of a job's tasks whose index
	// is fromIdx to toIdx (both included), by task index, then number.
	AttemptListForTasks(ctx context.Context, jobID string, fromIdx, toIdx int64) ([]*Attempt, error)
	// TaskResultCounts counts a job's tasks that stored a result (a JSON
	// value other than null) and those that wrote stdout, without reading
	// the tasks out.
	TaskResultCounts(ctx context.Context, jobID string) (results, outputs int64, err error)
	// TaskCheckpointCounts counts a job's tasks by checkpoint state, in
	// one pass and without reading the tasks out.
	TaskCheckpointCounts(ctx context.Context, jobID string) (CheckpointCounts, error)
}

// CheckpointCounts are a job's tasks by checkpoint state: with a
// checkpoint, resumed from one, and, of those whose checkpoint is kept as
// an artifact, by its publish_status (pending, published, failed).
type CheckpointCounts struct {
	Checkpointed, Resumed, Pending, Published, Failed int64
}
