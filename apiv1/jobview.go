package apiv1

import (
	"encoding/json"
	"time"
)

// JobCommon are the fields a job shows both as a job object (GET
// /api/v1/jobs/:id) and as an entry of the job list.
type JobCommon struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Type     string `json:"type"`
	Project  string `json:"project"`
	Priority string `json:"priority"`
	// Requirements are the resolved minimum resources of each task, every
	// field present (min_single_core_score only when the job asked for one).
	Requirements  JobRequirements  `json:"requirements"`
	Reservation   JobReservation   `json:"reservation"`   // {mode}
	Checkpointing JobCheckpointing `json:"checkpointing"` // {enabled, resume_from_latest, payload_key}
	TimeoutS      int64            `json:"timeout_s"`
	MaxRetries    int              `json:"max_retries"`
	DependsOn     []string         `json:"depends_on"`
	Preset        *string          `json:"preset"`
	// RecommendedAction says what to do about the job's error; null when
	// there is none.
	RecommendedAction *string         `json:"recommended_action"`
	Meta              json.RawMessage `json:"meta"`
	Variant           *string         `json:"variant"`
	// FeedbackSummary is reserved: always null until feedback is collected.
	FeedbackSummary json.RawMessage `json:"feedback_summary"`
	ClientRef       *string         `json:"client_ref"`
	Tags            []string        `json:"tags"`
	TaskCount       int64           `json:"task_count"`
	SubmittedAt     time.Time       `json:"submitted_at"`
	StartedAt       *time.Time      `json:"started_at"`
	CompletedAt     *time.Time      `json:"completed_at"`
	Links           JobLinks        `json:"links"`
}

// Job is the job object (spec 2.4).
type Job struct {
	JobCommon
	// Summary holds task_outcome_counts, aggregate_result,
	// aggregate_aliases, completeness, result_persisted and
	// output_persisted (see JobSummary); it is final once the job is.
	Summary json.RawMessage `json:"summary"`
	Error   *string         `json:"error"`
	// CheckpointSummary is present when the job has checkpointing enabled.
	CheckpointSummary *JobCheckpointSummary `json:"checkpoint_summary,omitempty"`
}

// JobCheckpointSummary counts a checkpointing job's tasks by checkpoint
// state (spec 2.4): those that reported a checkpoint, those whose latest
// attempt resumed from one, and, of the checkpoints kept as artifacts
// (artifact_path), those pending (their attempt runs), published and
// failed.
type JobCheckpointSummary struct {
	TaskCount          int64 `json:"task_count"`
	TasksCheckpointed  int64 `json:"tasks_checkpointed"`
	TasksResumed       int64 `json:"tasks_resumed"`
	ArtifactsPending   int64 `json:"artifacts_pending"`
	ArtifactsPublished int64 `json:"artifacts_published"`
	ArtifactsFailed    int64 `json:"artifacts_failed"`
}

// JobListEntry is one job of GET /api/v1/jobs: the job object without its
// heavy fields (summary, error), with payload, user_id and error flags.
type JobListEntry struct {
	JobCommon
	Payload      json.RawMessage `json:"payload"`
	UserID       string          `json:"user_id"` // the owning account's id
	HasError     bool            `json:"has_error"`
	HasOutput    bool            `json:"has_output"`    // some task wrote stdout
	ErrorSnippet *string         `json:"error_snippet"` // the error's first ~120 characters
}

// JobList answers GET /api/v1/jobs.
type JobList struct {
	Jobs   []JobListEntry `json:"jobs"`
	Total  int            `json:"total"` // jobs matching the filters, all pages
	Count  int            `json:"count"` // jobs on this page
	Limit  int            `json:"limit"`
	Offset int            `json:"offset"`
}

// JobLinks are the addresses of a job's views.
type JobLinks struct {
	Self   string `json:"self"`
	Tasks  string `json:"tasks"`
	Output string `json:"output"`
	Events string `json:"events"`
	Result string `json:"result"`
	Stream string `json:"stream"`
}

