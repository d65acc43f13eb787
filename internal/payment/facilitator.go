package payment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// ErrFacilitatorUnavailable is a facilitator that could not be reached,
// timed out, or answered something other than a verdict. The payment may
// be retried with the same credential.
var ErrFacilitatorUnavailable = errors.New("x402 facilitator unavailable")

// Facilitator verifies and settles x402 payments; FacilitatorClient is the
// HTTP one.
type Facilitator interface {
	Verify(ctx context.Context, req *FacilitatorRequest) (*VerifyResponse, error)
	Settle(ctx context.Context, req *FacilitatorRequest) (*SettleResponse, json.RawMessage, error)
}

// FacilitatorRequest is the body of /verify and /settle.
type FacilitatorRequest struct {
	X402Version         int             `json:"x402Version"`
	PaymentPayload      json.RawMessage `json:"paymentPayload"`
	PaymentRequirements Requirements    `json:"paymentRequirements"`
}

// FacilitatorClient talks to an x402 facilitator over HTTP.
type FacilitatorClient struct {
	base    string
	headers http.Header
	http    *http.Client
}

var _ Facilitator = (*FacilitatorClient)(nil)

// NewFacilitatorClient returns a client for the facilitator at base,
// sending headers (e.g. an API key) on every request. Redirects are
// followed (net/http keeps the method and body on 307/308).
func NewFacilitatorClient(base string, headers http.Header, timeout time.Duration) *FacilitatorClient {
	return &FacilitatorClient{base: strings.TrimRight(base, "/"), headers: headers.Clone(),
		http: &http.Client{Timeout: timeout}}
}

// maxFacilitatorBody bounds what is read of an answer.
const maxFacilitatorBody = 1 << 20

func (c *FacilitatorClient) post(ctx context.Context, path string, req *FacilitatorRequest) ([]byte, int, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, 0, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrFacilitatorUnavailable, err)
	}
	for k, vs := range c.headers {
		hr.Header[k] = vs
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(hr)
	if err != nil {
		// The error names the URL, never the headers.
		return nil, 0, fmt.Errorf("%w: %s: %v", ErrFacilitatorUnavailable, path, err)
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(io.LimitReader(resp.Body, maxFacilitatorBody))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %s: read: %v", ErrFacilitatorUnavailable, path, err)
	}
	return rb, resp.StatusCode, nil
}

// Verify asks the facilitator whether the payment is valid. A verdict
// comes back even on a non-2xx status when the body carries isValid.
func (c *FacilitatorClient) Verify(ctx context.Context, req *FacilitatorRequest) (*VerifyResponse, error) {
	rb, status, err := c.post(ctx, "/verify", req)
	if err != nil {
		return nil, err
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(rb, &probe) != nil || probe["isValid"] == nil {
		return nil, fmt.Errorf("%w: /verify answered %d without a verdict", ErrFacilitatorUnavailable, status)
	}
	var v VerifyResponse
	if err := json.Unmarshal(rb, &v); err != nil {
		return nil, fmt.Errorf("%w: /verify: %v", ErrFacilitatorUnavailable, err)
	}
	return &v, nil
}

// Settle asks the facilitator to execute the payment; it returns the
// decoded answer and its raw JSON.
func (c *FacilitatorClient) Settle(ctx context.Context, req *FacilitatorRequest) (*SettleResponse, json.RawMessage, error) {
	rb, status, err := c.post(ctx, "/settle", req)
	if err != nil {
		return nil, nil, err
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(rb, &probe) != nil || probe["success"] == nil {
		return nil, nil, fmt.Errorf("%w: /settle answered %d without a result", ErrFacilitatorUnavailable, status)
	}
	var s SettleResponse
	if err := json.Unmarshal(rb, &s); err != nil {
		return nil, nil, fmt.Errorf("%w: /settle: %v", ErrFacilitatorUnavailable, err)
	}
	return &s, rb, nil
}
