package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/skiffhq/skiff/internal/store"
)

func scanWaitlist(s scanner) (*store.WaitlistEntry, error) {
	var e store.WaitlistEntry
	var created int64
	if err := s.Scan(&e.ID, &e.Email, &created); err != nil {
		return nil, err
	}
	e.CreatedAt = fromMicros(created)
	return &e, nil
}

func (q *queries) WaitlistAdd(ctx context.Context, p *store.WaitlistAddParams) (*store.WaitlistEntry, bool, error) {
	e, err := scanWaitlist(q.write.QueryRowContext(ctx, q.sql("WaitlistAdd"), p.ID, p.Email, micros(p.Now)))
	if err == nil {
		return e, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, false, q.mapErr(err)
	}
	e, err = scanWaitlist(q.write.QueryRowContext(ctx, q.sql("WaitlistGetByEmail"), p.Email))
	return e, false, q.mapErr(err)
}

func (q *queries) WaitlistList(ctx context.Context, p *store.ListParams) ([]store.WaitlistEntry, error) {
	rows, err := q.read.QueryContext(ctx, q.sql("WaitlistList"), p.Limit, p.Offset)
	if err != nil {
		return nil, fmt.Errorf("waitlist list: %w", err)
	}
	defer rows.Close()
	var out []store.WaitlistEntry
	for rows.Next() {
		e, err := scanWaitlist(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *e)
	}
	return out, rows.Err()
}

func scanFeedback(s scanner) (*store.Feedback, error) {
	var f store.Feedback
	var typ, meta string
	var created int64
	if err := s.Scan(&f.ID, &typ, &f.Title, &f.Description, &f.JobID, &meta, &f.AccountID, &created); err != nil {
		return nil, err
	}
	f.Type, f.Metadata, f.CreatedAt = store.FeedbackType(typ), []byte(meta), fromMicros(created)
	return &f, nil
}

func (q *queries) FeedbackCreate(ctx context.Context, p *store.FeedbackCreateParams) (*store.Feedback, error) {
	meta := string(p.Metadata)
	if meta == "" {
		meta = "{}"
	}
	f, err := scanFeedback(q.write.QueryRowContext(ctx, q.sql("FeedbackCreate"), p.ID, string(p.Type), p.Title,
		p.Description, p.JobID, meta, p.AccountID, micros(p.Now)))
	return f, q.mapErr(err)
}

func (q *queries) FeedbackList(ctx context.Context, p *store.ListParams) ([]store.Feedback, error) {
	rows, err := q.read.QueryContext(ctx, q.sql("FeedbackList"), p.Limit, p.Offset)
	if err != nil {
		return nil, fmt.Errorf("feedback list: %w", err)
	}
	defer rows.Close()
	var out []store.Feedback
	for rows.Next() {
		f, err := scanFeedback(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *f)
	}
	return out, rows.Err()
}