// JobSummary is the shape of a job's summary object (spec 2.6). The API
// sends summaries as stored, so a summary may carry more fields than these
// (a sweep's leaderboard, later the billing fields).
type JobSummary struct {
	TaskOutcomeCounts map[string]int64 `json:"task_outcome_counts"`
	AggregateResult   json.RawMessage  `json:"aggregate_result"`
	AggregateAliases  json.RawMessage  `json:"aggregate_aliases"`
	Completeness      json.RawMessage  `json:"completeness"`
	ResultPersisted   bool             `json:"result_persisted"`
	OutputPersisted   bool             `json:"output_persisted"`
}

// JobHold is summary.billing_hold: the hold a job's admission reserved.
type JobHold struct {
	ID          string     `json:"id"`
	Status      string     `json:"status"` // active, released, captured, partially_captured, expired
	AmountUSD   USD        `json:"amount_usd"`
	CapturedUSD USD        `json:"captured_usd"`
	SettledAt   *time.Time `json:"settled_at"`
}

// JobCost is summary.cost: what the job has cost so far.
type JobCost struct {
	// ChargedUSD is what the account pays for the job: once the job has
	// ended and its hold was captured, what the hold captured; before that,
	// what its ended attempts were metered (running attempts are metered
	// when they end).
	ChargedUSD USD `json:"charged_usd"`
	// MeteredUSD and BilledSeconds sum the job's metered attempts. A charge
	// never exceeds the hold, so ChargedUSD may be below MeteredUSD.
	MeteredUSD    USD   `json:"metered_usd"`
	BilledSeconds int64 `json:"billed_seconds"`
}

// TaskCost is what one task's attempts were metered.
type TaskCost struct {
	BilledSeconds int64 `json:"billed_seconds"`
	CostUSD       USD   `json:"cost_usd"`
}

// JobOutput answers GET /api/v1/jobs/:id/output.
type JobOutput struct {
	// Output is the tasks' stdout in index order, the first 10 KB of it.
	Output string `json:"output"`
	// Error is the last ~1000 characters of stderr of the last task that
	// failed (or whose last attempt failed and waits for its retry); null
	// when no task failed.
	Error *string `json:"error"`
	// OutputTruncated says that Output was cut at 10 KB.
	OutputTruncated bool `json:"output_truncated"`
}

// TaskList answers GET /api/v1/jobs/:id/tasks: one page of the job's tasks
// in index order.
type TaskList struct {
	Tasks []Task `json:"tasks"`
	// Count is the job's tasks (task_count), as the spec's {tasks, count}
	// reads; the page holds len(Tasks). Total says the same, kept for
	// clients that read it.
	Count  int   `json:"count"`
	Total  int64 `json:"total"`
	Limit  int   `json:"limit"`
	Offset int   `json:"offset"`
}

// Paging of GET /api/v1/jobs/:id/tasks (limit 1-TaskPageMaxLimit).
const (
	TaskPageDefaultLimit = 1000
	TaskPageMaxLimit     = 1000
)

