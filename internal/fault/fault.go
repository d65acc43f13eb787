// Package fault defines the error kinds that domain code returns. Each kind
// carries a machine code and a recommended action; only the HTTP layer turns
// kinds into status codes, so domain packages never import net/http.
package fault

import (
	"errors"
	"fmt"
)

// Kind classifies a failure the way a caller needs to react to it.
type Kind string

const (
	KindInvalid             Kind = "invalid"          // the request is malformed or breaks a rule (422)
	KindBadRequest          Kind = "bad_request"      // the body cannot be read at all (400)
	KindUnauthenticated     Kind = "unauthenticated"  // missing or invalid credentials (401)
	KindPaymentRequired     Kind = "payment_required" // funds are needed first (402)
	KindForbidden           Kind = "forbidden"        // the caller may not do this (403)
	KindNotFound            Kind = "not_found"        // unknown, or belongs to someone else (404)
	KindMethod              Kind = "method_not_allowed"
	KindConflict            Kind = "conflict"              // the current state forbids it (409)
	KindGone                Kind = "gone"                  // expired or retired (410)
	KindTooLarge            Kind = "too_large"             // body over the limit (413)
	KindRangeNotSatisfiable Kind = "range_not_satisfiable" // 416
	KindRateLimited         Kind = "rate_limited"          // 429
	KindUnavailable         Kind = "unavailable"           // not ready or dependency down (503)
	KindBadGateway          Kind = "bad_gateway"           // a remote the caller named failed or sent what it may not (502)
	KindQuotaExceeded       Kind = "quota_exceeded"        // 507
	KindUpgradeRequired     Kind = "upgrade_required"      // the peer's protocol version is not ours (426)
	KindInternal            Kind = "internal"              // a bug or an infrastructure failure (500)
)

// Error is a failure a client can act on. Message and Action are shown to the
// client; Cause is only logged.
type Error struct {
	Kind    Kind
	Code    string // stable machine code, e.g. "project_not_found"
	Message string
	Action  string         // recommended_action
	Details map[string]any // extra machine-readable context
	// Fields are shown beside error at the top level of the envelope, for the
	// answers whose shape the spec fixes (e.g. the 409 of a push).
	Fields map[string]any
	Cause  error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s: %v", e.Message, e.Cause)
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Cause }

// With returns a copy of e with one more detail set.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Details = make(map[string]any, len(e.Details)+1)
	for k, v := range e.Details {
		c.Details[k] = v
	}
	c.Details[key] = value
	return &c
}

// WithAction returns a copy of e with the recommended action replaced.
func (e *Error) WithAction(action string) *Error {
	c := *e
	c.Action = action
	return &c
}

// As finds the first *Error in err's chain.
func As(err error) (*Error, bool) {
	var fe *Error
	if errors.As(err, &fe) {
		return fe, true
	}
	return nil, false
}

// Is reports whether err carries a fault of kind k.
func Is(err error, k Kind) bool {
	fe, ok := As(err)
	return ok && fe.Kind == k
}

func newf(kind Kind, code, action, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Action: action, Message: fmt.Sprintf(format, args...)}
}

// Invalid reports a request that breaks a validation rule.
func Invalid(code, action, format string, args ...any) *Error {
	return newf(KindInvalid, code, action, format, args...)
}

// NotFound reports an unknown resource. Callers use it for other accounts'
// resources too, so that existence never leaks across accounts.
func NotFound(what, id string) *Error {
	return newf(KindNotFound, what+"_not_found", "Check the "+what+" name or id; list them to see what exists.", "%s %q not found", what, id)
}

// Conflict reports a request the current state forbids.
func Conflict(code, action, format string, args ...any) *Error {
	return newf(KindConflict, code, action, format, args...)
}

// Forbidden reports a request the caller's role or the policy forbids.
func Forbidden(code, action, format string, args ...any) *Error {
	return newf(KindForbidden, code, action, format, args...)
}

// Unauthenticated reports missing or invalid credentials.
func Unauthenticated(format string, args ...any) *Error {
	return newf(KindUnauthenticated, "unauthenticated",
		"Send 'Authorization: Bearer <token>' with an API key (flk_...) or a wallet session token (fls_...).", format, args...)
}

// Internal wraps an unexpected failure. The cause is logged, never shown.
func Internal(cause error) *Error {
	return &Error{Kind: KindInternal, Code: "internal_error", Message: "internal error",
		Action: "Retry the request; if it keeps failing, report it with the request id.", Cause: cause}
}

// New builds an error of any kind.
func New(kind Kind, code, action, format string, args ...any) *Error {
	return newf(kind, code, action, format, args...)
}
