package apiv1

// Server-sent event streams (spec 6, docs/streams.md). Each frame is an SSE
// event whose name is one of the Frame* constants and whose data is one of
// the types below. Frames that come from a lifecycle event carry its
// position as the SSE id, so that a client reconnecting with Last-Event-ID
// gets exactly what it missed.

// Frame names.
const (
	FrameSnapshot = "snapshot"
	FrameJob      = "job"
	FrameTask     = "task"
	FrameEvent    = "event"
	FrameDone     = "done"
	FrameTimeout  = "timeout"
	FramePing     = "ping"
)

// Why a stream sent a fresh snapshot instead of resuming after the
// client's Last-Event-ID (Snapshot.Resync).
const (
	ResyncGapTooLarge      = "gap_too_large"         // more was missed than a stream replays
	ResyncInvalidLastEvent = "invalid_last_event_id" // the header was not a position
)

// JobStreamSnapshot is the first frame of GET /api/v1/jobs/:id/stream: the
// job and its first tasks (TasksShown of TaskCount, by index), with the
// count of its tasks in each status.
type JobStreamSnapshot struct {
	Job            *Job             `json:"job"`
	Tasks          []Task           `json:"tasks"`
	TaskCount      int64            `json:"task_count"`
	TasksShown     int              `json:"tasks_shown"`
	TasksTruncated bool             `json:"tasks_truncated"`
	TaskCounts     map[string]int64 `json:"task_counts"`
	// Position is the stream's place in the event order when the snapshot
	// was read: the frames that follow have greater positions.
	Position int64 `json:"position"`
	// Resync, when set, says why this snapshot replaces a resume.
	Resync *string `json:"resync,omitempty"`
}

// JobFrame is a job's new state: the job object as the store has it when
// the frame is sent, and the event that changed it. Watch streams add the
// result endpoint's public fields (Result) to terminal job frames.
type JobFrame struct {
	Event  JobEvent      `json:"event"`
	Job    *Job          `json:"job"`
	Result *ResultCommon `json:"result,omitempty"`
}

// TaskFrame is a task's new state and the event that changed it. A
// task.progress event's output tail and progress are those the runner
// printed when the event was written.
type TaskFrame struct {
	Event JobEvent `json:"event"`
	JobID string   `json:"job_id"`
	Task  Task     `json:"task"`
}

// EventFrame is a lifecycle event that changes neither the job's status
// nor a task's.
type EventFrame struct {
	Event JobEvent `json:"event"`
	JobID string   `json:"job_id"`
}

// DoneFrame ends a stream whose jobs all reached a terminal status.
type DoneFrame struct {
	JobID    string            `json:"job_id,omitempty"`
	Status   string            `json:"status,omitempty"`
	Statuses map[string]string `json:"statuses,omitempty"` // watch: job id to status
}

// TimeoutFrame ends a stream that the server closes before its job ended:
// its life (--stream-timeout) is over, its client read too slowly, or the
// server shuts down (Reason). The client reconnects with Last-Event-ID to
// go on.
type TimeoutFrame struct {
	Reason            string  `json:"reason"`
	StreamTimeoutS    float64 `json:"stream_timeout_s"`
	LastEventID       string  `json:"last_event_id"`
	RecommendedAction string  `json:"recommended_action"`
}

// WatchEntry is one watched job in a watch snapshot: the job object and
// the result endpoint's public fields, or why it cannot be watched.
type WatchEntry struct {
	ID     string        `json:"id"`
	Job    *Job          `json:"job,omitempty"`
	Result *ResultCommon `json:"result,omitempty"`
	Error  *Error        `json:"error,omitempty"`
}

// WatchSnapshot is the first frame of GET /api/v1/jobs/watch.
type WatchSnapshot struct {
	Jobs     []WatchEntry `json:"jobs"`
	Position int64        `json:"position"`
	Resync   *string      `json:"resync,omitempty"`
}

// ProjectSnapshot is the first frame of GET /api/v1/projects/:name/stream:
// the project's active (running), queued (planning or queued) and most
// recent terminal jobs, as list entries.
type ProjectSnapshot struct {
	Project  string         `json:"project"`
	Active   []JobListEntry `json:"active"`
	Queued   []JobListEntry `json:"queued"`
	Recent   []JobListEntry `json:"recent"`
	Position int64          `json:"position"`
	Resync   *string        `json:"resync,omitempty"`
}

// ProjectJobFrame is a delta of the project stream: one job's list entry
// after the event that changed it.
type ProjectJobFrame struct {
	Event JobEvent     `json:"event"`
	Job   JobListEntry `json:"job"`
}

// Why a stream sent its timeout frame (TimeoutFrame.Reason).
const (
	TimeoutStreamLife     = "stream_timeout"  // open --stream-timeout
	TimeoutSlowReader     = "slow_reader"     // its client fell more than the buffer behind
	TimeoutServerShutdown = "server_shutdown" // the server is stopping
)
