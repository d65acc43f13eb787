package paywire

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// MaxHeaderBytes bounds a payment header (PAYMENT-SIGNATURE or an MPP
// credential); real ones are about 1.5 KB.
const MaxHeaderBytes = 16 << 10

// Header names (x402 v2 HTTP transport; MPP "Payment" auth scheme).
const (
	HeaderPaymentRequired  = "PAYMENT-REQUIRED"
	HeaderPaymentSignature = "PAYMENT-SIGNATURE"
	HeaderPaymentResponse  = "PAYMENT-RESPONSE"
	HeaderPaymentReceipt   = "Payment-Receipt"
)

// Resource is what a payment pays for.
type Resource struct {
	URL         string `json:"url"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
}

// Requirements is one x402 PaymentRequirements (scheme exact, EVM).
type Requirements struct {
	Scheme            string         `json:"scheme"`
	Network           string         `json:"network"`
	Amount            string         `json:"amount"`
	Asset             string         `json:"asset"`
	PayTo             string         `json:"payTo"`
	MaxTimeoutSeconds int64          `json:"maxTimeoutSeconds"`
	Extra             map[string]any `json:"extra,omitempty"`
}

// PaymentRequired is the x402 v2 body of the PAYMENT-REQUIRED header.
type PaymentRequired struct {
	X402Version int            `json:"x402Version"`
	Error       string         `json:"error,omitempty"`
	Resource    Resource       `json:"resource"`
	Accepts     []Requirements `json:"accepts"`
	Extensions  map[string]any `json:"extensions,omitempty"`
}

// EVMAuthorization is the EIP-3009 authorization as x402 and MPP spell it:
// addresses and integers as strings.
type EVMAuthorization struct {
	From        string `json:"from"`
	To          string `json:"to"`
	Value       string `json:"value"`
	ValidAfter  string `json:"validAfter"`
	ValidBefore string `json:"validBefore"`
	Nonce       string `json:"nonce"`
}

// ExactPayload is the payload of the exact EVM scheme.
type ExactPayload struct {
	Signature     string           `json:"signature"`
	Authorization EVMAuthorization `json:"authorization"`
}

// PaymentPayload is the x402 v2 body of PAYMENT-SIGNATURE.
type PaymentPayload struct {
	X402Version int             `json:"x402Version"`
	Resource    *Resource       `json:"resource,omitempty"`
	Accepted    Requirements    `json:"accepted"`
	Payload     ExactPayload    `json:"payload"`
	Extensions  json.RawMessage `json:"extensions,omitempty"`
}

// SettleResponse is the facilitator's /settle answer and the body of
// PAYMENT-RESPONSE.
type SettleResponse struct {
	Success      bool   `json:"success"`
	ErrorReason  string `json:"errorReason,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	Payer        string `json:"payer,omitempty"`
	Transaction  string `json:"transaction"`
	Network      string `json:"network"`
	Amount       string `json:"amount,omitempty"`
}

// VerifyResponse is the facilitator's /verify answer.
type VerifyResponse struct {
	IsValid        bool   `json:"isValid"`
	InvalidReason  string `json:"invalidReason,omitempty"`
	InvalidMessage string `json:"invalidMessage,omitempty"`
	Payer          string `json:"payer,omitempty"`
}

// Header decoding errors; each is a 422 to the payer.
var (
	ErrHeaderTooLarge = fmt.Errorf("payment header is over %d bytes", MaxHeaderBytes)
	ErrBase64         = errors.New("payment header is not valid base64")
	ErrJSON           = errors.New("payment header does not hold a JSON object of the expected shape")
)

// x402 clients refuse anything but standard padded-or-not base64; so do we.
var stdBase64Re = regexp.MustCompile(`^[A-Za-z0-9+/]*={0,2}$`)

// EncodeStd is standard base64 of v's JSON (the x402 header encoding).
func EncodeStd(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only our own plain structs are encoded
	}
	return base64.StdEncoding.EncodeToString(b)
}

// EncodeURL is unpadded base64url of v's JSON (the MPP encoding).
func EncodeURL(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodePaymentSignature reads a PAYMENT-SIGNATURE header.
func DecodePaymentSignature(h string) (*PaymentPayload, error) {
	h = strings.TrimSpace(h)
	if len(h) > MaxHeaderBytes {
		return nil, ErrHeaderTooLarge
	}
	if !stdBase64Re.MatchString(h) {
		return nil, ErrBase64
	}
	raw, err := base64.StdEncoding.DecodeString(h)
	if err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(h); err != nil {
			return nil, ErrBase64
		}
	}
	var p PaymentPayload
	if err := strictJSON(raw, &p); err != nil {
		return nil, err
	}
	if p.X402Version != 2 {
		return nil, fmt.Errorf("%w: x402Version must be 2", ErrJSON)
	}
	return &p, nil
}

