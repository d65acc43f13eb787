// Package client is the Go client of the Skiff HTTP API (/api/v1). It
// speaks the wire types of package apiv1, turns every failure into an
// *Error carrying the envelope's code and recommended action, retries 429
// and 503 answers after their Retry-After, and, given a Payer, pays a 402's
// quote and resends the same request with the same Idempotency-Key.
//
//	c := client.New("https://skiff.example.com", os.Getenv("SKIFF_TOKEN"))
//	job, err := c.SubmitJob(ctx, &apiv1.JobSubmit{Project: client.Ptr("hello"), ...})
package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client calls one Skiff server. It is safe for concurrent use.
type Client struct {
	baseURL    string
	token      string
	hc         *http.Client
	payer      Payer
	maxRetries int
	maxWait    time.Duration
	sleep      func(ctx context.Context, d time.Duration) error
	userAgent  string
	pageSize   int // 0: each list's largest page
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends requests through hc (default: a client without a
// total timeout, since streams and uploads are long).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithPayer pays the quote of a 402 answer and resends the request.
func WithPayer(p Payer) Option { return func(c *Client) { c.payer = p } }

// WithRetries sets how many times a 429 or 503 answer is retried (default
// 5) and the longest wait between two tries (default 30 s).
func WithRetries(n int, maxWait time.Duration) Option {
	return func(c *Client) { c.maxRetries, c.maxWait = n, maxWait }
}

// WithSleep replaces the wait between retries (tests count the waits).
func WithSleep(sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(c *Client) { c.sleep = sleep }
}

// WithPageSize sets the page size of the list iterators (0: each list's
// largest).
func WithPageSize(n int) Option { return func(c *Client) { c.pageSize = n } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client of the server at baseURL (no trailing /api/v1)
// sending token as its bearer token; "" sends none.
func New(baseURL, token string, opts ...Option) *Client {
	c := &Client{baseURL: strings.TrimRight(baseURL, "/"), token: token, hc: &http.Client{},
		maxRetries: 5, maxWait: 30 * time.Second, sleep: sleepCtx, userAgent: "skiff-go-client"}
	for _, o := range opts {
		o(c)
	}
	return c
}

// BaseURL is the server's address.
func (c *Client) BaseURL() string { return c.baseURL }

// WithToken returns a copy of c that sends token.
func (c *Client) WithToken(token string) *Client {
	cp := *c
	cp.token = token
	return &cp
}

// Ptr returns a pointer to v, for the optional fields of apiv1 bodies.
func Ptr[T any](v T) *T { return &v }

// NewIdempotencyKey returns a random key for the Idempotency-Key header.
func NewIdempotencyKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "skc-" + hex.EncodeToString(b)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// request is one call. body is sent as JSON unless it is a []byte or open
// is set; open makes a fresh body for each try, so that retries and the
// resend after a payment send the same bytes.
type request struct {
	method string
	path   string
	query  url.Values
	body   any
	open   func() (io.ReadCloser, error)
	length int64 // of open's body; -1 unknown
	header http.Header
	// noRetry: the body cannot be sent twice.
	noRetry bool
	// noPay: a 402 is answered to the caller, not paid here.
	noPay bool
}

// do sends r and returns the response when its status is 2xx; any other
// status is read into an *Error. The caller closes the body.
func (c *Client) do(ctx context.Context, r *request) (*http.Response, error) {
	open, length, ctype, err := r.bodyFunc()
	if err != nil {
		return nil, err
	}
	paid := false
	for try := 0; ; try++ {
		resp, err := c.send(ctx, r, open, length, ctype)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode < 300 || (resp.StatusCode < 400 && r.method == http.MethodGet) {
			return resp, nil
		}
		apiErr := readError(resp)
		switch {
		case retryable(resp.StatusCode, apiErr) && try < c.maxRetries && !r.noRetry:
			if err := c.sleep(ctx, c.backoff(try, apiErr.RetryAfter)); err != nil {
				return nil, err
			}
			continue
		case resp.StatusCode == http.StatusPaymentRequired && c.payer != nil && !paid && !r.noRetry && !r.noPay &&
			apiErr.PaymentRequired != nil && apiErr.Quote != nil:
			// Pay the quote, then resend the same request: the same body and
			// the same Idempotency-Key, so the server admits it once.
			if _, err := c.PayQuote(ctx, apiErr.Quote.ID, apiErr.PaymentRequired); err != nil {
				return nil, fmt.Errorf("pay quote %s for %s %s: %w", apiErr.Quote.ID, r.method, r.path, err)
			}
			paid = true
			continue
		}
		return nil, apiErr
	}
}

// retryable: a 429, or a 503 other than a feature the server has not
// configured (waiting would not change that answer).
func retryable(status int, e *Error) bool {
	switch status {
	case http.StatusTooManyRequests:
		return true
	case http.StatusServiceUnavailable:
		return !strings.HasSuffix(e.Envelope.Code, "_not_configured")
	}
	return false
}

// backoff is Retry-After when the server sent one, else 0.5 s doubling,
// at most maxWait.
func (c *Client) backoff(try int, retryAfter time.Duration) time.Duration {
	d := retryAfter
	if d <= 0 {
		d = 500 * time.Millisecond << min(try, 10)
	}
	return min(d, c.maxWait)
}

func (r *request) bodyFunc() (open func() (io.ReadCloser, error), length int64, ctype string, err error) {
	if r.open != nil {
		return r.open, r.length, "", nil
	}
	var b []byte
	switch v := r.body.(type) {
	case nil:
		return nil, 0, "", nil
	case []byte:
		b = v
	default:
		if b, err = json.Marshal(v); err != nil {
			return nil, 0, "", fmt.Errorf("encode %s %s body: %w", r.method, r.path, err)
		}
	}
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		int64(len(b)), "application/json", nil
}

func (c *Client) send(ctx context.Context, r *request, open func() (io.ReadCloser, error), length int64, ctype string) (*http.Response, error) {
	u := c.baseURL + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var body io.ReadCloser = http.NoBody
	if open != nil {
		var err error
		if body, err = open(); err != nil {
			return nil, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		body.Close()
		return nil, fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	if open != nil {
		req.ContentLength = length
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("Accept", "application/json")
	for k, vs := range r.header {
		req.Header[http.CanonicalHeaderKey(k)] = vs
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, &Error{Status: 0, Envelope: envelopeOf("unavailable", "cannot reach "+c.baseURL+": "+err.Error(),
			"Check the server address (SKIFF_URL) and that the server is running."), cause: err}
	}
	return resp, nil
}

// call sends r and decodes a JSON answer into out (nil: discard).
func (c *Client) call(ctx context.Context, r *request, out any) error {
	resp, err := c.do(ctx, r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decode %s %s answer: %w", r.method, r.path, err)
	}
	return nil
}

func (c *Client) get(ctx context.Context, path string, q url.Values, out any) error {
	return c.call(ctx, &request{method: http.MethodGet, path: path, query: q}, out)
}

// esc escapes one path segment.
func esc(s string) string { return url.PathEscape(s) }