// Task is one task of a job (spec 2.5).
type Task struct {
	ID      string          `json:"id"`
	Index   int64           `json:"index"`
	Status  string          `json:"status"`
	Payload json.RawMessage `json:"payload"`
	// Meta is what the expansion recorded about the task (chunk_index,
	// sweep_idx, candidate, batch, ...); chunk_index, chunk_count and
	// seed_range are repeated at the top level when present.
	Meta         json.RawMessage `json:"meta"`
	ChunkIndex   *int            `json:"chunk_index,omitempty"`
	ChunkCount   *int            `json:"chunk_count,omitempty"`
	SeedRange    json.RawMessage `json:"seed_range,omitempty"`
	Requirements json.RawMessage `json:"requirements"`

	ResultPresent bool            `json:"result_present"`
	OutputPresent bool            `json:"output_present"`
	Output        string          `json:"output"` // stdout, up to 10 KB
	Error         *string         `json:"error"`  // last ~1000 characters of stderr, on failure
	Result        json.RawMessage `json:"result"`
	ExitCode      *int64          `json:"exit_code"`
	// ResultQuality is always null and ResultWarnings always empty (spec
	// 2.6); neither affects status.
	ResultQuality  json.RawMessage `json:"result_quality"`
	ResultWarnings []string        `json:"result_warnings"`

	// Artifacts are the files the task's attempts uploaded: the artifact
	// directory's files (kind output, or failed_output for a failed
	// attempt's), a spilled result and the full output, oldest first.
	Artifacts []TaskArtifact `json:"artifacts"`
	// OutputArtifactID holds the full stdout and stderr when they did not
	// fit output and error; null otherwise.
	OutputArtifactID *string `json:"output_artifact_id"`
	// ResultSpilled: the structured result was too large to keep inline
	// (over 256 KiB) and is the artifact ResultArtifactID, ResultFilename.
	ResultSpilled    bool    `json:"result_spilled"`
	ResultArtifactID *string `json:"result_artifact_id"`
	ResultFilename   *string `json:"result_filename"`

	LiveFeedback   *LiveFeedback   `json:"live_feedback"` // running tasks only
	LatestProgress json.RawMessage `json:"latest_progress"`
	// Checkpoint is the latest checkpoint the runner reported (the
	// "checkpoint" member of a SKIFF_PROGRESS line), kept across attempts;
	// ResumeState what the latest attempt resumed from. Null when none.
	Checkpoint  json.RawMessage `json:"checkpoint"`
	ResumeState json.RawMessage `json:"resume_state"`

	// RuntimeS is the time the task's attempts have run (started to end,
	// or to now while running), summed; queue time is not included.
	RuntimeS float64 `json:"runtime_s"`
	// StaleForS is how long ago a running task was placed or last reported
	// progress or output; null unless running.
	StaleForS *float64 `json:"stale_for_s"`
	// HealthStatus is "starting", "healthy" or "stale" for a running task
	// (see docs/jobs.md), null otherwise.
	HealthStatus *string    `json:"health_status"`
	StartedAt    *time.Time `json:"started_at"`
	CompletedAt  *time.Time `json:"completed_at"`
	// RetriesUsed counts failed attempts charged to max_retries;
	// InfraRequeues the free requeues after platform failures.
	RetriesUsed   int64 `json:"retries_used"`
	InfraRequeues int64 `json:"infra_requeues"`
	// Cost sums the task's metered attempts.
	Cost     TaskCost      `json:"cost"`
	Attempts []TaskAttempt `json:"attempts"`
}

// LiveFeedback is what a running task shows of itself.
type LiveFeedback struct {
	OutputTail string `json:"output_tail"` // last ~1000 bytes of stdout and stderr
}

// TaskAttempt is one run of a task on a worker.
type TaskAttempt struct {
	AttemptNumber int64      `json:"attempt_number"`
	Status        string     `json:"status"`
	AssignedAt    time.Time  `json:"assigned_at"`
	StartedAt     *time.Time `json:"started_at"`
	EndedAt       *time.Time `json:"ended_at"`
	DurationS     *float64   `json:"duration_s"` // started to ended (or now); null before it started
	// TerminalKind is how it ended (exit, timeout, oom, killed,
	// infra_declared, lost, host_error, cancelled); RetryDecision what that
	// did to the task (retry, requeue_free, none). Null while it runs.
	TerminalKind    *string         `json:"terminal_kind"`
	RetryDecision   *string         `json:"retry_decision"`
	ExitCode        *int64          `json:"exit_code"`
	WorkerHandle    string          `json:"worker_handle"` // pseudonymous, wkr_...
	ResourceProfile ResourceProfile `json:"resource_profile"`
	// BilledSeconds and CostUSD are what the attempt was metered when it
	// ended: at least 60 s and at most timeout_s of runtime. Every attempt
	// in which the runner ran is metered, exit-137 and runner-declared
	// infra requeues included; zero while it runs, and for attempts the
	// platform lost (lost hosts, controller restarts, sandboxes that failed
	// to start) or whose command could not be started.
	BilledSeconds int64 `json:"billed_seconds"`
	CostUSD       USD   `json:"cost_usd"`
}

