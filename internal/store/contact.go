package store

import (
	"context"
	"encoding/json"
	"time"
)

// WaitlistEntry is one address that asked for an API key.
type WaitlistEntry struct {
	ID        string
	Email     string // normalised: trimmed, lower case; unique
	CreatedAt time.Time
}

type WaitlistAddParams struct {
	ID    string
	Email string
	Now   time.Time
}

// FeedbackType is what a feedback report is about (spec 2.9).
type FeedbackType string

const (
	FeedbackBug            FeedbackType = "bug"
	FeedbackFeatureRequest FeedbackType = "feature_request"
	FeedbackProvisioning   FeedbackType = "provisioning"
	FeedbackJobTypeRequest FeedbackType = "job_type_request"
)

// FeedbackTypes lists every type, in the order the docs show them.
var FeedbackTypes = []FeedbackType{FeedbackBug, FeedbackFeatureRequest, FeedbackProvisioning, FeedbackJobTypeRequest}

// Valid reports whether t is a known type.
func (t FeedbackType) Valid() bool {
	for _, v := range FeedbackTypes {
		if t == v {
			return true
		}
	}
	return false
}

// Feedback is one report sent to the operator.
type Feedback struct {
	ID          string
	Type        FeedbackType
	Title       string
	Description string
	JobID       string          // "" when none was given
	Metadata    json.RawMessage // a JSON object, "{}" when none was given
	AccountID   string          // "" when sent without credentials
	CreatedAt   time.Time
}

type FeedbackCreateParams struct {
	ID          string
	Type        FeedbackType
	Title       string
	Description string
	JobID       string
	Metadata    json.RawMessage
	AccountID   string
	Now         time.Time
}

// ListParams pages an operator listing, newest first.
type ListParams struct {
	Limit, Offset int
}

type ContactStore interface {
	// WaitlistAdd stores the address once: a repeat returns the stored entry
	// and created false.
	WaitlistAdd(ctx context.Context, p *WaitlistAddParams) (e *WaitlistEntry, created bool, err error)
	// WaitlistList lists entries newest first.
	WaitlistList(ctx context.Context, p *ListParams) ([]WaitlistEntry, error)
	FeedbackCreate(ctx context.Context, p *FeedbackCreateParams) (*Feedback, error)
	// FeedbackList lists reports newest first.
	FeedbackList(ctx context.Context, p *ListParams) ([]Feedback, error)
}
