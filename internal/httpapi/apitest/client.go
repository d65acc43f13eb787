package apitest

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
)

// Check says what the contract must think of a request.
type Check int

const (
	// MustMatch: the request must match openapi.json (the default).
	MustMatch Check = iota
	// MustViolate: the request must break openapi.json too, e.g. a value
	// out of a documented range, a missing token, an unknown route. It shows
	// the document and the server agree on what is wrong.
	MustViolate
	// Unchecked: a rule the document cannot express (a reserved env prefix,
	// a body over 1 MiB); the request is sent without checking it.
	Unchecked
)

// Client sends real HTTP requests and checks each against the contract:
// the request (per its Check) and always the response.
type Client struct {
	BaseURL  string
	Token    string // "" sends no Authorization header
	Contract *Contract
	HTTP     *http.Client // nil: a client that does not follow redirects
}

// Request is one call.
type Request struct {
	Method string
	Path   string // with the query, e.g. /api/v1/projects/p/kv?limit=2
	// Body is encoded as JSON; a []byte, json.RawMessage or string is sent
	// as is (with Content-Type application/json unless Header says otherwise).
	Body   any
	Header http.Header // extra headers; Authorization here replaces Token
	Check  Check
}

// Response is what came back, body read in full.
type Response struct {
	Method, Path string
	Status       int
	Header       http.Header
	Body         []byte
}

// Do sends req and checks it and its answer against the contract, failing t
// (without stopping it) on every mismatch.
func (c *Client) Do(t testing.TB, req Request) *Response {
	t.Helper()
	var body []byte
	switch b := req.Body.(type) {
	case nil:
	case []byte:
		body = b
	case json.RawMessage:
		body = b
	case string:
		body = []byte(b)
	default:
		var err error
		if body, err = json.Marshal(b); err != nil {
			t.Fatalf("encode request body: %v", err)
		}
	}
	hr, err := http.NewRequestWithContext(t.Context(), req.Method, c.BaseURL+req.Path, bytes.NewReader(body))
	if err != nil {
		t.Fatalf("build request %s %s: %v", req.Method, req.Path, err)
	}
	if body == nil {
		hr.Body, hr.GetBody, hr.ContentLength = http.NoBody, nil, 0
	} else {
		hr.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		hr.Header.Set("Authorization", "Bearer "+c.Token)
	}
	for k, vs := range req.Header {
		hr.Header[http.CanonicalHeaderKey(k)] = vs
	}

	if c.Contract != nil && req.Check != Unchecked {
		vreq := hr.Clone(t.Context())
		vreq.Body = io.NopCloser(bytes.NewReader(body))
		err := c.Contract.ValidateRequest(t.Context(), vreq)
		switch {
		case req.Check == MustMatch && err != nil:
			t.Errorf("request %s %s does not match openapi.json: %v", req.Method, req.Path, err)
		case req.Check == MustViolate && err == nil:
			t.Errorf("request %s %s matches openapi.json; want the document to refuse it as the server does", req.Method, req.Path)
		}
	}

	hc := c.HTTP
	if hc == nil {
		// Show what the server answered, a redirect included.
		hc = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	resp, err := hc.Do(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.Path, err)
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", req.Method, req.Path, err)
	}
	out := &Response{Method: req.Method, Path: req.Path, Status: resp.StatusCode, Header: resp.Header, Body: rb}
	if c.Contract != nil {
		vreq := hr.Clone(t.Context())
		vreq.Body = io.NopCloser(bytes.NewReader(body))
		if err := c.Contract.ValidateResponse(t.Context(), vreq, resp.StatusCode, resp.Header, rb); err != nil {
			t.Errorf("response does not match openapi.json: %v\nbody: %s", err, truncate(rb))
		}
	}
	return out
}

// Get, Post, Put and Delete are Do for well-formed requests.
func (c *Client) Get(t testing.TB, path string) *Response {
	t.Helper()
	return c.Do(t, Request{Method: http.MethodGet, Path: path})
}

func (c *Client) Post(t testing.TB, path string, body any) *Response {
	t.Helper()
	return c.Do(t, Request{Method: http.MethodPost, Path: path, Body: body})
}

func (c *Client) Put(t testing.TB, path string, body any) *Response {
	t.Helper()
	return c.Do(t, Request{Method: http.MethodPut, Path: path, Body: body})
}

