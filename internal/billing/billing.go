// Package billing owns money: credits, balances, holds and charges, all in
// integer micro-USD.
package billing

import (
	"context"
	"fmt"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
)

// Ledger entry types.
const (
	EntryBetaCreditGrant = "beta_credit_grant"
	EntryJobCharge       = "job_charge"
	EntryX402Topup       = "x402_topup"
	EntryMPPTopup        = "mpp_topup"
)

// MaxGrantMicros bounds one operator grant (1,000,000 USD), so a typo cannot
// mint an absurd balance.
const MaxGrantMicros = 1_000_000 * 1_000_000

// Service reads and moves money.
type Service struct {
	store store.Store
	clock clock.Clock
	rates PriceSource
	// quoteAttrs gives the attrs a shortfall quote is stored with (its
	// x402 requirements, when payments are on); nil: none.
	quoteAttrs func(*store.Quote) []byte
}

// New returns a billing service pricing at the rates p gives; nil prices
// at DefaultRates.
func New(s store.Store, c clock.Clock, p PriceSource) *Service {
	if p == nil {
		p = StaticRates(DefaultRates)
	}
	return &Service{store: s, clock: c, rates: p}
}

// WithQuoteAttrs returns a copy of s whose shortfall quotes are stored
// with the attrs f gives (payment.Service.Attrs: attrs.x402_payment_required,
// as a top-up quote has), so that a client can pay a shortfall from the
// quote alone, as it pays a top-up.
func (s *Service) WithQuoteAttrs(f func(*store.Quote) []byte) *Service {
	c := *s
	c.quoteAttrs = f
	return &c
}

// Rates are the current market rates.
func (s *Service) Rates() Rates { return s.rates.Rates() }

// GrantCredit adds an operator's beta credit to an account.
func (s *Service) GrantCredit(ctx context.Context, accountID string, micros int64, note string) (*store.LedgerEntry, error) {
	if micros <= 0 || micros > MaxGrantMicros {
		return nil, fault.Invalid("invalid_amount", "Grant between 0.000001 and 1000000 USD.",
			"grant amount must be positive and at most 1000000 USD")
	}
	e, err := s.store.LedgerEntryCreate(ctx, &store.LedgerEntryCreateParams{
		ID: id.New(id.Ledger), AccountID: accountID, EntryType: EntryBetaCreditGrant,
		AmountMicros: micros, Reference: "operator", Description: note, Now: s.clock.Now(),
	})
	if err != nil {
		return nil, fmt.Errorf("grant credit: %w", err)
	}
	return e, nil
}

// Balance derives the account's balance from the ledger and holds.
func (s *Service) Balance(ctx context.Context, accountID string) (*store.Balance, error) {
	b, err := s.store.BalanceGet(ctx, accountID, s.clock.Now())
	if err != nil {
		return nil, fmt.Errorf("balance: %w", err)
	}
	return b, nil
}
