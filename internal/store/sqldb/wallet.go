package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

func (q *queries) WalletChallengeCreate(ctx context.Context, c *store.WalletChallenge) error {
	_, err := q.write.ExecContext(ctx, q.sql("WalletChallengeCreate"), c.ID, c.Chain, c.Address, c.Nonce, c.Message,
		micros(c.ExpiresAt), micros(c.CreatedAt))
	return q.mapErr(err)
}

func (q *queries) WalletChallengeGet(ctx context.Context, id string) (*store.WalletChallenge, error) {
	var c store.WalletChallenge
	var expires, created int64
	var used sql.NullInt64
	err := q.read.QueryRowContext(ctx, q.sql("WalletChallengeGet"), id).
		Scan(&c.ID, &c.Chain, &c.Address, &c.Nonce, &c.Message, &c.Status, &expires, &created, &used)
	if err != nil {
		return nil, q.mapErr(err)
	}
	c.ExpiresAt, c.CreatedAt, c.UsedAt = fromMicros(expires), fromMicros(created), fromNullMicros(used)
	return &c, nil
}

func (q *queries) WalletChallengeUse(ctx context.Context, p *store.WalletChallengeUseParams) error {
	res, err := q.write.ExecContext(ctx, q.sql("WalletChallengeUse"), p.ID, micros(p.Now))
	if err != nil {
		return q.mapErr(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return store.ErrConflict
	}
	return nil
}

func (q *queries) WalletGet(ctx context.Context, chain, address string) (*store.Wallet, error) {
	var w store.Wallet
	var created int64
	err := q.read.QueryRowContext(ctx, q.sql("WalletGet"), chain, address).Scan(&w.Chain, &w.Address, &w.AccountID, &created)
	if err != nil {
		return nil, q.mapErr(err)
	}
	w.CreatedAt = fromMicros(created)
	return &w, nil
}

func (q *queries) WalletCreate(ctx context.Context, w *store.Wallet) error {
	_, err := q.write.ExecContext(ctx, q.sql("WalletCreate"), w.Chain, w.Address, w.AccountID, micros(w.CreatedAt))
	return q.mapErr(err)
}

func (q *queries) WalletSessionCreate(ctx context.Context, s *store.WalletSession) error {
	_, err := q.write.ExecContext(ctx, q.sql("WalletSessionCreate"), s.ID, s.AccountID, s.Chain, s.Address, s.SecretHash,
		micros(s.ExpiresAt), micros(s.CreatedAt))
	return q.mapErr(err)
}

func (q *queries) PrincipalGetBySessionHash(ctx context.Context, hash string, now time.Time) (*store.Principal, error) {
	var p store.Principal
	var created, acreated int64
	err := q.read.QueryRowContext(ctx, q.sql("PrincipalGetBySessionHash"), hash, micros(now)).
		Scan(&p.Key.ID, &p.Key.AccountID, &p.Key.SecretHash, &created, &p.Account.ID, &p.Account.Name, &acreated)
	if err != nil {
		return nil, q.mapErr(err)
	}
	// A wallet session acts as a member of its own account (spec 5).
	p.Key.Role = store.RoleMember
	p.Key.Hint = "fls_"
	p.Key.CreatedAt, p.Account.CreatedAt = fromMicros(created), fromMicros(acreated)
	return &p, nil
}

func (q *queries) QuoteGetByID(ctx context.Context, id string) (*store.Quote, error) {
	qt, err := scanQuote(q.read.QueryRowContext(ctx, q.sql("QuoteGetByID"), id))
	return qt, q.mapErr(err)
}

func (q *queries) QuotePay(ctx context.Context, p *store.QuotePayParams) (*store.Quote, error) {
	qt, err := scanQuote(q.write.QueryRowContext(ctx, q.sql("QuotePay"), p.ID, micros(p.Now)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrConflict
	}
	return qt, q.mapErr(err)
}

func scanSettlement(s scanner) (*store.Settlement, error) {
	var st store.Settlement
	var req, resp string
	var created, updated int64
	var sent sql.NullInt64
	if err := s.Scan(&st.ID, &st.QuoteID, &st.AccountID, &st.Protocol, &st.Status, &st.Payer, &st.Nonce,
		&st.CredentialKey, &req, &resp, &st.TransactionHash, &st.LedgerEntryID, &sent, &created, &updated); err != nil {
		return nil, err
	}
	st.Request, st.Response = []byte(req), []byte(resp)
	st.SentAt, st.CreatedAt, st.UpdatedAt = fromNullMicros(sent), fromMicros(created), fromMicros(updated)
	return &st, nil
}

func (q *queries) SettlementCreate(ctx context.Context, s *store.Settlement) error {
	_, err := q.write.ExecContext(ctx, q.sql("SettlementCreate"), s.ID, s.QuoteID, s.AccountID, s.Protocol, s.Payer,
		s.Nonce, s.CredentialKey, string(s.Request), micros(s.CreatedAt))
	return q.mapErr(err)
}

func (q *queries) SettlementGetLive(ctx context.Context, quoteID string) (*store.Settlement, error) {
	s, err := scanSettlement(q.read.QueryRowContext(ctx, q.sql("SettlementGetLive"), quoteID))
	return s, q.mapErr(err)
}

func (q *queries) SettlementFinish(ctx context.Context, p *store.SettlementFinishParams) (*store.Settlement, error) {
	s, err := scanSettlement(q.write.QueryRowContext(ctx, q.sql("SettlementFinish"), p.ID, p.Status,
		jsonText(p.Response, "{}"), p.TransactionHash, p.LedgerEntryID, micros(p.Now)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrConflict
	}
	return s, q.mapErr(err)
}

func (q *queries) SettlementListPending(ctx context.Context, limit int) ([]*store.Settlement, error) {
	rows, err := q.read.QueryContext(ctx, q.sql("SettlementListPending"), limit)
	if err != nil {
		return nil, q.mapErr(err)
	}
	defer rows.Close()
	var out []*store.Settlement
	for rows.Next() {
		s, err := scanSettlement(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func (q *queries) SettlementMarkSent(ctx context.Context, id string, now time.Time) error {
	_, err := q.write.ExecContext(ctx, q.sql("SettlementMarkSent"), id, micros(now))
	return q.mapErr(err)
}

func (q *queries) WalletSessionRevoke(ctx context.Context, hash string) error {
	res, err := q.write.ExecContext(ctx, q.sql("WalletSessionRevoke"), hash)
	if err != nil {
		return q.mapErr(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return store.ErrNotFound
	}
	return nil
}
