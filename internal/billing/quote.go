package billing

import (
	"context"
	"fmt"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
)

// Quote types and statuses (spec 2.8).
const (
	QuoteJobShortfall = "job_shortfall"
	QuoteX402Topup    = "x402_topup"
	QuoteGeneric      = "generic"
)

// QuoteTTL is how long a quote can be paid.
const QuoteTTL = 30 * time.Minute

// InitFloorMicros is the available balance project init needs (spec 1.7).
const InitFloorMicros = 5_000_000

// Shortfall stores a job_shortfall quote for the difference between what is
// needed and what is available, and returns the 402 fault that carries it.
func (s *Service) Shortfall(ctx context.Context, accountID string, neededMicros int64, what string) error {
	bal, err := s.Balance(ctx, accountID)
	if err != nil {
		return err
	}
	short := neededMicros - bal.AvailableMicros()
	if short <= 0 {
		return nil
	}
	now := s.clock.Now()
	p := &store.QuoteCreateParams{ID: id.New(id.Quote), AccountID: accountID, QuoteType: QuoteJobShortfall, AmountMicros: short,
		Description: what, ExpiresAt: now.Add(QuoteTTL), Now: now}
	if s.quoteAttrs != nil {
		p.Attrs = s.quoteAttrs(&store.Quote{ID: p.ID, AccountID: accountID, QuoteType: p.QuoteType, AmountMicros: short,
			Description: what, ExpiresAt: p.ExpiresAt})
	}
	q, err := s.store.QuoteCreate(ctx, p)
	if err != nil {
		return fmt.Errorf("shortfall quote: %w", err)
	}
	return &fault.Error{
		Kind: fault.KindPaymentRequired, Code: "insufficient_balance",
		Message: fmt.Sprintf("%s needs %s USD available; the account has %s USD available",
			what, apiv1.USD(neededMicros), apiv1.USD(bal.AvailableMicros())),
		Action: fmt.Sprintf("Fund the account with at least %s USD (pay quote %s, or ask an operator for credit), then retry the same request without altering it.",
			apiv1.USD(short), q.ID),
		Details: map[string]any{
			"quote":         QuoteView(q),
			"required_usd":  apiv1.USD(neededMicros),
			"available_usd": apiv1.USD(bal.AvailableMicros()),
			"shortfall_usd": apiv1.USD(short),
		},
	}
}

// QuoteView renders a quote for the API.
func QuoteView(q *store.Quote) apiv1.Quote {
	return apiv1.Quote{ID: q.ID, QuoteType: q.QuoteType, Status: q.Status, AmountUSD: apiv1.USD(q.AmountMicros),
		Description: q.Description, Attrs: q.Attrs, ExpiresAt: q.ExpiresAt, CreatedAt: q.CreatedAt, PaidAt: q.PaidAt}
}
