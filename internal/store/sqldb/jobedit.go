package sqldb

import (
	"context"
	"fmt"

	"github.com/skiffhq/skiff/internal/store"
)

func (q *queries) TaskSetRequirements(ctx context.Context, p *store.TaskSetRequirementsParams) (int64, error) {
	var n int64
	err := q.atomic(ctx, func(q *queries) error {
		res, err := q.write.ExecContext(ctx, q.sql("TaskSetRequirements"), p.JobID, jsonText(p.Requirements, "{}"),
			p.CPU, p.MemoryMB, p.GPUs)
		if err != nil {
			return fmt.Errorf("update tasks: %w", q.mapErr(err))
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		res, err = q.write.ExecContext(ctx, q.sql("JobSetRequest"), p.JobID, jsonText(p.Request, "{}"),
			string(p.PrevRequest), micros(p.Now), p.RateMicrosPerHour, nullJSON(p.Billing))
		if err != nil {
			return fmt.Errorf("update job: %w", q.mapErr(err))
		}
		if done, err := res.RowsAffected(); err != nil {
			return err
		} else if done == 0 {
			// Returning the error rolls the tasks back too.
			return q.refused(ctx, "JobExists", p.JobID)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

func (q *queries) JobIDsWithOutput(ctx context.Context, jobIDs []string) ([]string, error) {
	if len(jobIDs) == 0 {
		return nil, nil
	}
	text, err := expandList(q.sql("JobIDsWithOutput"), len(jobIDs))
	if err != nil {
		return nil, err
	}
	args := make([]any, len(jobIDs))
	for i, id := range jobIDs {
		args[i] = id
	}
	rows, err := q.read.QueryContext(ctx, text, args...)
	if err != nil {
		return nil, q.mapErr(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
