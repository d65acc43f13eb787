package store

import (
	"context"
	"encoding/json"
	"slices"
	"time"
)

// JobStatus is a job's state (spec 3.1).
type JobStatus string

const (
	JobPlanning  JobStatus = "planning"
	JobQueued    JobStatus = "queued"
	JobRunning   JobStatus = "running"
	JobCompleted JobStatus = "completed"
	JobPartial   JobStatus = "partial"
	JobFailed    JobStatus = "failed"
	JobCancelled JobStatus = "cancelled"
)

// JobStatuses lists every job status, in lifecycle order.
var JobStatuses = []JobStatus{JobPlanning, JobQueued, JobRunning, JobCompleted, JobPartial, JobFailed, JobCancelled}

// IsTerminal reports whether the job can no longer change.
func (s JobStatus) IsTerminal() bool {
	switch s {
	case JobCompleted, JobPartial, JobFailed, JobCancelled:
		return true
	}
	return false
}

// JobTransitions is the table of section 3.1; the store's guarded updates
// and the tests both use it.
var JobTransitions = map[JobStatus][]JobStatus{
	JobPlanning: {JobQueued, JobCancelled},
	JobQueued:   {JobRunning, JobCancelled},
	JobRunning:  {JobCompleted, JobPartial, JobFailed, JobCancelled},
}

// CanTransition reports whether from -> to is allowed.
func (s JobStatus) CanTransition(to JobStatus) bool { return slices.Contains(JobTransitions[s], to) }

// TaskStatus is a task's state.
type TaskStatus string

const (
	TaskQueued    TaskStatus = "queued"  // waiting for capacity (again, after a retry or requeue)
	TaskRunning   TaskStatus = "running" // an attempt is assigned or running
	TaskSucceeded TaskStatus = "succeeded"
	TaskFailed    TaskStatus = "failed"
	TaskCancelled TaskStatus = "cancelled"
)

func (s TaskStatus) IsTerminal() bool {
	return s == TaskSucceeded || s == TaskFailed || s == TaskCancelled
}

// TaskStatuses lists every task status, in lifecycle order.
var TaskStatuses = []TaskStatus{TaskQueued, TaskRunning, TaskSucceeded, TaskFailed, TaskCancelled}

// TaskTransitions is the task lifecycle: a queued task is claimed by a
// host (running) or cancelled with its job; a running task's attempt ends
// it (succeeded, failed) or sends it back to the queue (a retry or a free
// requeue), or the job's cancel ends it. The store's guarded updates and
// the conformance suite both follow it.
var TaskTransitions = map[TaskStatus][]TaskStatus{
	TaskQueued:  {TaskRunning, TaskCancelled},
	TaskRunning: {TaskQueued, TaskSucceeded, TaskFailed, TaskCancelled},
}

// CanTransition reports whether from -> to is allowed.
func (s TaskStatus) CanTransition(to TaskStatus) bool { return slices.Contains(TaskTransitions[s], to) }

// AttemptStatus is how one run of a task ended (or that it runs).
type AttemptStatus string

const (
	AttemptAssigned  AttemptStatus = "assigned" // given to a host, not yet started
	AttemptRunning   AttemptStatus = "running"
	AttemptSucceeded AttemptStatus = "succeeded"
	AttemptFailed    AttemptStatus = "failed"    // non-zero exit or timeout: uses the retry budget
	AttemptInfra     AttemptStatus = "infra"     // exit 137 or failure_class infra: requeued free
	AttemptLost      AttemptStatus = "lost"      // host or controller lost it: requeued free
	AttemptCancelled AttemptStatus = "cancelled" // the job was cancelled
)

// AttemptStatuses lists every attempt status, in lifecycle order.
var AttemptStatuses = []AttemptStatus{AttemptAssigned, AttemptRunning, AttemptSucceeded, AttemptFailed,
	AttemptInfra, AttemptLost, AttemptCancelled}

// attemptEnds are the statuses an open attempt can end in.
var attemptEnds = []AttemptStatus{AttemptSucceeded, AttemptFailed, AttemptInfra, AttemptLost, AttemptCancelled}

