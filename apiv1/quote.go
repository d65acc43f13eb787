package apiv1

import (
	"encoding/json"
	"time"
)

// Quote is an amount an account is asked to pay (spec 2.8).
type Quote struct {
	ID          string          `json:"id"`
	QuoteType   string          `json:"quote_type"`
	Status      string          `json:"status"`
	AmountUSD   USD             `json:"amount_usd"`
	Description string          `json:"description"`
	Attrs       json.RawMessage `json:"attrs"`
	ExpiresAt   time.Time       `json:"expires_at"`
	CreatedAt   time.Time       `json:"created_at"`
	PaidAt      *time.Time      `json:"paid_at"`
}
