package sqldb

import (
	"context"
	"database/sql"
	"errors"

	"github.com/skiffhq/skiff/internal/store"
)

func scanHold(s scanner) (*store.Hold, error) {
	var h store.Hold
	var created, updated int64
	var settled sql.NullInt64
	if err := s.Scan(&h.ID, &h.AccountID, &h.JobID, &h.Status, &h.AmountMicros, &h.CapturedMicros, &created, &updated,
		&settled); err != nil {
		return nil, err
	}
	h.CreatedAt, h.UpdatedAt, h.CapturedAt = fromMicros(created), fromMicros(updated), fromNullMicros(settled)
	return &h, nil
}

func (q *queries) AccountLock(ctx context.Context, accountID string) error {
	var id string
	return q.mapErr(q.write.QueryRowContext(ctx, q.sql("AccountLock"), accountID).Scan(&id))
}

func (q *queries) HoldCreate(ctx context.Context, p *store.HoldCreateParams) (*store.Hold, error) {
	h, err := scanHold(q.write.QueryRowContext(ctx, q.sql("HoldCreate"), p.ID, p.AccountID, p.JobID, p.AmountMicros,
		micros(p.Now)))
	return h, q.mapErr(err)
}

func (q *queries) HoldReserve(ctx context.Context, p *store.HoldCreateParams) (*store.Hold, int64, error) {
	var avail int64
	var holdID sql.NullString
	err := q.write.QueryRowContext(ctx, q.sql("HoldReserve"), p.ID, p.AccountID, p.JobID, p.AmountMicros,
		micros(p.Now)).Scan(&avail, &holdID)
	if errors.Is(err, sql.ErrNoRows) {
		// SQLite returns no row when the balance is short (or there is no
		// account): what is available is read in the same transaction.
		err = q.write.QueryRowContext(ctx, q.sql("AccountAvailable"), p.AccountID).Scan(&avail)
	}
	if err != nil {
		return nil, 0, q.mapErr(err)
	}
	if !holdID.Valid {
		return nil, avail, nil
	}
	// The row as HoldCreate returns it, without reading it back.
	return &store.Hold{ID: holdID.String, AccountID: p.AccountID, JobID: p.JobID, Status: store.HoldActive,
		AmountMicros: p.AmountMicros, CreatedAt: fromMicros(micros(p.Now)), UpdatedAt: fromMicros(micros(p.Now))}, avail, nil
}

func (q *queries) JobBillingSet(ctx context.Context, jobID string, billing []byte) error {
	return q.execOne(ctx, "JobBillingSet", jobID, jsonText(billing, "{}"))
}

func (q *queries) HoldGetByJob(ctx context.Context, jobID string) (*store.Hold, error) {
	h, err := scanHold(q.read.QueryRowContext(ctx, q.sql("HoldGetByJob"), jobID))
	return h, q.mapErr(err)
}

func (q *queries) HoldCapture(ctx context.Context, p *store.HoldCaptureParams) (*store.Hold, error) {
	switch p.Status {
	case store.HoldReleased, store.HoldCaptured, store.HoldPartiallyCaptured:
	default:
		return nil, errors.New("sqldb: HoldCapture needs released, captured or partially_captured")
	}
	h, err := scanHold(q.write.QueryRowContext(ctx, q.sql("HoldCapture"), p.ID, p.Status, p.CapturedMicros, micros(p.Now)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, q.refused(ctx, "HoldExists", p.ID)
	}
	return h, q.mapErr(err)
}

func (q *queries) HoldGrow(ctx context.Context, p *store.HoldGrowParams) (*store.Hold, error) {
	h, err := scanHold(q.write.QueryRowContext(ctx, q.sql("HoldGrow"), p.ID, p.AmountMicros, micros(p.Now),
		p.PrevAmountMicros))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, q.refused(ctx, "HoldExists", p.ID)
	}
	return h, q.mapErr(err)
}