// AttemptTransitions is the attempt lifecycle. An attempt is born assigned
// (claimed for a host); the host's started report makes it running; it
// ends from either (a host can fail before the runner starts, a cancel or
// a lost host can come first), and an ended attempt never changes again.
var AttemptTransitions = map[AttemptStatus][]AttemptStatus{
	AttemptAssigned: append([]AttemptStatus{AttemptRunning}, attemptEnds...),
	AttemptRunning:  attemptEnds,
}

// CanTransition reports whether from -> to is allowed.
func (s AttemptStatus) CanTransition(to AttemptStatus) bool {
	return slices.Contains(AttemptTransitions[s], to)
}

// IsOpen reports whether the attempt is assigned or running.
func (s AttemptStatus) IsOpen() bool { return s == AttemptAssigned || s == AttemptRunning }

// Priority ranks: lower runs first.
const (
	PriorityHigh   = 0
	PriorityNormal = 1
	PriorityLow    = 2
)

// Job is one submission.
type Job struct {
	ID                string
	AccountID         string
	ProjectID         string
	ProjectName       string
	PushID            string // the published revision the job runs
	Type              string
	Status            JobStatus
	Priority          int
	Request           json.RawMessage // the normalised submission
	Payload           json.RawMessage
	Summary           json.RawMessage // aggregate, counts and billing; written when the job changes
	Error             string
	RecommendedAction string
	ClientRef         *string
	Tags              []string
	Meta              json.RawMessage
	Variant           *string
	TaskCount         int64
	// RateMicrosPerHour is the billed rate (market plus markup) of the
	// job's current requirements: the rate it was admitted at, until a
	// requirements edit re-prices it. Each attempt records the rate of its
	// claim and is metered at that.
	RateMicrosPerHour int64
	// Billing is the billing estimate and admission shown in the summary.
	Billing     json.RawMessage
	SubmittedAt time.Time
	StartedAt   *time.Time
	FinishedAt  *time.Time
	UpdatedAt   time.Time
}

// Task is one unit of a job's work.
type Task struct {
	ID             string
	JobID          string
	Index          int64
	Status         TaskStatus
	Payload        json.RawMessage
	Meta           json.RawMessage // chunk_index, sweep params, ... (expand.Meta)
	Requirements   json.RawMessage
	Priority       int
	RetriesUsed    int64 // failed attempts charged to max_retries
	InfraRequeues  int64 // exit-137 and lost requeues
	DeclaredInfra  int64 // failure_class infra requeues (at most 3)
	Attempts       int64 // attempts started
	Result         json.RawMessage
	Output         string // stdout, up to 10 KB
	ErrorText      string // last ~1000 characters of stderr on failure
	LatestProgress json.RawMessage
	ExitCode       *int64
	LastHostID     string
	// OutputTail is the last ~1000 bytes of stdout and stderr of the latest
	// attempt that reported any (live_feedback.output_tail).
	OutputTail string
	// Checkpoint is the latest checkpoint the runner reported, kept across
	// attempts; ResumeState is what the latest attempt was resumed from.
	Checkpoint  json.RawMessage
	ResumeState json.RawMessage
	// CPU, MemoryMB and GPUs are the resolved requirements the dispatcher
	// matches against a host's free capacity.
	CPU         float64
	MemoryMB    int64
	GPUs        int64
	SubmittedAt time.Time
	StartedAt   *time.Time
	CompletedAt *time.Time
	UpdatedAt   time.Time
}

// Attempt is one run of a task on a host.
type Attempt struct {
	ID              string
	TaskID          string
	JobID           string
	Number          int64
	Status          AttemptStatus
	HostID          string
	ResourceProfile json.RawMessage
	ExitCode        *int64
	TerminalKind    string // exit, timeout, oom, infra_declared, lost, cancelled
	RetryDecision   string // retry, requeue_free, none
	// BilledSeconds and CostMicros are what the attempt was metered: zero
	// while it runs and for attempts the platform lost.
	BilledSeconds int64
	CostMicros    int64
	// CPU, MemoryMB and GPUs are the task's resolved requirements when the
	// attempt was claimed: what it was placed with. A later requirements
	// edit changes the task, not the attempt.
	CPU      float64
	MemoryMB int64
	GPUs     int64
	// RateMicrosPerHour is the job's billed rate when the attempt was
	// claimed; the attempt is metered at it, whatever the job's rate later.
	RateMicrosPerHour int64
	AssignedAt        time.Time
	StartedAt         *time.Time
	EndedAt           *time.Time
	UpdatedAt         time.Time
}

