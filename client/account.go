package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"

	"github.com/skiffhq/skiff/apiv1"
)

// Balance reads the account (who the token acts as) and its balance.
func (c *Client) Balance(ctx context.Context) (*apiv1.BalanceResponse, error) {
	var out apiv1.BalanceResponse
	return &out, c.get(ctx, "/api/v1/account/balance", nil, &out)
}

// Ledger walks the account's ledger, newest first; entryType "" is all.
func (c *Client) Ledger(ctx context.Context, entryType string) iter.Seq2[apiv1.LedgerEntry, error] {
	q := url.Values{}
	if entryType != "" {
		q.Set("entry_type", entryType)
	}
	return pages(ctx, c, q, 200, func(ctx context.Context, q url.Values) ([]apiv1.LedgerEntry, int, error) {
		var out apiv1.LedgerPage
		err := c.get(ctx, "/api/v1/account/ledger", q, &out)
		return out.Entries, out.Total, err
	})
}

// Holds walks the account's holds, newest first.
func (c *Client) Holds(ctx context.Context) iter.Seq2[apiv1.Hold, error] {
	return pages(ctx, c, nil, 200, func(ctx context.Context, q url.Values) ([]apiv1.Hold, int, error) {
		var out apiv1.HoldPage
		err := c.get(ctx, "/api/v1/account/holds", q, &out)
		return out.Holds, out.Total, err
	})
}

// Quotes walks the account's quotes, newest first.
func (c *Client) Quotes(ctx context.Context) iter.Seq2[apiv1.Quote, error] {
	return pages(ctx, c, nil, 200, func(ctx context.Context, q url.Values) ([]apiv1.Quote, int, error) {
		var out apiv1.QuotePage
		err := c.get(ctx, "/api/v1/account/quotes", q, &out)
		return out.Quotes, out.Total, err
	})
}

// Quote reads one quote.
func (c *Client) Quote(ctx context.Context, id string) (*apiv1.QuoteResponse, error) {
	var out apiv1.QuoteResponse
	return &out, c.get(ctx, "/api/v1/account/quotes/"+esc(id), nil, &out)
}

// Register creates an account and its first key, where the operator
// allows self-registration; the answer holds the key.
func (c *Client) Register(ctx context.Context, body map[string]any) (map[string]any, error) {
	var out map[string]any
	return out, c.call(ctx, &request{method: http.MethodPost, path: "/api/v1/auth/register", body: body}, &out)
}