func (q *queries) HoldList(ctx context.Context, p *store.HoldListParams) ([]*store.Hold, int, error) {
	var total int
	if err := q.read.QueryRowContext(ctx, q.sql("HoldCount"), p.AccountID, p.Status, p.JobID).Scan(&total); err != nil {
		return nil, 0, q.mapErr(err)
	}
	rows, err := q.read.QueryContext(ctx, q.sql("HoldList"), p.AccountID, p.Status, p.JobID, p.Limit, p.Offset)
	if err != nil {
		return nil, 0, q.mapErr(err)
	}
	hs, err := collect(rows, scanHold)
	return hs, total, err
}

func scanLedgerEntry(s scanner) (*store.LedgerEntry, error) {
	var e store.LedgerEntry
	var created int64
	if err := s.Scan(&e.ID, &e.AccountID, &e.EntryType, &e.AmountMicros, &e.Reference, &e.Description, &created); err != nil {
		return nil, err
	}
	e.CreatedAt = fromMicros(created)
	return &e, nil
}

func (q *queries) LedgerList(ctx context.Context, p *store.LedgerListParams) ([]*store.LedgerEntry, int, error) {
	var total int
	if err := q.read.QueryRowContext(ctx, q.sql("LedgerCount"), p.AccountID, p.EntryType).Scan(&total); err != nil {
		return nil, 0, q.mapErr(err)
	}
	rows, err := q.read.QueryContext(ctx, q.sql("LedgerList"), p.AccountID, p.EntryType, p.Limit, p.Offset)
	if err != nil {
		return nil, 0, q.mapErr(err)
	}
	es, err := collect(rows, scanLedgerEntry)
	return es, total, err
}

func (q *queries) QuoteList(ctx context.Context, p *store.QuoteListParams) ([]*store.Quote, int, error) {
	now := micros(p.Now)
	var total int
	if err := q.read.QueryRowContext(ctx, q.sql("QuoteCount"), p.AccountID, p.Status, p.QuoteType, now).Scan(&total); err != nil {
		return nil, 0, q.mapErr(err)
	}
	rows, err := q.read.QueryContext(ctx, q.sql("QuoteList"), p.AccountID, p.Status, p.QuoteType, now, p.Limit, p.Offset)
	if err != nil {
		return nil, 0, q.mapErr(err)
	}
	qs, err := collect(rows, scanQuote)
	return qs, total, err
}

func (q *queries) AttemptSetCost(ctx context.Context, attemptID string, billedSeconds, costMicros int64) error {
	return q.execOne(ctx, "AttemptSetCost", attemptID, billedSeconds, costMicros)
}

func (q *queries) JobChargeTotal(ctx context.Context, jobID string) (int64, error) {
	var n int64
	err := q.read.QueryRowContext(ctx, q.sql("JobChargeTotal"), jobID).Scan(&n)
	return n, q.mapErr(err)
}

func (q *queries) JobMeterTotal(ctx context.Context, jobID string) (*store.JobMeter, error) {
	var m store.JobMeter
	err := q.read.QueryRowContext(ctx, q.sql("JobMeterTotal"), jobID).Scan(&m.BilledSeconds, &m.CostMicros)
	if err != nil {
		return nil, q.mapErr(err)
	}
	return &m, nil
}

func (q *queries) IdempotencyKeyPut(ctx context.Context, k *store.IdempotencyKey) error {
	_, err := q.write.ExecContext(ctx, q.sql("IdempotencyKeyPut"), k.AccountID, k.Key, k.RequestHash, k.Response,
		micros(k.CreatedAt))
	return q.mapErr(err)
}

func (q *queries) IdempotencyKeyGet(ctx context.Context, accountID, key string) (*store.IdempotencyKey, error) {
	var k store.IdempotencyKey
	var created int64
	err := q.read.QueryRowContext(ctx, q.sql("IdempotencyKeyGet"), accountID, key).
		Scan(&k.AccountID, &k.Key, &k.RequestHash, &k.Response, &created)
	if err != nil {
		return nil, q.mapErr(err)
	}
	k.CreatedAt = fromMicros(created)
	return &k, nil
}