// ResourceProfile is the hardware an attempt ran on; a field the worker did
// not report is null.
type ResourceProfile struct {
	CPUModel        *string  `json:"cpu_model"`
	CPUClockGHz     *float64 `json:"cpu_clock_ghz"`
	SingleCoreScore *float64 `json:"single_core_score"`
	CPUCount        *int64   `json:"cpu_count"`
	MemoryTotalMB   *int64   `json:"memory_total_mb"`
	GPUCount        *int64   `json:"gpu_count"`
}

// JobEventList answers GET /api/v1/jobs/:id/events.
type JobEventList struct {
	Events []JobEvent `json:"events"`
	Count  int        `json:"count"` // events on this page
	Limit  int        `json:"limit"`
	Order  string     `json:"order"` // EventsOldest or EventsNewest
	// Next is the address of the following page (the same query with the
	// cursor moved), absent when this page is the last; NextCursor is that
	// cursor alone: the after= of the next oldest-first page, the before=
	// of the next newest-first one.
	Next       string `json:"next,omitempty"`
	NextCursor int64  `json:"next_cursor,omitempty"`
}

// The orders of GET /api/v1/jobs/:id/events, and its paging (limit 1 to
// EventPageMaxLimit, EventPageDefaultLimit by default).
const (
	EventsOldest          = "oldest"
	EventsNewest          = "newest"
	EventPageDefaultLimit = 200
	EventPageMaxLimit     = 1000
)

// JobEvent is one lifecycle event of a job, oldest first.
type JobEvent struct {
	ID        string          `json:"id"`
	Kind      string          `json:"kind"` // job.submitted, job.cancelled, attempt.lost, ...
	TaskID    string          `json:"task_id,omitempty"`
	AttemptID string          `json:"attempt_id,omitempty"`
	Data      json.RawMessage `json:"data"`
	CreatedAt time.Time       `json:"created_at"`
	// Position orders every job's events in the order they were committed;
	// a stream frame's id is its event's position.
	Position int64 `json:"position"`
}

// JobCancelRequest is the optional body of PUT /api/v1/jobs/:id/cancel.
type JobCancelRequest struct {
	Reason *string `json:"reason,omitempty"`
}

// CancelQueuedRequest is the optional body of PUT
// /api/v1/projects/:name/cancel-queued.
type CancelQueuedRequest struct {
	Reason *string `json:"reason,omitempty"`
	Tag    *string `json:"tag,omitempty"`
}

// CancelQueuedResult answers PUT /api/v1/projects/:name/cancel-queued
// (spec 4.4). Count is ours: len(CancelledJobs), for clients that only
// want the number.
type CancelQueuedResult struct {
	Status        string   `json:"status"` // always "cancelled"
	Project       string   `json:"project"`
	Tag           *string  `json:"tag,omitempty"`
	QueuedBefore  int      `json:"queued_before"`  // planning or queued jobs (with the tag) when the call came
	CancelledJobs []string `json:"cancelled_jobs"` // job ids, oldest first
	Count         int      `json:"count"`
}

// ResultLinks are the addresses a result entry points to.
type ResultLinks struct {
	Job    string `json:"job"`
	Tasks  string `json:"tasks"`
	Stream string `json:"stream"`
	Result string `json:"result"`
}

