package billing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/store"
)

// Quote statuses (spec 2.8). An open quote past its expiry reads as
// expired; it can never be paid.
const (
	QuoteOpen      = "open"
	QuotePaid      = "paid"
	QuoteExpired   = "expired"
	QuoteCancelled = "cancelled"
	QuoteConsumed  = "consumed"
)

// EntryTypes are the ledger entry types, the values the ledger's
// entry_type filter accepts.
func EntryTypes() []string {
	return []string{EntryBetaCreditGrant, EntryJobCharge, EntryX402Topup, EntryMPPTopup}
}

// HoldStatuses are the hold statuses, the values the holds' status filter
// accepts.
func HoldStatuses() []string {
	return []string{store.HoldActive, store.HoldReleased, store.HoldCaptured, store.HoldPartiallyCaptured, store.HoldExpired}
}

// QuoteStatuses are the quote statuses the quotes' status filter accepts.
func QuoteStatuses() []string {
	return []string{QuoteOpen, QuotePaid, QuoteExpired, QuoteCancelled, QuoteConsumed}
}

// QuoteTypes are the quote types the quotes' quote_type filter accepts.
func QuoteTypes() []string {
	return []string{QuoteX402Topup, QuoteJobShortfall, QuoteGeneric}
}

// checkFilter refuses a filter value outside known; "" means any.
func checkFilter(field, value string, known []string) error {
	if value == "" || slices.Contains(known, value) {
		return nil
	}
	list := strings.Join(known, ", ")
	return fault.Invalid("invalid_"+field, "Use one of "+list+", or leave "+field+" out.",
		"unknown %s %q (known: %s)", field, value, list).With("field", field)
}

// Ledger pages an account's ledger entries, newest first.
func (s *Service) Ledger(ctx context.Context, p *store.LedgerListParams) ([]*store.LedgerEntry, int, error) {
	if err := checkFilter("entry_type", p.EntryType, EntryTypes()); err != nil {
		return nil, 0, err
	}
	es, total, err := s.store.LedgerList(ctx, p)
	if err != nil {
		return nil, 0, fmt.Errorf("list ledger: %w", err)
	}
	return es, total, nil
}

// Holds pages an account's holds, newest first.
func (s *Service) Holds(ctx context.Context, p *store.HoldListParams) ([]*store.Hold, int, error) {
	if err := checkFilter("status", p.Status, HoldStatuses()); err != nil {
		return nil, 0, err
	}
	hs, total, err := s.store.HoldList(ctx, p)
	if err != nil {
		return nil, 0, fmt.Errorf("list holds: %w", err)
	}
	return hs, total, nil
}

// Quotes pages an account's quotes, newest first; open quotes past their
// expiry are listed, and filtered, as expired.
func (s *Service) Quotes(ctx context.Context, p *store.QuoteListParams) ([]*store.Quote, int, error) {
	if err := checkFilter("status", p.Status, QuoteStatuses()); err != nil {
		return nil, 0, err
	}
	if err := checkFilter("quote_type", p.QuoteType, QuoteTypes()); err != nil {
		return nil, 0, err
	}
	p.Now = s.clock.Now()
	qs, total, err := s.store.QuoteList(ctx, p)
	if err != nil {
		return nil, 0, fmt.Errorf("list quotes: %w", err)
	}
	return qs, total, nil
}

// QuoteGet finds one quote of the account; another account's quote is not
// found. An open quote past its expiry reads as expired.
func (s *Service) QuoteGet(ctx context.Context, accountID, quoteID string) (*store.Quote, error) {
	q, err := s.store.QuoteGet(ctx, accountID, quoteID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.NotFound("quote", quoteID)
	}
	if err != nil {
		return nil, fmt.Errorf("get quote: %w", err)
	}
	return quoteAt(q, s.clock.Now()), nil
}

// quoteAt is q as it stands at now: the status of an open quote past its
// expiry is expired (QuoteList does the same in SQL).
func quoteAt(q *store.Quote, now time.Time) *store.Quote {
	if q.Status == QuoteOpen && !q.ExpiresAt.After(now) {
		c := *q
		c.Status = QuoteExpired
		return &c
	}
	return q
}

// LedgerEntryView renders a ledger entry for the API.
func LedgerEntryView(e *store.LedgerEntry) apiv1.LedgerEntry {
	return apiv1.LedgerEntry{ID: e.ID, EntryType: e.EntryType, AmountUSD: apiv1.USD(e.AmountMicros), Reference: e.Reference,
		Description: e.Description, CreatedAt: e.CreatedAt}
}

// HoldView renders a hold for the API.
func HoldView(h *store.Hold) apiv1.Hold {
	v := apiv1.Hold{ID: h.ID, JobID: h.JobID, Status: h.Status, AmountUSD: apiv1.USD(h.AmountMicros),
		CapturedUSD: apiv1.USD(h.CapturedMicros), CreatedAt: h.CreatedAt, SettledAt: h.CapturedAt}
	if h.Status != store.HoldActive {
		v.ReleasedUSD = apiv1.USD(h.AmountMicros - h.CapturedMicros)
	}
	return v
}

// JobHoldView renders a job's hold for its summary (billing_hold).
func JobHoldView(h *store.Hold) apiv1.JobHold {
	return apiv1.JobHold{ID: h.ID, Status: h.Status, AmountUSD: apiv1.USD(h.AmountMicros),
		CapturedUSD: apiv1.USD(h.CapturedMicros), SettledAt: h.CapturedAt}
}
