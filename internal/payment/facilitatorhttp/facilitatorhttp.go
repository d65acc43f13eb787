// Package facilitatorhttp is the HTTP client of an x402 facilitator's
// /verify and /settle: the adapter behind payment.Facilitator.
package facilitatorhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/payment"
	"github.com/skiffhq/skiff/paywire"
)

// Client talks to an x402 facilitator over HTTP.
type Client struct {
	base    string
	headers http.Header
	http    *http.Client
}

var _ payment.Facilitator = (*Client)(nil)

// New returns a client for the facilitator at base,
// sending headers (e.g. an API key) on every request. Redirects are
// followed (net/http keeps the method and body on 307/308).
func New(base string, headers map[string][]string, timeout time.Duration) *Client {
	return &Client{base: strings.TrimRight(base, "/"), headers: http.Header(headers).Clone(),
		http: &http.Client{Timeout: timeout}}
}

// maxFacilitatorBody bounds what is read of an answer.
const maxFacilitatorBody = 1 << 20

func (c *Client) post(ctx context.Context, path string, req *payment.FacilitatorRequest) ([]byte, int, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, 0, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", payment.ErrFacilitatorUnavailable, err)
	}
	for k, vs := range c.headers {
		hr.Header[k] = vs
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(hr)
	if err != nil {
		// The error names the URL, never the headers.
		return nil, 0, fmt.Errorf("%w: %s: %v", payment.ErrFacilitatorUnavailable, path, err)
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(io.LimitReader(resp.Body, maxFacilitatorBody))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %s: read: %v", payment.ErrFacilitatorUnavailable, path, err)
	}
	return rb, resp.StatusCode, nil
}

// Verify asks the facilitator whether the payment is valid. A verdict
// comes back even on a non-2xx status when the body carries isValid.
func (c *Client) Verify(ctx context.Context, req *payment.FacilitatorRequest) (*paywire.VerifyResponse, error) {
	rb, status, err := c.post(ctx, "/verify", req)
	if err != nil {
		return nil, err
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(rb, &probe) != nil || probe["isValid"] == nil {
		return nil, fmt.Errorf("%w: /verify answered %d without a verdict", payment.ErrFacilitatorUnavailable, status)
	}
	var v paywire.VerifyResponse
	if err := json.Unmarshal(rb, &v); err != nil {
		return nil, fmt.Errorf("%w: /verify: %v", payment.ErrFacilitatorUnavailable, err)
	}
	return &v, nil
}

// Settle asks the facilitator to execute the payment; it returns the
// decoded answer and its raw JSON.
func (c *Client) Settle(ctx context.Context, req *payment.FacilitatorRequest) (*paywire.SettleResponse, json.RawMessage, error) {
	rb, status, err := c.post(ctx, "/settle", req)
	if err != nil {
		return nil, nil, err
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(rb, &probe) != nil || probe["success"] == nil {
		return nil, nil, fmt.Errorf("%w: /settle answered %d without a result", payment.ErrFacilitatorUnavailable, status)
	}
	var s paywire.SettleResponse
	if err := json.Unmarshal(rb, &s); err != nil {
		return nil, nil, fmt.Errorf("%w: /settle: %v", payment.ErrFacilitatorUnavailable, err)
	}
	return &s, rb, nil
}
