package sqldb

import (
	"context"
	"time"
)

func (q *queries) JobPurgeFinishedBefore(ctx context.Context, t time.Time, limit int) (int, error) {
	res, err := q.write.ExecContext(ctx, q.sql("JobPurgeFinishedBefore"), micros(t), limit)
	if err != nil {
		return 0, q.mapErr(err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
