package sqldb

import (
	"context"
	"database/sql"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

func scanRuntimePrep(s scanner) (*store.RuntimePrep, error) {
	var r store.RuntimePrep
	var status string
	var created, updated int64
	var ready sql.NullInt64
	if err := s.Scan(&r.ProjectID, &r.HostID, &r.ContentHash, &r.ImageDigest, &status, &r.Error, &created, &updated, &ready); err != nil {
		return nil, err
	}
	r.Status = store.RuntimePrepStatus(status)
	r.CreatedAt, r.UpdatedAt, r.ReadyAt = fromMicros(created), fromMicros(updated), fromNullMicros(ready)
	return &r, nil
}

func (q *queries) RuntimePrepPut(ctx context.Context, p *store.RuntimePrepPutParams) (*store.RuntimePrep, error) {
	r, err := scanRuntimePrep(q.write.QueryRowContext(ctx, q.sql("RuntimePrepPut"), p.ProjectID, p.HostID,
		p.ContentHash, p.ImageDigest, string(p.Status), p.Error, micros(p.Now)))
	return r, q.mapErr(err)
}

func (q *queries) RuntimePrepList(ctx context.Context, projectID string) ([]*store.RuntimePrep, error) {
	rows, err := q.read.QueryContext(ctx, q.sql("RuntimePrepList"), projectID)
	if err != nil {
		return nil, q.mapErr(err)
	}
	return collect(rows, scanRuntimePrep)
}

func (q *queries) RuntimePrepMarkStale(ctx context.Context, projectID string, now time.Time) (int64, error) {
	res, err := q.write.ExecContext(ctx, q.sql("RuntimePrepMarkStale"), projectID, micros(now))
	if err != nil {
		return 0, q.mapErr(err)
	}
	return res.RowsAffected()
}

func scanQuote(s scanner) (*store.Quote, error) {
	var qt store.Quote
	var attrs string
	var expires, created, updated int64
	var paid sql.NullInt64
	if err := s.Scan(&qt.ID, &qt.AccountID, &qt.QuoteType, &qt.Status, &qt.AmountMicros, &qt.Description, &attrs,
		&expires, &created, &updated, &paid); err != nil {
		return nil, err
	}
	qt.Attrs = []byte(attrs)
	qt.ExpiresAt, qt.CreatedAt, qt.UpdatedAt, qt.PaidAt = fromMicros(expires), fromMicros(created), fromMicros(updated), fromNullMicros(paid)
	return &qt, nil
}

func (q *queries) QuoteCreate(ctx context.Context, p *store.QuoteCreateParams) (*store.Quote, error) {
	qt, err := scanQuote(q.write.QueryRowContext(ctx, q.sql("QuoteCreate"), p.ID, p.AccountID, p.QuoteType,
		p.AmountMicros, p.Description, jsonText(p.Attrs, "{}"), micros(p.ExpiresAt), micros(p.Now)))
	return qt, q.mapErr(err)
}

func (q *queries) QuoteGet(ctx context.Context, accountID, id string) (*store.Quote, error) {
	qt, err := scanQuote(q.read.QueryRowContext(ctx, q.sql("QuoteGet"), accountID, id))
	return qt, q.mapErr(err)
}
