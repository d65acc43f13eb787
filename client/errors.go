package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/skiffhq/skiff/apiv1"
)

// Error is a failure answer: the HTTP status and the error envelope. A
// connection failure is an Error with Status 0 and code "unavailable".
type Error struct {
	Status   int
	Envelope apiv1.Error
	// RetryAfter is the Retry-After header of a 429 or 503.
	RetryAfter time.Duration
	// Quote and PaymentRequired are set on a 402: the quote to pay before
	// the same request is sent again.
	Quote           *apiv1.Quote
	PaymentRequired *PaymentRequired
	cause           error
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Status != 0 {
		fmt.Fprintf(&b, "%d ", e.Status)
	}
	b.WriteString(e.Envelope.Error)
	if e.Envelope.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Envelope.Code)
	}
	if e.Envelope.RecommendedAction != "" {
		b.WriteString(". " + e.Envelope.RecommendedAction)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.cause }

// Code is the envelope's machine-readable code.
func (e *Error) Code() string { return e.Envelope.Code }

// RecommendedAction says what to do next.
func (e *Error) RecommendedAction() string { return e.Envelope.RecommendedAction }

// AsError returns err's *Error, if it has one.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// StatusOf is err's HTTP status: 0 when err is not an answer of the server.
func StatusOf(err error) int {
	if e, ok := AsError(err); ok {
		return e.Status
	}
	return 0
}

// IsNotFound says whether err is a 404 answer.
func IsNotFound(err error) bool { return StatusOf(err) == http.StatusNotFound }

func envelopeOf(code, msg, action string) apiv1.Error {
	return apiv1.Error{Error: msg, Code: code, RecommendedAction: action}
}

// readError reads a failure answer and closes its body.
func readError(resp *http.Response) *Error {
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	e := &Error{Status: resp.StatusCode}
	var body struct {
		apiv1.Error
		Quote           *apiv1.Quote     `json:"quote"`
		PaymentRequired *PaymentRequired `json:"payment_required"`
	}
	if err := json.Unmarshal(raw, &body); err != nil || body.Error.Error == "" {
		msg := strings.TrimSpace(string(raw))
		if len(msg) > 200 {
			msg = msg[:200]
		}
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		e.Envelope = envelopeOf("", msg, "")
	} else {
		e.Envelope, e.Quote, e.PaymentRequired = body.Error, body.Quote, body.PaymentRequired
		if q, ok := body.Details["quote"]; ok && e.Quote == nil {
			// A shortfall names its quote among the details.
			if b, err := json.Marshal(q); err == nil {
				var quote apiv1.Quote
				if json.Unmarshal(b, &quote) == nil && quote.ID != "" {
					e.Quote = &quote
				}
			}
		}
	}
	if s, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && s >= 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	} else if t, err := http.ParseTime(resp.Header.Get("Retry-After")); err == nil {
		e.RetryAfter = time.Until(t)
	}
	return e
}
