package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/paywire"
)

// PaymentRequired is the x402 v2 PaymentRequired of a 402 answer.
type PaymentRequired = paywire.PaymentRequired

// Payer pays quotes over x402: it signs a PAYMENT-SIGNATURE header value
// for the first requirement it can meet. *Wallet is one.
type Payer interface {
	PaymentSignature(ctx context.Context, pr *PaymentRequired) (string, error)
}

// ErrNoPayer is returned when a quote must be paid and no Payer was given.
var ErrNoPayer = errors.New("no payer configured: give the client a wallet (WithPayer) to pay quotes")

// TopupQuote asks for a top-up quote of amountUSD (a decimal string such as
// "25" or "0.50"). The server always answers 402 with the quote; it is
// returned here, not as an error.
func (c *Client) TopupQuote(ctx context.Context, amountUSD, description string) (*apiv1.Quote, *PaymentRequired, error) {
	body := map[string]any{"amount_usd": json.Number(amountUSD)}
	if description != "" {
		body["description"] = description
	}
	err := c.call(ctx, &request{method: http.MethodPost, path: "/api/v1/account/quotes/topup", body: body, noPay: true}, nil)
	e, ok := AsError(err)
	switch {
	case err == nil:
		return nil, nil, fmt.Errorf("top-up answered 2xx without a quote")
	case !ok || e.Status != http.StatusPaymentRequired || e.Quote == nil:
		return nil, nil, err
	}
	return e.Quote, e.PaymentRequired, nil
}

// Topup asks for a quote of amountUSD and pays it with the client's Payer.
func (c *Client) Topup(ctx context.Context, amountUSD, description string) (*apiv1.SettleResponse, error) {
	q, pr, err := c.TopupQuote(ctx, amountUSD, description)
	if err != nil {
		return nil, err
	}
	return c.PayQuote(ctx, q.ID, pr)
}

// PayQuote pays quoteID over x402 with the client's Payer. pr is the
// quote's PaymentRequired; nil asks the pay endpoint for it.
func (c *Client) PayQuote(ctx context.Context, quoteID string, pr *PaymentRequired) (*apiv1.SettleResponse, error) {
	if c.payer == nil {
		return nil, ErrNoPayer
	}
	path := "/api/v1/account/quotes/" + esc(quoteID) + "/pay/x402"
	if pr == nil {
		err := c.call(ctx, &request{method: http.MethodPost, path: path, noPay: true}, nil)
		e, ok := AsError(err)
		if !ok || e.Status != http.StatusPaymentRequired || e.PaymentRequired == nil {
			return nil, fmt.Errorf("ask for the payment requirements of %s: %w", quoteID, err)
		}
		pr = e.PaymentRequired
	}
	sig, err := c.payer.PaymentSignature(ctx, pr)
	if err != nil {
		return nil, fmt.Errorf("sign payment of %s: %w", quoteID, err)
	}
	// The same credential is resent on a 503: the server settles it once.
	var out apiv1.SettleResponse
	return &out, c.call(ctx, &request{method: http.MethodPost, path: path, noPay: true,
		header: http.Header{paywire.HeaderPaymentSignature: {sig}}}, &out)
}
