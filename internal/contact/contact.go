// Package contact owns what people send the operator before or beside
// using the API: waitlist sign-ups for an API key and public-beta feedback.
// Rate limits are the HTTP layer's; this package validates and stores.
package contact

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/mail"
	"strings"
	"unicode/utf8"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
)

// Limits on what one report may hold. They are documented in the OpenAPI
// document and /docs/feedback; the HTTP layer also bounds the whole body.
const (
	MaxEmailLen       = 254 // RFC 5321 path limit
	MaxTitleLen       = 200
	MaxDescriptionLen = 10000
	MaxJobIDLen       = 64
	MaxMetadataBytes  = 8 << 10
)

// Service validates and stores waitlist entries and feedback.
type Service struct {
	store store.Store
	clock clock.Clock
}

// New returns a service over db.
func New(db store.Store, clk clock.Clock) *Service { return &Service{store: db, clock: clk} }

// NormalizeEmail checks an address and returns its stored form (trimmed,
// lower case). It accepts a bare address with a dotted domain, the shape
// a mail system can deliver to; display names ("Ann <a@b.c>") are refused.
func NormalizeEmail(raw string) (string, error) {
	s := strings.ToLower(strings.TrimSpace(raw))
	invalid := fault.Invalid("invalid_email", "Send a single email address such as you@example.com.",
		"email %q is not a valid address", raw).With("field", "email")
	if s == "" {
		return "", fault.Invalid("email_required", "Send {\"email\": \"you@example.com\"}.", "email is required").
			With("field", "email")
	}
	if len(s) > MaxEmailLen {
		return "", invalid
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" {
		return "", invalid
	}
	local, domain, ok := strings.Cut(s, "@")
	if !ok || local == "" || !strings.Contains(domain, ".") || strings.HasPrefix(domain, ".") ||
		strings.HasSuffix(domain, ".") || strings.Contains(domain, "..") {
		return "", invalid
	}
	return s, nil
}

// JoinWaitlist stores the address once. created is false when it was
// already on the list; the answer is otherwise the same, so the endpoint
// does not tell strangers who signed up.
func (s *Service) JoinWaitlist(ctx context.Context, email string) (e *store.WaitlistEntry, created bool, err error) {
	norm, err := NormalizeEmail(email)
	if err != nil {
		return nil, false, err
	}
	e, created, err = s.store.WaitlistAdd(ctx, &store.WaitlistAddParams{ID: id.New(id.Waitlist), Email: norm, Now: s.clock.Now()})
	if err != nil {
		return nil, false, fmt.Errorf("waitlist add: %w", err)
	}
	return e, created, nil
}

// FeedbackInput is one report as sent. AccountID is set by the caller when
// the request carried valid credentials.
type FeedbackInput struct {
	Type        string
	Title       string
	Description string
	JobID       string
	Metadata    json.RawMessage // nil, JSON null, or an object
	AccountID   string
}

// SubmitFeedback validates and stores one report.
func (s *Service) SubmitFeedback(ctx context.Context, in FeedbackInput) (*store.Feedback, error) {
	typ := store.FeedbackType(in.Type)
	types := make([]string, len(store.FeedbackTypes))
	for i, t := range store.FeedbackTypes {
		types[i] = string(t)
	}
	switch {
	case in.Type == "":
		return nil, fault.Invalid("feedback_type_required", "Set type to one of: "+strings.Join(types, ", ")+".",
			"type is required").With("field", "type").With("allowed", types)
	case !typ.Valid():
		return nil, fault.Invalid("invalid_feedback_type", "Set type to one of: "+strings.Join(types, ", ")+".",
			"type %q is not one of %s", in.Type, strings.Join(types, ", ")).With("field", "type").With("allowed", types)
	}
	title, desc := strings.TrimSpace(in.Title), strings.TrimSpace(in.Description)
	if err := text("title", title, MaxTitleLen); err != nil {
		return nil, err
	}
	if err := text("description", desc, MaxDescriptionLen); err != nil {
		return nil, err
	}
	jobID := strings.TrimSpace(in.JobID)
	if len(jobID) > MaxJobIDLen {
		return nil, fault.Invalid("invalid_job_id", "Send the id of the job the report is about (job_...), or leave it out.",
			"job_id is longer than %d bytes", MaxJobIDLen).With("field", "job_id")
	}
	meta := bytes.TrimSpace(in.Metadata)
	if len(meta) == 0 || string(meta) == "null" {
		meta = []byte("{}")
	}
	if meta[0] != '{' {
		return nil, fault.Invalid("invalid_metadata", "Send metadata as a JSON object, or leave it out.",
			"metadata must be a JSON object").With("field", "metadata")
	}
	if len(meta) > MaxMetadataBytes {
		return nil, fault.Invalid("metadata_too_large", fmt.Sprintf("Keep metadata under %d bytes of JSON.", MaxMetadataBytes),
			"metadata is %d bytes, more than %d", len(meta), MaxMetadataBytes).With("field", "metadata")
	}
	f, err := s.store.FeedbackCreate(ctx, &store.FeedbackCreateParams{ID: id.New(id.Feedback), Type: typ, Title: title,
		Description: desc, JobID: jobID, Metadata: json.RawMessage(meta), AccountID: in.AccountID, Now: s.clock.Now()})
	if err != nil {
		return nil, fmt.Errorf("feedback create: %w", err)
	}
	return f, nil
}

func text(field, v string, maxRunes int) error {
	if v == "" {
		return fault.Invalid(field+"_required", "Send a non-empty "+field+".", "%s is required", field).With("field", field)
	}
	if n := utf8.RuneCountInString(v); n > maxRunes {
		return fault.Invalid(field+"_too_long", fmt.Sprintf("Shorten %s to at most %d characters.", field, maxRunes),
			"%s has %d characters, more than %d", field, n, maxRunes).With("field", field)
	}
	return nil
}

// ListWaitlist and ListFeedback page the operator's listings, newest first.
func (s *Service) ListWaitlist(ctx context.Context, p store.ListParams) ([]store.WaitlistEntry, error) {
	return s.store.WaitlistList(ctx, &p)
}

func (s *Service) ListFeedback(ctx context.Context, p store.ListParams) ([]store.Feedback, error) {
	return s.store.FeedbackList(ctx, &p)
}
