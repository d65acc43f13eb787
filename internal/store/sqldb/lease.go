package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/skiffhq/skiff/internal/store"
)

func scanLease(s scanner) (*store.Lease, error) {
	var l store.Lease
	var acquired, expires int64
	if err := s.Scan(&l.Name, &l.Holder, &l.Epoch, &acquired, &expires); err != nil {
		return nil, err
	}
	l.AcquiredAt, l.ExpiresAt = fromMicros(acquired), fromMicros(expires)
	return &l, nil
}

// leaseRow runs a lease statement that returns the row it changed; no row
// means the guard refused: ErrConflict.
func (q *queries) leaseRow(ctx context.Context, name string, args ...any) (*store.Lease, error) {
	l, err := scanLease(q.write.QueryRowContext(ctx, q.sql(name), args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrConflict
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, q.mapErr(err))
	}
	return l, nil
}

func (q *queries) LeaseAcquire(ctx context.Context, p *store.LeaseParams) (*store.Lease, error) {
	return q.leaseRow(ctx, "LeaseAcquire", p.Name, p.Holder, micros(p.Now), micros(p.Until))
}

func (q *queries) LeaseForce(ctx context.Context, p *store.LeaseParams) (*store.Lease, error) {
	return q.leaseRow(ctx, "LeaseForce", p.Name, p.Holder, micros(p.Now), micros(p.Until))
}

func (q *queries) LeaseRenew(ctx context.Context, p *store.LeaseParams) (*store.Lease, error) {
	return q.leaseRow(ctx, "LeaseRenew", p.Name, p.Holder, micros(p.Now), micros(p.Until))
}

func (q *queries) LeaseRelease(ctx context.Context, name, holder string) error {
	if _, err := q.write.ExecContext(ctx, q.sql("LeaseRelease"), name, holder); err != nil {
		return fmt.Errorf("LeaseRelease: %w", q.mapErr(err))
	}
	return nil
}

func (q *queries) LeaseList(ctx context.Context, prefix string) ([]*store.Lease, error) {
	rows, err := q.read.QueryContext(ctx, q.sql("LeaseList"), prefix)
	if err != nil {
		return nil, fmt.Errorf("LeaseList: %w", err)
	}
	defer rows.Close()
	var out []*store.Lease
	for rows.Next() {
		l, err := scanLease(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}
