package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

func (q *queries) SharedValuePut(ctx context.Context, name string, value []byte, at time.Time) error {
	if _, err := q.write.ExecContext(ctx, q.sql("SharedValuePut"), name, string(value), micros(at)); err != nil {
		return fmt.Errorf("SharedValuePut: %w", q.mapErr(err))
	}
	return nil
}

func (q *queries) SharedValueGet(ctx context.Context, name string) (*store.SharedValue, error) {
	var v store.SharedValue
	var value string
	var at int64
	err := q.read.QueryRowContext(ctx, q.sql("SharedValueGet"), name).Scan(&v.Name, &value, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("SharedValueGet: %w", err)
	}
	v.Value, v.UpdatedAt = []byte(value), fromMicros(at)
	return &v, nil
}
