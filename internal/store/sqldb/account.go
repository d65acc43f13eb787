package sqldb

import (
	"context"
	"database/sql"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

func scanAccount(s scanner) (*store.Account, error) {
	var a store.Account
	var created int64
	if err := s.Scan(&a.ID, &a.Name, &created); err != nil {
		return nil, err
	}
	a.CreatedAt = fromMicros(created)
	return &a, nil
}

func (q *queries) AccountCreate(ctx context.Context, p *store.AccountCreateParams) (*store.Account, error) {
	a, err := scanAccount(q.write.QueryRowContext(ctx, q.sql("AccountCreate"), p.ID, p.Name, micros(p.Now)))
	return a, q.mapErr(err)
}

func (q *queries) AccountGetByName(ctx context.Context, name string) (*store.Account, error) {
	a, err := scanAccount(q.read.QueryRowContext(ctx, q.sql("AccountGetByName"), name))
	return a, q.mapErr(err)
}

func (q *queries) AccountGetByID(ctx context.Context, id string) (*store.Account, error) {
	a, err := scanAccount(q.read.QueryRowContext(ctx, q.sql("AccountGetByID"), id))
	return a, q.mapErr(err)
}

func scanKey(s scanner, extra ...any) (*store.APIKey, error) {
	var k store.APIKey
	var created int64
	var revoked sql.NullInt64
	var role string
	dest := append([]any{&k.ID, &k.AccountID, &role, &k.SecretHash, &k.Hint, &created, &revoked}, extra...)
	if err := s.Scan(dest...); err != nil {
		return nil, err
	}
	k.Role = store.Role(role)
	k.CreatedAt = fromMicros(created)
	k.RevokedAt = fromNullMicros(revoked)
	return &k, nil
}

func (q *queries) APIKeyCreate(ctx context.Context, p *store.APIKeyCreateParams) (*store.APIKey, error) {
	k, err := scanKey(q.write.QueryRowContext(ctx, q.sql("APIKeyCreate"),
		p.ID, p.AccountID, string(p.Role), p.SecretHash, p.Hint, micros(p.Now)))
	return k, q.mapErr(err)
}

func (q *queries) PrincipalGetByKeyHash(ctx context.Context, hash string) (*store.Principal, error) {
	var a store.Account
	var acreated int64
	k, err := scanKey(q.read.QueryRowContext(ctx, q.sql("PrincipalGetByKeyHash"), hash), &a.ID, &a.Name, &acreated)
	if err != nil {
		return nil, q.mapErr(err)
	}
	a.CreatedAt = fromMicros(acreated)
	return &store.Principal{Key: *k, Account: a}, nil
}

func (q *queries) LedgerEntryCreate(ctx context.Context, p *store.LedgerEntryCreateParams) (*store.LedgerEntry, error) {
	var e store.LedgerEntry
	var created int64
	err := q.write.QueryRowContext(ctx, q.sql("LedgerEntryCreate"),
		p.ID, p.AccountID, p.EntryType, p.AmountMicros, p.Reference, p.Description, micros(p.Now)).
		Scan(&e.ID, &e.AccountID, &e.EntryType, &e.AmountMicros, &e.Reference, &e.Description, &created)
	if err != nil {
		return nil, q.mapErr(err)
	}
	e.CreatedAt = fromMicros(created)
	return &e, nil
}

func (q *queries) BalanceGet(ctx context.Context, accountID string, now time.Time) (*store.Balance, error) {
	var b store.Balance
	err := q.read.QueryRowContext(ctx, q.sql("BalanceGet"), accountID, micros(now)).
		Scan(&b.LedgerMicros, &b.HeldMicros, &b.ActiveHoldCount, &b.OpenQuoteCount)
	if err != nil {
		return nil, q.mapErr(err)
	}
	return &b, nil
}
