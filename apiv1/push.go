package apiv1

import (
	"encoding/json"
	"time"
)

// PushRecord is the status of one durable build (spec 2.3).
type PushRecord struct {
	PushRef     string          `json:"push_ref"`
	Status      string          `json:"status"` // queued, building, published, failed
	StatusURL   string          `json:"status_url"`
	ContentHash string          `json:"content_hash"`
	SizeBytes   int64           `json:"size_bytes"`
	Terminal    bool            `json:"terminal"`
	NextAction  string          `json:"next_action"`
	TarballDiff json.RawMessage `json:"tarball_diff,omitempty"`
	ImageRef    *string         `json:"image_ref"`
	ImageDigest *string         `json:"image_digest"`
	Error       *string         `json:"error"`
	LogTail     string          `json:"log_tail"`
	Attempts    int64           `json:"attempts"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
	StartedAt   *time.Time      `json:"started_at"`
	FinishedAt  *time.Time      `json:"finished_at"`
}

// PushUnchanged answers a push whose content equals the published revision:
// no build is needed (spec 4.4, the 200 form).
type PushUnchanged struct {
	Status          string          `json:"status"` // "unchanged"
	PushRef         string          `json:"push_ref"`
	ContentHash     string          `json:"content_hash"`
	SizeBytes       int64           `json:"size_bytes"`
	RuntimeKind     string          `json:"runtime_kind"`
	RuntimeVersion  int64           `json:"runtime_version"`
	ManifestPresent bool            `json:"manifest_present"`
	TarballDiff     json.RawMessage `json:"tarball_diff,omitempty"`
	ReadyForJobs    bool            `json:"ready_for_jobs"`
	StatusMessage   string          `json:"status_message"`
	NextAction      string          `json:"next_action"`
	InitStatus      *Readiness      `json:"init_status"`
}

// InitResponse answers POST /projects/:name/init and /invalidate.
type InitResponse struct {
	Status        string     `json:"status"`
	ReadyForJobs  bool       `json:"ready_for_jobs"`
	StatusMessage string     `json:"status_message"`
	NextAction    string     `json:"next_action"`
	InitStatus    *Readiness `json:"init_status"`
}