// ResultCommon are the fields of a job's result (spec 2.6) shown both by
// GET /api/v1/results/:job_id and by the result list.
type ResultCommon struct {
	JobID            string          `json:"job_id"`
	Project          string          `json:"project"`
	Status           string          `json:"status"`
	Type             string          `json:"type"`
	ClientRef        *string         `json:"client_ref"`
	Tags             []string        `json:"tags"`
	Meta             json.RawMessage `json:"meta"`
	Variant          *string         `json:"variant"`
	ArtifactIDs      []string        `json:"artifact_ids"`
	Links            ResultLinks     `json:"links"`
	Summary          json.RawMessage `json:"summary"`
	AggregateResult  json.RawMessage `json:"aggregate_result"`
	AggregateAliases json.RawMessage `json:"aggregate_aliases"`
	Completeness     json.RawMessage `json:"completeness"`
	ResultPersisted  bool            `json:"result_persisted"`
	OutputPersisted  bool            `json:"output_persisted"`
	TaskCount        int64           `json:"task_count"`
	SubmittedAt      time.Time       `json:"submitted_at"`
	CompletedAt      *time.Time      `json:"completed_at"`
	Error            *string         `json:"error"`
}

// JobResult answers GET /api/v1/results/:job_id. Results is one page of
// the job's tasks in index order (limit and offset); ResultCount and
// OutputCount count the whole job.
type JobResult struct {
	ResultCommon
	Results     []ResultTask `json:"results"`
	Count       int          `json:"count"`        // the job's tasks (task_count); the page holds len(Results)
	ResultCount int          `json:"result_count"` // tasks with a result, whole job
	OutputCount int          `json:"output_count"` // tasks with stdout, whole job
	Limit       int          `json:"limit"`
	Offset      int          `json:"offset"`
}

// ResultTask is one task of a result.
type ResultTask struct {
	TaskID      string          `json:"task_id"`
	Index       int64           `json:"index"`
	Status      string          `json:"status"`
	Payload     json.RawMessage `json:"payload"`
	Result      json.RawMessage `json:"result"`
	ArtifactIDs []string        `json:"artifact_ids"`
	// ResultArtifactID is the artifact holding a result too large to keep
	// inline (result then holds the result_spilled marker); absent else.
	ResultArtifactID *string         `json:"result_artifact_id,omitempty"`
	ResultPresent    bool            `json:"result_present"`
	ResultQuality    json.RawMessage `json:"result_quality"`
	ResultWarnings   []string        `json:"result_warnings"`
	Output           string          `json:"output"`
	OutputPresent    bool            `json:"output_present"`
	Error            *string         `json:"error"`
	// ProjectContentHash is the content hash of the project revision the
	// job ran on (the same for every task of a job).
	ProjectContentHash *string         `json:"project_content_hash,omitempty"`
	ChunkIndex         *int            `json:"chunk_index,omitempty"`
	ChunkCount         *int            `json:"chunk_count,omitempty"`
	SeedRange          json.RawMessage `json:"seed_range,omitempty"`
	StartedAt          *time.Time      `json:"started_at"`
	CompletedAt        *time.Time      `json:"completed_at"`
}

// ResultListEntry is one job of GET /api/v1/results. With include_tasks it
// carries the first tasks' results (at most MaxResultListTasks a job;
// ResultsTruncated says when there are more) and the job's counts.
type ResultListEntry struct {
	ResultCommon
	Results          *[]ResultTask `json:"results,omitempty"`
	ResultCount      *int          `json:"result_count,omitempty"`
	OutputCount      *int          `json:"output_count,omitempty"`
	ResultsTruncated *bool         `json:"results_truncated,omitempty"`
}

// MaxResultListTasks bounds the tasks each entry of GET /api/v1/results
// carries with include_tasks.
const MaxResultListTasks = 100

// ResultList answers GET /api/v1/results.
type ResultList struct {
	Results []ResultListEntry `json:"results"`
	Count   int               `json:"count"` // entries on this page
	Total   int               `json:"total"` // jobs matching, all pages
	Limit   int               `json:"limit"`
	Offset  int               `json:"offset"`
	// AppliedFilters echoes the filters used, defaults included (status);
	// Ignored names accepted parameters that do not filter (recipe_*).
	AppliedFilters ResultFilters     `json:"applied_filters"`
	ResultGuide    map[string]string `json:"result_guide"`
	// GroupBy and Groups answer group_by: every job the filters select
	// (not only this page) grouped by that field.
	GroupBy *string        `json:"group_by,omitempty"`
	Groups  *[]ResultGroup `json:"groups,omitempty"`
}