// JobEvent is one lifecycle event of a job.
type JobEvent struct {
	ID        string
	JobID     string
	TaskID    string
	AttemptID string
	Kind      string // job.submitted, job.queued, task.started, attempt.infra_requeued, attempt.lost, ...
	Data      json.RawMessage
	CreatedAt time.Time
	// Position is the event's place in the order events became visible:
	// greater than every event committed before it, across all jobs. Set
	// by the store; zero until the event's transaction committed.
	Position int64
	// AccountID and ProjectID are the job's, set by JobEventFeed only (so
	// that a stream can route an event without reading its job).
	AccountID string
	ProjectID string
}

// JobEventPageParams selects one page of a job's committed events: those
// with After < position < Before (Before 0: no upper bound), oldest first,
// or newest first when Newest is set. Limit must be positive.
type JobEventPageParams struct {
	JobID  string
	After  int64
	Before int64
	Newest bool
	Limit  int
}

// JobEventFeedParams selects committed events after a position, oldest
// first: of the jobs in JobIDs when set, of one account's or one project's
// jobs when AccountID or ProjectID is set. Limit <= 0 means no limit.
type JobEventFeedParams struct {
	After     int64
	JobIDs    []string
	AccountID string
	ProjectID string
	Limit     int
}

// JobCreateParams is a whole admission. The job is stored with its given
// Status (planning or queued; not terminal), TaskCount = len(Tasks), and
// UpdatedAt = SubmittedAt. Each task is stored queued with its ID, Index,
// Payload, Meta, Requirements, CPU, MemoryMB and GPUs; its Priority and
// SubmittedAt are the job's,
// so that a job's tasks queue together. Event.JobID may be left empty.
type JobCreateParams struct {
	Job   Job
	Tasks []Task
	Event JobEvent
	// DependsOn lists the jobs this one waits on (distinct ids).
	DependsOn []string
}

// JobListParams filters GET /jobs. Zero values mean "any"; Since is
// inclusive; Limit <= 0 means no limit.
type JobListParams struct {
	AccountID string
	Statuses  []JobStatus
	ProjectID string
	Type      string
	Tag       string
	ClientRef string // exact match
	Since     *time.Time
	IDs       []string
	Limit     int
	Offset    int
}

// JobGroupKey names what GET /results?group_by groups jobs by.
type JobGroupKey string

// The keys jobs can be grouped by. A job with several tags counts once in
// each of its tags' groups; a job without a tag (or client_ref) falls in the
// group whose key is nil.
const (
	JobGroupStatus    JobGroupKey = "status"
	JobGroupProject   JobGroupKey = "project"
	JobGroupType      JobGroupKey = "type"
	JobGroupTag       JobGroupKey = "tag"
	JobGroupClientRef JobGroupKey = "client_ref"
)

// JobGroupKeys lists the keys in the order the API documents them.
var JobGroupKeys = []JobGroupKey{JobGroupStatus, JobGroupProject, JobGroupType, JobGroupTag, JobGroupClientRef}

// JobGroup is one group of the jobs a JobListParams selects (all of them,
// not one page). CostMicros adds up the attempts' metered cost;
// LastCompletedAt is nil when no job of the group has finished.
type JobGroup struct {
	Key              *string
	Count            int
	StatusCounts     map[JobStatus]int
	CostMicros       int64
	FirstSubmittedAt time.Time
	LastCompletedAt  *time.Time
}

// JobSetStatusParams is a guarded job transition; From lists the statuses
// the job may be in (nil: any). Only the statuses of From that JobTransitions
// allows to move to To are accepted. Error, RecommendedAction and Summary
// replace the stored values when set. Moving to running sets StartedAt (once);
// moving to a terminal status sets FinishedAt.
type JobSetStatusParams struct {
	ID                string
	From              []JobStatus
	To                JobStatus
	Error             string
	RecommendedAction string
	Summary           json.RawMessage // replaces the summary when set
	Now               time.Time
}