func (c *Client) Delete(t testing.TB, path string) *Response {
	t.Helper()
	return c.Do(t, Request{Method: http.MethodDelete, Path: path})
}

// Want fails t unless the status is want.
func (r *Response) Want(t testing.TB, want int) *Response {
	t.Helper()
	if r.Status != want {
		t.Errorf("%s %s: got status %d, want %d; body: %s", r.Method, r.Path, r.Status, want, truncate(r.Body))
	}
	return r
}

// JSON decodes the body into v after checking the status and that the
// answer is application/json.
func (r *Response) JSON(t testing.TB, want int, v any) {
	t.Helper()
	r.Want(t, want)
	r.wantJSON(t)
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("%s %s: decode body: %v; body: %s", r.Method, r.Path, err, truncate(r.Body))
	}
}

// Object decodes a JSON object body after checking the status.
func (r *Response) Object(t testing.TB, want int) map[string]any {
	t.Helper()
	var m map[string]any
	r.JSON(t, want, &m)
	return m
}

func (r *Response) wantJSON(t testing.TB) {
	t.Helper()
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		t.Errorf("%s %s: got Content-Type %q, want application/json", r.Method, r.Path, r.Header.Get("Content-Type"))
	}
}

// Envelope is a decoded failure body.
type Envelope struct {
	Error             string
	Code              string
	RecommendedAction string
	Details           map[string]any
	RequestID         string
	// Raw is the whole body, for comparisons.
	Raw map[string]any
}

// Fail checks a failure answer: the status, Content-Type application/json,
// and the envelope {error, recommended_action?, details?} (plus code and
// request_id) with the right types; request_id must equal X-Request-Id.
func (r *Response) Fail(t testing.TB, want int) *Envelope {
	t.Helper()
	r.Want(t, want)
	r.wantJSON(t)
	var raw map[string]any
	if err := json.Unmarshal(r.Body, &raw); err != nil {
		t.Fatalf("%s %s: error body is not a JSON object: %v; body: %s", r.Method, r.Path, err, truncate(r.Body))
	}
	env := &Envelope{Raw: raw}
	str := func(key string, required bool) string {
		v, ok := raw[key]
		if !ok {
			if required {
				t.Errorf("%s %s: envelope has no %q: %s", r.Method, r.Path, key, truncate(r.Body))
			}
			return ""
		}
		s, isStr := v.(string)
		if !isStr || s == "" {
			t.Errorf("%s %s: envelope %q is %#v, want a non-empty string", r.Method, r.Path, key, v)
		}
		return s
	}
	env.Error = str("error", true)
	env.RecommendedAction = str("recommended_action", false)
	env.Code = str("code", false)
	env.RequestID = str("request_id", false)
	if d, ok := raw["details"]; ok {
		m, isObj := d.(map[string]any)
		if !isObj {
			t.Errorf("%s %s: envelope details is %#v, want an object", r.Method, r.Path, d)
		}
		env.Details = m
	}
	if env.RequestID != "" && env.RequestID != r.Header.Get("X-Request-Id") {
		t.Errorf("%s %s: envelope request_id %q, X-Request-Id %q; want them equal", r.Method, r.Path, env.RequestID, r.Header.Get("X-Request-Id"))
	}
	return env
}

// WithoutRequestID is the envelope minus request_id, to compare two answers.
func (e *Envelope) WithoutRequestID() map[string]any {
	m := make(map[string]any, len(e.Raw))
	for k, v := range e.Raw {
		if k != "request_id" {
			m[k] = v
		}
	}
	return m
}

func truncate(b []byte) string {
	const max = 2000
	s := string(b)
	if len(s) > max {
		return s[:max] + "...(truncated)"
	}
	return s
}

// WaitPush polls a push's status URL every poll until the push is terminal
// and returns its record; past within the test fails with the log tail.
func WaitPush(t testing.TB, c *Client, statusURL string, within, poll time.Duration) apiv1.PushRecord {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var rec apiv1.PushRecord
		c.Get(t, statusURL).JSON(t, http.StatusOK, &rec)
		if rec.Terminal {
			return rec
		}
		if time.Now().After(deadline) {
			t.Fatalf("push %s still %s after %s; log tail:\n%s", rec.PushRef, rec.Status, within, rec.LogTail)
		}
		time.Sleep(poll)
	}
}