// ResultGroup is one group of GET /api/v1/results?group_by. Key is null
// for the jobs without the field (no tag, no client_ref).
type ResultGroup struct {
	Key              *string        `json:"key"`
	Count            int            `json:"count"`
	StatusCounts     map[string]int `json:"status_counts"`
	CostUSD          USD            `json:"cost_usd"`
	FirstSubmittedAt time.Time      `json:"first_submitted_at"`
	LastCompletedAt  *time.Time     `json:"last_completed_at"`
}

// ResultFilters are the filters of GET /api/v1/results as applied.
type ResultFilters struct {
	Status    []string `json:"status"`
	JobIDs    []string `json:"job_ids,omitempty"`
	Project   *string  `json:"project,omitempty"`
	ClientRef *string  `json:"client_ref,omitempty"`
	Tag       *string  `json:"tag,omitempty"`
	Type      *string  `json:"type,omitempty"`
	Since     *string  `json:"since,omitempty"`
	// UserID is the account whose jobs are listed when user_id was sent:
	// its acct_ id, whether user_id named it by id or name.
	UserID       *string  `json:"user_id,omitempty"`
	IncludeTasks bool     `json:"include_tasks"`
	Ignored      []string `json:"ignored,omitempty"`
}

// JobMetrics answers GET /api/v1/jobs/:id/metrics (docs/streams.md). Times
// are seconds; a duration still under way counts up to now.
type JobMetrics struct {
	JobID  string `json:"job_id"`
	Status string `json:"status"`
	// QueueTimeS is submission to the first task's start (to now while
	// nothing started); RunTimeS is the first start to the job's end (to
	// now while it runs), null before anything started.
	QueueTimeS float64  `json:"queue_time_s"`
	RunTimeS   *float64 `json:"run_time_s"`
	// Attempts counts the job's attempts by how they ended (assigned and
	// running for those under way): succeeded, failed, infra, lost,
	// cancelled.
	Attempts      map[string]int64 `json:"attempts"`
	AttemptsTotal int64            `json:"attempts_total"`
	// Requeues counts attempts after which the task went back to the
	// queue: retries (charged to max_retries) and free requeues.
	Requeues      JobRequeues      `json:"requeues"`
	Tasks         map[string]int64 `json:"tasks"`
	BilledSeconds int64            `json:"billed_seconds"`
	CostUSD       USD              `json:"cost_usd"`
	// TaskDurationsS summarises the run time of the tasks that ended
	// after running (the sum of their attempts' run times).
	TaskDurationsS DurationStats `json:"task_durations_s"`
}

// JobRequeues splits a job's requeues by kind.
type JobRequeues struct {
	Total   int64 `json:"total"`
	Retries int64 `json:"retries"`
	Free    int64 `json:"free"`
}

// DurationStats are percentiles (nearest rank) of a set of durations in
// seconds; null when the set is empty.
type DurationStats struct {
	Count int64    `json:"count"`
	P50   *float64 `json:"p50"`
	P95   *float64 `json:"p95"`
	Max   *float64 `json:"max"`
}

// LeaseStatus answers GET /api/v1/leases/:job_id (spec 2.9). A lease is
// one attempt: a task handed to a host.
type LeaseStatus struct {
	JobID       string          `json:"job_id"`
	Leases      LeaseCounts     `json:"leases"`
	Reservation json.RawMessage `json:"reservation"` // null: only best_effort admission exists
}

// LeaseCounts counts a job's leases: total handed out, done (succeeded),
// failed (ended the task's attempt in failure, charged or final) and
// requeued (ended with the task back in the queue).
type LeaseCounts struct {
	Total    int64 `json:"total"`
	Done     int64 `json:"done"`
	Failed   int64 `json:"failed"`
	Requeued int64 `json:"requeued"`
}

// TaskArtifact is one artifact a task produced.
type TaskArtifact struct {
	ID       string `json:"id"`
	Filename string `json:"filename"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
	Kind     string `json:"kind"` // output, failed_output, result or log
}