// TaskClaimParams picks the next queued task a host can run: highest
// priority first, then oldest job, then lowest index, among jobs that are
// queued or running (a planning job is not yet dispatched) and tasks whose
// requirements fit the free capacity, and creates its attempt with number =
// the task's new attempt count and status assigned. The attempt records the
// task's CPU, MemoryMB and GPUs and the job's RateMicrosPerHour as they are
// when it is claimed.
type TaskClaimParams struct {
	HostID          string
	AttemptID       string
	ResourceProfile json.RawMessage
	FreeCPU         float64
	FreeMemoryMB    int64
	FreeGPUs        int64
	// MinGPUs passes over tasks asking for fewer GPUs: 1 on a host
	// enrolled for GPU work only, which takes no CPU-only task.
	MinGPUs int64
	// Placement beyond the free capacity: what the host is, not what it
	// has left. GPUMemoryMB is the memory of each of the host's GPUs (0:
	// unknown), so a task asking more per GPU (requirements.gpu_memory_mb)
	// is passed over. StorageGB is the disk the host lends one task; a
	// task asking more (requirements.storage_gb) is passed over; 0 bounds
	// nothing (the host declared no share, as the controller's own host).
	// SingleCoreScore is the host's measured score (baseline 1.0): a task
	// whose requirements.min_single_core_score is above it is passed over.
	GPUMemoryMB     int64
	StorageGB       int64
	SingleCoreScore float64
	// AvoidRequeuedSince, when set, passes over tasks that this host ran
	// last and that were requeued at or after it, so that a retry goes to
	// another host while one may take it. Zero avoids nothing.
	AvoidRequeuedSince time.Time
	Now                time.Time
}

// AttemptFinishParams records how an attempt ended and moves its task on:
// TaskStatus is queued (retry or free requeue) or terminal, and a terminal
// task gets CompletedAt = Now. Result, Output and ErrorText replace the
// task's values when set; ExitCode, when set, becomes the task's exit code.
type AttemptFinishParams struct {
	AttemptID     string
	Status        AttemptStatus
	TerminalKind  string
	RetryDecision string
	ExitCode      *int64
	TaskStatus    TaskStatus
	Result        json.RawMessage
	Output        *string // replaces the task's output when set
	ErrorText     *string
	OutputTail    *string         // replaces the task's output tail when set
	Progress      json.RawMessage // replaces latest_progress when set
	Checkpoint    json.RawMessage // replaces the checkpoint when set
	RetriesUsed   int64           // new counters of the task
	InfraRequeues int64
	DeclaredInfra int64
	// BilledSeconds and CostMicros meter the attempt (zero: free).
	BilledSeconds int64
	CostMicros    int64
	Now           time.Time
}

// TaskSetProgressParams records what a running task reported so far.
type TaskSetProgressParams struct {
	TaskID   string
	Progress json.RawMessage // replaces latest_progress when set
	Output   *string         // replaces the output when set
	// OutputTail replaces the live output tail when set.
	OutputTail *string
	// Checkpoint replaces the task's checkpoint when set.
	Checkpoint json.RawMessage
	Now        time.Time
}

