package sqldb

import (
	"context"

	"github.com/skiffhq/skiff/internal/store"
)

func (q *queries) TaskListPage(ctx context.Context, jobID string, offset, limit int) ([]*store.Task, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := q.read.QueryContext(ctx, q.sql("TaskListPage"), jobID, limit, max(offset, 0))
	if err != nil {
		return nil, q.mapErr(err)
	}
	return collect(rows, scanTask)
}

func (q *queries) AttemptListForTasks(ctx context.Context, jobID string, fromIdx, toIdx int64) ([]*store.Attempt, error) {
	if toIdx < fromIdx {
		return nil, nil
	}
	rows, err := q.read.QueryContext(ctx, q.sql("AttemptListForTasks"), jobID, fromIdx, toIdx)
	if err != nil {
		return nil, q.mapErr(err)
	}
	return collect(rows, scanAttempt)
}

func (q *queries) TaskCheckpointCounts(ctx context.Context, jobID string) (store.CheckpointCounts, error) {
	var c store.CheckpointCounts
	err := q.read.QueryRowContext(ctx, q.sql("TaskCheckpointCounts"), jobID).
		Scan(&c.Checkpointed, &c.Resumed, &c.Pending, &c.Published, &c.Failed)
	return c, q.mapErr(err)
}

func (q *queries) TaskResultCounts(ctx context.Context, jobID string) (results, outputs int64, err error) {
	err = q.read.QueryRowContext(ctx, q.sql("TaskResultCounts"), jobID).Scan(&results, &outputs)
	return results, outputs, q.mapErr(err)
}
