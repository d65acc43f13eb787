package apiv1

import (
	"encoding/json"
	"time"
)

// ProjectWrite is the body of POST and PUT /api/v1/projects. Pointers tell
// an absent field from a zero value, so PUT changes only what is sent.
type ProjectWrite struct {
	Name           *string           `json:"name,omitempty"`
	RemoteDir      *string           `json:"remote_dir,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	SetupTimeoutS  *int64            `json:"setup_timeout_s,omitempty"`
	RuntimeKind    *string           `json:"runtime_kind,omitempty"`
	ImageRef       *string           `json:"image_ref,omitempty"`
	ImageDigest    *string           `json:"image_digest,omitempty"`
	Manifest       json.RawMessage   `json:"manifest,omitempty"`
	CachePolicy    json.RawMessage   `json:"cache_policy,omitempty"`
	RuntimeVersion *int64            `json:"runtime_version,omitempty"`
}

// Project is a project as the API shows it.
type Project struct {
	Name           string            `json:"name"`
	RemoteDir      string            `json:"remote_dir"`
	Env            map[string]string `json:"env"`
	SetupTimeoutS  int64             `json:"setup_timeout_s"`
	RuntimeKind    string            `json:"runtime_kind"`
	ImageRef       *string           `json:"image_ref"`
	ImageDigest    *string           `json:"image_digest"`
	Manifest       json.RawMessage   `json:"manifest"`
	CachePolicy    json.RawMessage   `json:"cache_policy"`
	RuntimeVersion int64             `json:"runtime_version"`
	ContentHash    *string           `json:"content_hash"`
	CreatedAt      time.Time         `json:"created_at"`
	UpdatedAt      time.Time         `json:"updated_at"`
	InitStatus     *Readiness        `json:"init_status,omitempty"`
}

// ProjectList answers GET /api/v1/projects.
type ProjectList struct {
	Count    int        `json:"count"`
	Projects []*Project `json:"projects"`
}

// Readiness is the readiness object of spec 2.3.
type Readiness struct {
	Project              string     `json:"project,omitempty"`
	ProjectReady         bool       `json:"project_ready"`
	CanAcceptNewJobs     bool       `json:"can_accept_new_jobs"`
	ReadyForJobs         bool       `json:"ready_for_jobs"`
	InitState            string     `json:"init_state"`
	AvailabilityStatus   string     `json:"availability_status"`
	ProgressPhase        string     `json:"progress_phase"`
	PendingInit          bool       `json:"pending_init"`
	RequestedState       *string    `json:"requested_state"`
	ContentHash          *string    `json:"content_hash"`
	StatusMessage        string     `json:"status_message"`
	NextAction           string     `json:"next_action"`
	LatestIssue          *string    `json:"latest_issue"`
	LastReadyAt          *time.Time `json:"last_ready_at"`
	LatestActivityAt     *time.Time `json:"latest_activity_at"`
	LatestFailureAt      *time.Time `json:"latest_failure_at"`
	ReadyReplicas        int        `json:"ready_replicas"`
	InitializingReplicas int        `json:"initializing_replicas"`
	FailedReplicas       int        `json:"failed_replicas"`
	StaleReplicas        int        `json:"stale_replicas"`
	TotalReplicas        int        `json:"total_replicas"`
	// WarmSandboxesReady and WarmSandboxesTarget are the sandboxes of
	// the published revision booted ahead on hosts (after init), ready now
	// and kept: a task that finds one starts in tens of milliseconds.
	// Both 0 when no host keeps any (docs/builds.md, warm starts).
	WarmSandboxesReady  int          `json:"warm_sandboxes_ready"`
	WarmSandboxesTarget int          `json:"warm_sandboxes_target"`
	QueueDepth          int          `json:"queue_depth"`
	QueuedTasks         int          `json:"queued_tasks"`
	ActiveJobs          int          `json:"active_jobs"`
	ActiveTasks         int          `json:"active_tasks"`
	Diagnostics         []Diagnostic `json:"diagnostics,omitempty"`
}

// Diagnostic is one entry of status/details: a build or a preparation.
type Diagnostic struct {
	ID                string     `json:"id"`
	Status            string     `json:"status"`
	Phase             string     `json:"phase"`
	Message           string     `json:"message"`
	LogTail           string     `json:"log_tail"`
	ContentHash       string     `json:"content_hash"`
	InsertedAt        time.Time  `json:"inserted_at"`
	UpdatedAt         time.Time  `json:"updated_at"`
	InitializedAt     *time.Time `json:"initialized_at"`
	RecommendedAction string     `json:"recommended_action"`
}

// KVWrite is the body of PUT /projects/:name/kv/:key.
type KVWrite struct {
	Value json.RawMessage `json:"value"`
	TTLS  *int64          `json:"ttl_s,omitempty"`
}

// KVEntry is one shared-state entry.
type KVEntry struct {
	Project   string          `json:"project"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	UpdatedAt time.Time       `json:"updated_at"`
	TTLS      *int64          `json:"ttl_s"`
	Meta      KVMeta          `json:"meta"`
}

// KVMeta carries the bookkeeping of an entry.
type KVMeta struct {
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	SizeBytes int        `json:"size_bytes"`
}

// KVList answers GET /projects/:name/kv.
type KVList struct {
	Project string     `json:"project"`
	Prefix  string     `json:"prefix"`
	Entries []*KVEntry `json:"entries"`
	Count   int        `json:"count"`
}

// KVDeleted answers DELETE /projects/:name/kv/:key.
type KVDeleted struct {
	Status  string `json:"status"`
	Project string `json:"project"`
	Key     string `json:"key"`
}

// ProjectDeleted answers DELETE /projects/:name.
type ProjectDeleted struct {
	Status  string `json:"status"`
	Project string `json:"project"`
}
