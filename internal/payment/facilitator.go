package payment

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/skiffhq/skiff/paywire"
)

// ErrFacilitatorUnavailable is a facilitator that could not be reached,
// timed out, or answered something other than a verdict. The payment may
// be retried with the same credential.
var ErrFacilitatorUnavailable = errors.New("x402 facilitator unavailable")

// Facilitator verifies and settles x402 payments; facilitatorhttp.Client is
// the HTTP one (an adapter, outside this domain package).
type Facilitator interface {
	Verify(ctx context.Context, req *FacilitatorRequest) (*paywire.VerifyResponse, error)
	Settle(ctx context.Context, req *FacilitatorRequest) (*paywire.SettleResponse, json.RawMessage, error)
}

// FacilitatorRequest is the body of /verify and /settle.
type FacilitatorRequest struct {
	X402Version         int                  `json:"x402Version"`
	PaymentPayload      json.RawMessage      `json:"paymentPayload"`
	PaymentRequirements paywire.Requirements `json:"paymentRequirements"`
}
