package sqldb

import (
	"context"
	"fmt"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

func (q *queries) ImageDigestsInUse(ctx context.Context) ([]string, error) {
	rows, err := q.read.QueryContext(ctx, q.sql("ImageDigestsInUse"))
	if err != nil {
		return nil, fmt.Errorf("ImageDigestsInUse: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			return nil, fmt.Errorf("ImageDigestsInUse: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ImageDigestsInUse: %w", err)
	}
	return out, nil
}

// ImagesSeen writes one row per digest: a sweep sees few images (one per
// project's revision in use, and those awaiting deletion).
func (q *queries) ImagesSeen(ctx context.Context, inUse, found []string, at time.Time) error {
	for _, d := range inUse {
		if _, err := q.write.ExecContext(ctx, q.sql("ImageReferenced"), d, micros(at)); err != nil {
			return fmt.Errorf("ImageReferenced: %w", q.mapErr(err))
		}
	}
	for _, d := range found {
		if _, err := q.write.ExecContext(ctx, q.sql("ImageFound"), d, micros(at)); err != nil {
			return fmt.Errorf("ImageFound: %w", q.mapErr(err))
		}
	}
	return nil
}

func (q *queries) ImageList(ctx context.Context) ([]store.ImageRecord, error) {
	rows, err := q.read.QueryContext(ctx, q.sql("ImageList"))
	if err != nil {
		return nil, fmt.Errorf("ImageList: %w", err)
	}
	defer rows.Close()
	var out []store.ImageRecord
	for rows.Next() {
		var r store.ImageRecord
		var at int64
		if err := rows.Scan(&r.Digest, &at); err != nil {
			return nil, fmt.Errorf("ImageList: %w", err)
		}
		r.ReferencedAt = fromMicros(at)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ImageList: %w", err)
	}
	return out, nil
}

func (q *queries) ImageForget(ctx context.Context, digest string, before time.Time) (bool, error) {
	res, err := q.write.ExecContext(ctx, q.sql("ImageForget"), digest, micros(before))
	if err != nil {
		return false, fmt.Errorf("ImageForget: %w", q.mapErr(err))
	}
	n, err := res.RowsAffected()
	return n > 0, err
}