func strictJSON(raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%w: %v", ErrJSON, err)
	}
	return nil
}

// MPPChallenge is one "Payment" challenge of WWW-Authenticate, as it is
// echoed in a credential.
type MPPChallenge struct {
	ID          string `json:"id"`
	Realm       string `json:"realm"`
	Method      string `json:"method"`
	Intent      string `json:"intent"`
	Request     string `json:"request"`
	Expires     string `json:"expires,omitempty"`
	Description string `json:"description,omitempty"`
	Digest      string `json:"digest,omitempty"`
	Opaque      string `json:"opaque,omitempty"`
}

// MPPPayload is the evm method's authorization payload.
type MPPPayload struct {
	Type        string `json:"type"`
	From        string `json:"from"`
	To          string `json:"to"`
	Value       string `json:"value"`
	ValidAfter  string `json:"validAfter"`
	ValidBefore string `json:"validBefore"`
	Nonce       string `json:"nonce"`
	Signature   string `json:"signature"`
}

// MPPCredential is the JSON of "Authorization: Payment <credential>".
type MPPCredential struct {
	Challenge MPPChallenge `json:"challenge"`
	Payload   MPPPayload   `json:"payload"`
	Source    string       `json:"source,omitempty"`
}

// MPPReceipt is the JSON of Payment-Receipt.
type MPPReceipt struct {
	Status      string `json:"status"`
	Method      string `json:"method"`
	Timestamp   string `json:"timestamp"`
	Reference   string `json:"reference"`
	ChallengeID string `json:"challengeId"`
	ChainID     int64  `json:"chainId"`
}

// MPPCredentialFrom returns the credential part of an Authorization header
// that uses the Payment scheme; ok is false for any other scheme.
func MPPCredentialFrom(authorization string) (cred string, ok bool) {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(authorization), " ")
	if !strings.EqualFold(scheme, "Payment") {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// DecodeMPPCredential reads a base64url credential (padding allowed).
func DecodeMPPCredential(s string) (*MPPCredential, error) {
	if len(s) > MaxHeaderBytes {
		return nil, ErrHeaderTooLarge
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil || s == "" {
		return nil, ErrBase64
	}
	var c MPPCredential
	if err := strictJSON(raw, &c); err != nil {
		return nil, err
	}
	if c.Challenge.ID == "" {
		return nil, fmt.Errorf("%w: challenge.id is missing", ErrJSON)
	}
	return &c, nil
}

// DecodeMPPRequest reads a challenge's request parameter into a generic
// JSON value for comparison (clients re-canonicalise it when echoing).
func DecodeMPPRequest(s string) (any, error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, ErrBase64
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrJSON, err)
	}
	return v, nil
}

// JCS encodes v (maps, slices, strings, bools, integers that fit in
// float64 exactly, json.Number) per RFC 8785 for the values we emit:
// sorted keys, no insignificant whitespace, no HTML escaping.
func JCS(v any) []byte {
	var sb strings.Builder
	jcs(&sb, v)
	return []byte(sb.String())
}

func jcs(sb *strings.Builder, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys) // our keys are ASCII, where UTF-16 order is byte order
		sb.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				sb.WriteByte(',')
			}
			jcsString(sb, k)
			sb.WriteByte(':')
			jcs(sb, x[k])
		}
		sb.WriteByte('}')
	case []any:
		sb.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				sb.WriteByte(',')
			}
			jcs(sb, e)
		}
		sb.WriteByte(']')
	case []string:
		a := make([]any, len(x))
		for i := range x {
			a[i] = x[i]
		}
		jcs(sb, a)
	case string:
		jcsString(sb, x)
	default:
		b, err := json.Marshal(x)
		if err != nil {
			panic(err)
		}
		sb.Write(b)
	}
}

func jcsString(sb *strings.Builder, s string) {
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	sb.WriteString(strings.TrimSuffix(buf.String(), "\n"))
}

// quoteParam is an auth-param quoted-string, escaped as mppx does.
func quoteParam(s string) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '\\' || r == '"':
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case r > 0xff || r < 0x20:
			fmt.Fprintf(&sb, "\\u%04x", r)
		default:
			sb.WriteRune(r)
		}
	}
	sb.WriteByte('"')
	return sb.String()
}

// WWWAuthenticate renders c as a "Payment" challenge.
func (c MPPChallenge) WWWAuthenticate() string {
	parts := []string{
		"id=" + quoteParam(c.ID), "realm=" + quoteParam(c.Realm), "method=" + quoteParam(c.Method),
		"intent=" + quoteParam(c.Intent), "request=" + quoteParam(c.Request),
	}
	if c.Expires != "" {
		parts = append(parts, "expires="+quoteParam(c.Expires))
	}
	if c.Description != "" {
		parts = append(parts, "description="+quoteParam(c.Description))
	}
	return "Payment " + strings.Join(parts, ", ")
}

func stdEnc(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func base64URL(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
