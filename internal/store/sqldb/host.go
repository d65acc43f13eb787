package sqldb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

func scanEnrollment(s scanner) (*store.Enrollment, error) {
	var e store.Enrollment
	var created, expires, used int64
	if err := s.Scan(&e.CodeHash, &e.Name, &e.WorkKinds, &e.RatePercent, &created, &expires, &used, &e.HostID); err != nil {
		return nil, err
	}
	e.CreatedAt, e.ExpiresAt = fromMicros(created), fromMicros(expires)
	if used != 0 {
		e.UsedAt = fromMicros(used)
	}
	return &e, nil
}

func (q *queries) EnrollmentCreate(ctx context.Context, p *store.EnrollmentCreateParams) (*store.Enrollment, error) {
	e, err := scanEnrollment(q.write.QueryRowContext(ctx, q.sql("EnrollmentCreate"), p.CodeHash, p.Name, p.WorkKinds,
		p.RatePercent, micros(p.Now), micros(p.ExpiresAt)))
	return e, q.mapErr(err)
}

func (q *queries) EnrollmentGet(ctx context.Context, codeHash string) (*store.Enrollment, error) {
	e, err := scanEnrollment(q.write.QueryRowContext(ctx, q.sql("EnrollmentGet"), codeHash))
	return e, q.mapErr(err)
}

func (q *queries) EnrollmentUse(ctx context.Context, p *store.EnrollmentUseParams) error {
	res, err := q.write.ExecContext(ctx, q.sql("EnrollmentUse"), p.CodeHash, p.HostID, micros(p.Now))
	if err != nil {
		return fmt.Errorf("enrollment use: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	if _, err := q.EnrollmentGet(ctx, p.CodeHash); err != nil {
		return err
	}
	return store.ErrConflict
}

func scanHost(s scanner) (*store.Host, error) {
	var h store.Host
	var state, profile string
	var created, seen int64
	if err := s.Scan(&h.ID, &h.Name, &state, &h.WorkKinds, &h.RatePercent, &h.CPUs, &h.MemoryMB, &h.GPUs,
		&h.Hostname, &profile, &h.CredentialHash, &created, &seen); err != nil {
		return nil, err
	}
	h.State, h.Profile, h.CreatedAt = store.HostState(state), []byte(profile), fromMicros(created)
	if seen != 0 {
		h.LastSeenAt = fromMicros(seen)
	}
	return &h, nil
}

func (q *queries) HostCreate(ctx context.Context, p *store.HostCreateParams) (*store.Host, error) {
	prof := string(p.Profile)
	if prof == "" {
		prof = "{}"
	}
	h, err := scanHost(q.write.QueryRowContext(ctx, q.sql("HostCreate"), p.ID, p.Name, p.WorkKinds, p.RatePercent,
		p.CPUs, p.MemoryMB, p.GPUs, p.Hostname, prof, p.CredentialHash, micros(p.Now)))
	return h, q.mapErr(err)
}

func (q *queries) HostGet(ctx context.Context, id string) (*store.Host, error) {
	h, err := scanHost(q.read.QueryRowContext(ctx, q.sql("HostGet"), id))
	return h, q.mapErr(err)
}

func (q *queries) HostGetByCredential(ctx context.Context, credentialHash string) (*store.Host, error) {
	// The write handle: a removal must refuse the credential at once, and
	// a read replica may lag.
	h, err := scanHost(q.write.QueryRowContext(ctx, q.sql("HostGetByCredential"), credentialHash))
	return h, q.mapErr(err)
}

func (q *queries) HostList(ctx context.Context, p *store.ListParams) ([]store.Host, error) {
	rows, err := q.read.QueryContext(ctx, q.sql("HostList"), p.Limit, p.Offset)
	if err != nil {
		return nil, fmt.Errorf("host list: %w", err)
	}
	defer rows.Close()
	var out []store.Host
	for rows.Next() {
		h, err := scanHost(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *h)
	}
	return out, rows.Err()
}

func (q *queries) HostSetState(ctx context.Context, p *store.HostSetStateParams) (*store.Host, error) {
	var out *store.Host
	err := q.atomic(ctx, func(q *queries) error {
		h, err := scanHost(q.write.QueryRowContext(ctx, q.sql("HostGet"), p.ID))
		if err != nil {
			return q.mapErr(err)
		}
		if !slices.Contains(p.From, h.State) {
			return store.ErrConflict
		}
		// Guarded by the state read, so that a concurrent change (a removal
		// racing a drain) is never overwritten.
		res, err := q.write.ExecContext(ctx, q.sql("HostSetState"), p.ID, string(p.State), string(h.State))
		if err != nil {
			return fmt.Errorf("host set state: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return errors.Join(err, store.ErrConflict)
		}
		h.State = p.State
		out = h
		return nil
	})
	return out, err
}

func (q *queries) HostSeen(ctx context.Context, id string, at time.Time) error {
	if _, err := q.write.ExecContext(ctx, q.sql("HostSeen"), id, micros(at)); err != nil {
		return fmt.Errorf("host seen: %w", err)
	}
	return nil
}
