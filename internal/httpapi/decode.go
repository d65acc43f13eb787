package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/skiffhq/skiff/internal/fault"
)

// MaxJSONBody bounds every JSON request body but a job submission's
// (submit.MaxSubmitBodyBytes, MaxBatchBodyBytes) and those with their own.
const MaxJSONBody = 1 << 20

// decodeJSON reads a JSON object body into v. Unknown fields are ignored
// (clients must tolerate additive changes both ways). It also returns the
// object's raw fields, so handlers can refuse fields they must not accept.
// An empty body decodes as {} when optional is true.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any, optional bool) (map[string]json.RawMessage, error) {
	raw, _, err := decodeJSONBody(w, r, v, optional)
	return raw, err
}

// decodeJSONBody is decodeJSON that also returns the body's exact bytes
// (what an Idempotency-Key's request hash covers).
func decodeJSONBody(w http.ResponseWriter, r *http.Request, v any, optional bool) (map[string]json.RawMessage, []byte, error) {
	return decodeJSONLimit(w, r, v, optional, MaxJSONBody)
}

// decodeJSONLimit is decodeJSONBody with a body limit of maxBytes.
func decodeJSONLimit(w http.ResponseWriter, r *http.Request, v any, optional bool, maxBytes int64) (map[string]json.RawMessage, []byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, nil, fault.New(fault.KindTooLarge, "body_too_large", fmt.Sprintf("Send a body of at most %s.", byteSize(maxBytes)),
				"request body is larger than %d bytes", maxBytes)
		}
		return nil, nil, fault.New(fault.KindBadRequest, "unreadable_body", "Resend the request.", "could not read the request body")
	}
	exact := body
	if len(strings.TrimSpace(string(body))) == 0 {
		if optional {
			body = []byte("{}")
		} else {
			return nil, nil, fault.New(fault.KindBadRequest, "empty_body", "Send a JSON object body.", "request body is empty")
		}
	}
	// JSON is UTF-8 (RFC 8259). encoding/json lets invalid bytes through into
	// json.RawMessage fields, which PostgreSQL then refuses as text.
	if !utf8.Valid(body) {
		return nil, nil, fault.New(fault.KindBadRequest, "malformed_json", "Send the body as UTF-8 encoded JSON.",
			"request body is not valid UTF-8")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) || !json.Valid(body) {
			return nil, nil, fault.New(fault.KindBadRequest, "malformed_json", "Send a valid JSON object.",
				"request body is not valid JSON")
		}
		return nil, nil, fault.Invalid("not_an_object", "Send a JSON object.", "request body must be a JSON object")
	}
	if raw == nil {
		return nil, nil, fault.Invalid("not_an_object", "Send a JSON object.", "request body must be a JSON object")
	}
	if m, ok := v.(*map[string]json.RawMessage); ok {
		*m = raw // the fields are all the caller asked for: decode once
		return raw, exact, nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, nil, fault.Invalid("wrong_type", "Send each field with the type the API documents.",
				"field %s must be %s, not %s", te.Field, jsonType(te.Type.String()), te.Value).
				With("field", te.Field)
		}
		return nil, nil, fault.Invalid("invalid_body", "Send a JSON object as documented.", "invalid request body: %v", err)
	}
	return raw, exact, nil
}

func jsonType(goType string) string {
	switch {
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "*int"):
		return "an integer"
	case strings.Contains(goType, "string") && strings.HasPrefix(goType, "map"):
		return "an object of strings"
	case strings.Contains(goType, "string"):
		return "a string"
	case strings.Contains(goType, "bool"):
		return "a boolean"
	case strings.HasPrefix(goType, "map"), strings.Contains(goType, "struct"):
		return "an object"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	}
	return fmt.Sprintf("of type %s", goType)
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
