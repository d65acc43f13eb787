package apiv1

import "time"

// Artifact is one artifact (spec 2.7): the upload answer (201), an entry of
// the list, and the metadata of GET /artifacts/{id}/meta.
type Artifact struct {
	ID       string  `json:"id"`
	SHA256   *string `json:"sha256"` // null for an external artifact registered without one
	Size     int64   `json:"size"`   // 0 for an external artifact
	Source   string  `json:"source"` // local (relay upload or task output) or external
	Filename string  `json:"filename"`
	URL      *string `json:"url"` // external artifacts only
	// Kind: upload, output, failed_output (a failed attempt's file),
	// result (a spilled structured result) or log (a task's full output).
	Kind                   string        `json:"kind"`
	JobID                  *string       `json:"job_id"` // the producing job
	TaskID                 *string       `json:"task_id"`
	CreatedAt              time.Time     `json:"created_at"`
	LastReferencedAt       *time.Time    `json:"last_referenced_at"`
	ReferenceCount         int64         `json:"reference_count"`
	ActiveReferenceCount   int64         `json:"active_reference_count"`
	TerminalReferenceCount int64         `json:"terminal_reference_count"`
	DeletionEligible       bool          `json:"deletion_eligible"`
	Links                  ArtifactLinks `json:"links"`
	// SignedURL reads the bytes straight from the object store until
	// SignedURLExpiresAt; meta only, when the blob store can sign.
	SignedURL          string     `json:"signed_url,omitempty"`
	SignedURLExpiresAt *time.Time `json:"signed_url_expires_at,omitempty"`
}

// ArtifactLinks are the artifact's own endpoints.
type ArtifactLinks struct {
	Content string `json:"content"`
	Meta    string `json:"meta"`
}

// ArtifactQuota is the account's retained bytes: each content counted once.
type ArtifactQuota struct {
	LimitBytes     int64 `json:"limit_bytes"`
	UsedBytes      int64 `json:"used_bytes"`
	RemainingBytes int64 `json:"remaining_bytes"`
}

// ArtifactList is GET /api/v1/artifacts, newest first.
type ArtifactList struct {
	Artifacts []Artifact    `json:"artifacts"`
	Quota     ArtifactQuota `json:"quota"`
	PageInfo
}

// ArtifactDeleted answers DELETE /api/v1/artifacts/{id}.
type ArtifactDeleted struct {
	ID      string    `json:"id"`
	Deleted bool      `json:"deleted"`
	PurgeAt time.Time `json:"purge_at"` // when the bytes go, unless other artifacts share them
}

// ExternalArtifactRequest registers an http(s) URL (POST /artifacts/external).
type ExternalArtifactRequest struct {
	Filename string `json:"filename"`
	URL      string `json:"url"`
	SHA256   string `json:"sha256,omitempty"`
}