// JobStore keeps jobs, tasks, attempts and job events.
//
// Lock order: on PostgreSQL the write methods lock rows task, then attempt,
// then job. A transaction combining several of them should call them in that
// order (TaskCancelOpen before JobSetStatus when cancelling; AttemptFinish
// before JobSetStatus when a task's end ends its job), or two such
// transactions may deadlock and one of them fail.
type JobStore interface {
	// JobCreate stores the job, its tasks and its first event together.
	JobCreate(ctx context.Context, p *JobCreateParams) (*Job, error)
	// JobGet finds a job of one account; another account's is not found.
	JobGet(ctx context.Context, accountID, id string) (*Job, error)
	// JobGetByID finds a job whatever its account: for the controller's own
	// work (dispatch, recovery), never for a caller's request.
	JobGetByID(ctx context.Context, id string) (*Job, error)
	// JobList returns one page and the total matching.
	JobList(ctx context.Context, p *JobListParams) ([]*Job, int, error)
	// JobGroups groups every job p selects (Limit and Offset are ignored)
	// by one key, ordered by key with the nil key last.
	JobGroups(ctx context.Context, p *JobListParams, by JobGroupKey) ([]JobGroup, error)
	// JobSetStatus moves a job if it is in one of p.From and the move is in
	// JobTransitions; ErrConflict otherwise, ErrNotFound when there is no job.
	JobSetStatus(ctx context.Context, p *JobSetStatusParams) (*Job, error)
	// JobDependents lists the planning jobs that depend on jobID.
	JobDependents(ctx context.Context, jobID string) ([]string, error)
	// JobDependencyStatuses gives the status of each job jobID depends on.
	JobDependencyStatuses(ctx context.Context, jobID string) (map[string]JobStatus, error)
	// ProjectActiveJobCount counts a project's planning, queued and running jobs.
	ProjectActiveJobCount(ctx context.Context, projectID string) (int, error)

	// TaskList lists a job's tasks by index.
	TaskList(ctx context.Context, jobID string) ([]*Task, error)
	TaskGet(ctx context.Context, id string) (*Task, error)
	// TaskCountByStatus counts a job's tasks per status (absent: none), so
	// that finishing one task of a large job need not list them all.
	TaskCountByStatus(ctx context.Context, jobID string) (map[TaskStatus]int64, error)
	// TaskOpenExists reports whether the job has a queued or running task.
	TaskOpenExists(ctx context.Context, jobID string) (bool, error)
	// TaskClaim assigns the best queued task to a host, creating its attempt;
	// ErrNotFound when nothing is queued.
	TaskClaim(ctx context.Context, p *TaskClaimParams) (*Task, *Attempt, error)
	// TaskSetProgress records a running task's latest progress and output;
	// ErrConflict when the task is not running.
	TaskSetProgress(ctx context.Context, p *TaskSetProgressParams) error
	// TaskSetResumeState records what a task's new attempt resumes from.
	TaskSetResumeState(ctx context.Context, taskID string, state json.RawMessage) error
	// TaskCancelOpen cancels every non-terminal task of a job, and its
	// assigned or running attempts, and returns the ids of those attempts
	// (sorted), to be killed.
	TaskCancelOpen(ctx context.Context, jobID string, now time.Time) ([]string, error)

	// AttemptList lists a job's attempts by task index, then number.
	AttemptList(ctx context.Context, jobID string) ([]*Attempt, error)
	// AttemptStart moves an assigned attempt to running; ErrConflict when it
	// is not assigned.
	AttemptStart(ctx context.Context, attemptID string, now time.Time) error
	// AttemptFinish ends an attempt that is assigned or running and moves its
	// task (which must be running) to p.TaskStatus; ErrConflict when the
	// attempt already ended.
	AttemptFinish(ctx context.Context, p *AttemptFinishParams) (*Attempt, error)
	// AttemptGet finds an attempt by id.
	AttemptGet(ctx context.Context, id string) (*Attempt, error)
	// JobLock holds the job's row lock until the transaction ends (on
	// PostgreSQL; SQLite serialises writers): call it after a task's end
	// (lock order) and before deciding from the task counts whether the
	// job ended. It writes nothing: a task's end leaves the job row alone,
	// because a 10,000-item fan-out's row is a quarter of a megabyte that
	// SQLite rewrote, overflow pages and all, at every task's end
	// (docs/bench.md). ErrNotFound when there is no job.
	JobLock(ctx context.Context, id string) error
	// AttemptListOpen lists assigned or running attempts (of one host when
	// hostID is set), for recovery after a restart or a lost host.
	AttemptListOpen(ctx context.Context, hostID string) ([]*Attempt, error)

	JobEventCreate(ctx context.Context, e *JobEvent) error
	// JobEventList lists a job's events oldest first (by position; inside
	// the transaction that writes them, its own events come last); limit <=
	// 0 means all.
	JobEventList(ctx context.Context, jobID string, limit int) ([]*JobEvent, error)
	// JobEventPage lists one page of a job's committed events by position:
	// what GET /jobs/{id}/events pages through.
	JobEventPage(ctx context.Context, p *JobEventPageParams) ([]*JobEvent, error)
	// JobEventFeed lists committed events after a position, by position:
	// what streams read. An event is listed only once every event of a
	// smaller position is visible too, so a reader that resumes after the
	// last position it read never skips one.
	JobEventFeed(ctx context.Context, p *JobEventFeedParams) ([]*JobEvent, error)
	// JobEventLastPosition is the greatest position committed (0: none).
	JobEventLastPosition(ctx context.Context) (int64, error)
	// TaskQueuedCount counts the tasks waiting for capacity, of every job.
	TaskQueuedCount(ctx context.Context) (int64, error)
}
