package jobview

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/job/expand"
	"github.com/skiffhq/skiff/internal/job/submit"
	"github.com/skiffhq/skiff/internal/store"
)

// How much of a job's output its views show (spec 8).
const (
	// MaxJobOutputBytes bounds GET /jobs/:id/output's concatenated stdout.
	MaxJobOutputBytes = 10 << 10
	// MaxErrorChars is how much of the end of a task's stderr is shown.
	MaxErrorChars = 1000
	// ErrorSnippetChars is how much of a job's error its list entry shows.
	ErrorSnippetChars = 120
	// StaleAfter is how long a running task may go without a sign of life
	// (its placement, progress, output: the task's updated_at) before its
	// health_status says "stale".
	StaleAfter = 5 * time.Minute
)

// Task health states of a running task (health_status).
const (
	HealthStarting = "starting" // assigned to a worker, process not started yet
	HealthHealthy  = "healthy"  // reported within StaleAfter
	HealthStale    = "stale"    // silent for StaleAfter or longer
)

var priorityNames = map[int]string{
	store.PriorityHigh: apiv1.PriorityHigh, store.PriorityNormal: apiv1.PriorityNormal, store.PriorityLow: apiv1.PriorityLow,
}

// submissionOf reads the normalised submission stored with a job. A job
// stored without one (older rows, tests) reads as the zero submission.
func submissionOf(j *store.Job) submit.Submission {
	var sub submit.Submission
	_ = json.Unmarshal(j.Request, &sub)
	return sub
}

// JobLinksOf are a job's addresses.
func JobLinksOf(jobID string) apiv1.JobLinks {
	base := "/api/v1/jobs/" + jobID
	return apiv1.JobLinks{Self: base, Tasks: base + "/tasks", Output: base + "/output", Events: base + "/events",
		Result: "/api/v1/results/" + jobID, Stream: base + "/stream"}
}

func jobCommon(j *store.Job) apiv1.JobCommon {
	sub := submissionOf(j)
	reqs := sub.Requirements.API()
	mode := sub.ReservationMode
	if mode == "" {
		mode = apiv1.ReservationBestEffort
	}
	cp := sub.Checkpointing
	if cp.PayloadKey == "" {
		cp.PayloadKey = submit.DefaultPayloadKey
	}
	timeout := sub.TimeoutS
	if timeout == 0 {
		timeout = submit.DefaultTimeoutS
	}
	tags := j.Tags
	if tags == nil {
		tags = []string{}
	}
	deps := sub.DependsOn
	if deps == nil {
		deps = []string{}
	}
	return apiv1.JobCommon{
		ID: j.ID, Status: string(j.Status), Type: j.Type, Project: j.ProjectName, Priority: priorityNames[j.Priority],
		Requirements:  reqs,
		Reservation:   apiv1.JobReservation{Mode: &mode},
		Checkpointing: apiv1.JobCheckpointing{Enabled: &cp.Enabled, ResumeFromLatest: &cp.ResumeFromLatest, PayloadKey: &cp.PayloadKey},
		TimeoutS:      timeout, MaxRetries: sub.MaxRetries, DependsOn: deps, Preset: strOrNil(sub.Preset),
		RecommendedAction: strOrNil(j.RecommendedAction), Meta: jsonOrNull(j.Meta), Variant: j.Variant,
		ClientRef: j.ClientRef, Tags: tags, TaskCount: j.TaskCount,
		SubmittedAt: j.SubmittedAt, StartedAt: j.StartedAt, CompletedAt: j.FinishedAt, Links: JobLinksOf(j.ID),
	}
}

// JobView is the job object of GET /api/v1/jobs/:id; summary comes from
// Service.SummaryOf.
func JobView(j *store.Job, summary json.RawMessage) *apiv1.Job {
	return &apiv1.Job{JobCommon: jobCommon(j), Summary: summary, Error: strOrNil(j.Error)}
}

// JobListEntryView is a job as the job list shows it.
func JobListEntryView(j *store.Job, hasOutput bool) apiv1.JobListEntry {
	e := apiv1.JobListEntry{JobCommon: jobCommon(j), Payload: jsonOrNull(j.Payload), UserID: j.AccountID,
		HasError: j.Error != "", HasOutput: hasOutput}
	if j.Error != "" {
		snippet := headChars(j.Error, ErrorSnippetChars)
		if len(snippet) < len(j.Error) {
			snippet += "…"
		}
		e.ErrorSnippet = &snippet
	}
	return e
}

// taskFailing reports whether a task's stderr belongs to a failure: the task
// failed, or its last attempt failed and it waits for (or runs) its retry,
// whose own output replaces the failed attempt's when it reports (spec 3.1).
func taskFailing(t *store.Task) bool {
	switch t.Status {
	case store.TaskFailed:
		return true
	case store.TaskQueued, store.TaskRunning:
		return t.RetriesUsed+t.InfraRequeues+t.DeclaredInfra > 0 && t.ErrorText != ""
	}
	return false
}

func taskError(t *store.Task) *string {
	if !taskFailing(t) || t.ErrorText == "" {
		return nil
	}
	e := tailChars(t.ErrorText, MaxErrorChars)
	return &e
}

// OutputView is GET /api/v1/jobs/:id/output: the tasks' stdout in index
// order, cut at MaxJobOutputBytes, and the error of the last failing task.
func OutputView(tasks []*store.Task) apiv1.JobOutput {
	var b strings.Builder
	out := apiv1.JobOutput{}
	for _, t := range tasks {
		if t.Output == "" {
			continue
		}
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(t.Output)
		if b.Len() > MaxJobOutputBytes {
			break
		}
	}
	out.Output = b.String()
	if len(out.Output) > MaxJobOutputBytes {
		out.Output, out.OutputTruncated = headBytes(out.Output, MaxJobOutputBytes), true
	}
	for i := len(tasks) - 1; i >= 0; i-- {
		if e := taskError(tasks[i]); e != nil {
			out.Error = e
			break
		}
	}
	return out
}

// TaskView is one task of GET /api/v1/jobs/:id/tasks with its attempts;
// now dates runtime and staleness.
func TaskView(t *store.Task, attempts []*store.Attempt, now time.Time) apiv1.Task {
	v := apiv1.Task{
		ID: t.ID, Index: t.Index, Status: string(t.Status), Payload: jsonOrNull(t.Payload), Meta: jsonOrEmpty(t.Meta),
		Requirements:  jsonOrEmpty(t.Requirements),
		ResultPresent: hasJSON(t.Result), OutputPresent: t.Output != "", Output: t.Output, Error: taskError(t),
		Result: jsonOrNull(t.Result), ExitCode: t.ExitCode, ResultWarnings: []string{}, Artifacts: []apiv1.TaskArtifact{},
		LatestProgress: jsonOrNull(t.LatestProgress), Checkpoint: jsonOrNull(t.Checkpoint), ResumeState: jsonOrNull(t.ResumeState),
		StartedAt: t.StartedAt, CompletedAt: t.CompletedAt,
		RetriesUsed: t.RetriesUsed, InfraRequeues: t.InfraRequeues, Attempts: make([]apiv1.TaskAttempt, 0, len(attempts)),
	}
	var cost int64
	v.ChunkIndex, v.ChunkCount, v.SeedRange = chunkMeta(t.Meta)
	var runtime time.Duration
	var current *store.Attempt
	for _, a := range attempts {
		av := AttemptView(a, now)
		v.Attempts = append(v.Attempts, av)
		v.Cost.BilledSeconds += a.BilledSeconds
		cost += a.CostMicros
		if a.StartedAt != nil {
			runtime += endOr(a.EndedAt, now).Sub(*a.StartedAt)
		}
		if a.Status == store.AttemptAssigned || a.Status == store.AttemptRunning {
			current = a
		}
	}
	v.RuntimeS = secondsOf(runtime)
	v.Cost.CostUSD = apiv1.USD(cost)
	if t.Status == store.TaskRunning {
		v.LiveFeedback = &apiv1.LiveFeedback{OutputTail: t.OutputTail}
		stale := now.Sub(t.UpdatedAt)
		if stale < 0 {
			stale = 0
		}
		s := secondsOf(stale)
		v.StaleForS = &s
		health := HealthHealthy
		switch {
		case current != nil && current.Status == store.AttemptAssigned && stale < StaleAfter:
			health = HealthStarting
		case stale >= StaleAfter:
			health = HealthStale
		}
		v.HealthStatus = &health
	}
	return v
}

// AttemptView shows one attempt: the worker only by its pseudonymous
// handle, and of its resource profile only the documented fields.
func AttemptView(a *store.Attempt, now time.Time) apiv1.TaskAttempt {
	v := apiv1.TaskAttempt{AttemptNumber: a.Number, Status: string(a.Status), AssignedAt: a.AssignedAt,
		StartedAt: a.StartedAt, EndedAt: a.EndedAt, TerminalKind: strOrNil(a.TerminalKind),
		RetryDecision: strOrNil(a.RetryDecision), ExitCode: a.ExitCode, WorkerHandle: a.HostID,
		BilledSeconds: a.BilledSeconds, CostUSD: apiv1.USD(a.CostMicros)}
	if a.StartedAt != nil {
		d := secondsOf(endOr(a.EndedAt, now).Sub(*a.StartedAt))
		v.DurationS = &d
	}
	// Decoding into the public struct keeps only its fields: nothing else a
	// worker reported (host names, paths) can reach the answer.
	_ = json.Unmarshal(a.ResourceProfile, &v.ResourceProfile)
	return v
}

// EventView shows one job event.
func EventView(e *store.JobEvent) apiv1.JobEvent {
	return apiv1.JobEvent{ID: e.ID, Kind: e.Kind, TaskID: e.TaskID, AttemptID: e.AttemptID, Data: jsonOrEmpty(e.Data),
		CreatedAt: e.CreatedAt, Position: e.Position}
}

// ResultCommonView is the result object's job-level part; summary comes
// from Service.SummaryOf.
func ResultCommonView(j *store.Job, summary json.RawMessage) apiv1.ResultCommon {
	tags := j.Tags
	if tags == nil {
		tags = []string{}
	}
	v := apiv1.ResultCommon{
		JobID: j.ID, Project: j.ProjectName, Status: string(j.Status), Type: j.Type, ClientRef: j.ClientRef, Tags: tags,
		Meta: jsonOrNull(j.Meta), Variant: j.Variant, ArtifactIDs: []string{},
		Links: apiv1.ResultLinks{Job: "/api/v1/jobs/" + j.ID, Tasks: "/api/v1/jobs/" + j.ID + "/tasks",
			Stream: "/api/v1/jobs/" + j.ID + "/stream", Result: "/api/v1/results/" + j.ID},
		Summary: summary, TaskCount: j.TaskCount, SubmittedAt: j.SubmittedAt, CompletedAt: j.FinishedAt,
		Error: strOrNil(j.Error),
	}
	var s struct {
		AggregateResult  json.RawMessage `json:"aggregate_result"`
		AggregateAliases json.RawMessage `json:"aggregate_aliases"`
		Completeness     json.RawMessage `json:"completeness"`
		ResultPersisted  bool            `json:"result_persisted"`
		OutputPersisted  bool            `json:"output_persisted"`
	}
	_ = json.Unmarshal(summary, &s)
	v.AggregateResult, v.AggregateAliases = jsonOrNull(s.AggregateResult), jsonOrEmpty(s.AggregateAliases)
	v.Completeness = jsonOrEmpty(s.Completeness)
	v.ResultPersisted, v.OutputPersisted = s.ResultPersisted, s.OutputPersisted
	return v
}

// ResultTaskView is one task of a result.
func ResultTaskView(t *store.Task) apiv1.ResultTask {
	v := apiv1.ResultTask{TaskID: t.ID, Index: t.Index, Status: string(t.Status), Payload: jsonOrNull(t.Payload),
		Result: jsonOrNull(t.Result), ArtifactIDs: []string{}, ResultPresent: hasJSON(t.Result),
		ResultWarnings: []string{}, Output: t.Output, OutputPresent: t.Output != "", Error: taskError(t),
		StartedAt: t.StartedAt, CompletedAt: t.CompletedAt}
	v.ChunkIndex, v.ChunkCount, v.SeedRange = chunkMeta(t.Meta)
	return v
}

// chunkMeta lifts the chunk fields of a task's expansion meta (spec 2.6:
// chunk fan-out keeps them visible per task).
func chunkMeta(raw json.RawMessage) (*int, *int, json.RawMessage) {
	var m expand.Meta
	if json.Unmarshal(raw, &m) != nil {
		return nil, nil, nil
	}
	var seed json.RawMessage
	if m.SeedRange != nil {
		seed, _ = json.Marshal(m.SeedRange)
	}
	return m.ChunkIndex, m.ChunkCount, seed
}

func endOr(end *time.Time, now time.Time) time.Time {
	if end != nil {
		return *end
	}
	return now
}

// secondsOf rounds to milliseconds.
func secondsOf(d time.Duration) float64 {
	return math.Round(d.Seconds()*1000) / 1000
}

func strOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func hasJSON(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && string(t) != "null"
}

func jsonOrNull(raw json.RawMessage) json.RawMessage {
	if !hasJSON(raw) || !json.Valid(raw) {
		return json.RawMessage("null")
	}
	return raw
}

func jsonOrEmpty(raw json.RawMessage) json.RawMessage {
	if !hasJSON(raw) || !json.Valid(raw) {
		return json.RawMessage("{}")
	}
	return raw
}

// headChars is s cut to at most n characters.
func headChars(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// tailChars is the last n characters of s.
func tailChars(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	end := len(s)
	for range n {
		_, size := utf8.DecodeLastRuneInString(s[:end])
		end -= size
	}
	return s[end:]
}

// headBytes is s cut to at most n bytes on a character boundary.
func headBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// HasResult reports whether a task stored a structured result (a failure
// payload counts).
func HasResult(t *store.Task) bool { return hasJSON(t.Result) }

// WithArtifacts adds a task's artifacts (from Service.Artifacts, the whole
// job's) to its view.
func WithArtifacts(v *apiv1.Task, arts []*store.Artifact) {
	v.Artifacts = []apiv1.TaskArtifact{}
	for _, a := range arts {
		if a.TaskID != v.ID {
			continue
		}
		v.Artifacts = append(v.Artifacts, apiv1.TaskArtifact{ID: a.ID, Filename: a.Filename, Size: a.SizeBytes,
			SHA256: a.SHA256, Kind: string(a.Kind)})
		id := a.ID
		switch a.Kind {
		case store.ArtifactLog:
			v.OutputArtifactID = &id
		case store.ArtifactResult:
			name := a.Filename
			v.ResultSpilled, v.ResultArtifactID, v.ResultFilename = true, &id, &name
		}
	}
}

// ResultTaskWithArtifacts is one task of a result with its artifacts (from
// Service.Artifacts, the whole job's): their ids, and the spilled result's.
func ResultTaskWithArtifacts(t *store.Task, arts []*store.Artifact) apiv1.ResultTask {
	v := ResultTaskView(t)
	v.ArtifactIDs = ArtifactIDsOf(arts, t.ID)
	for _, a := range arts {
		if a.TaskID == t.ID && a.Kind == store.ArtifactResult {
			id := a.ID
			v.ResultArtifactID = &id
		}
	}
	return v
}

// ArtifactIDsOf lists the ids of a task's artifacts; taskID "" lists the
// whole job's.
func ArtifactIDsOf(arts []*store.Artifact, taskID string) []string {
	out := []string{}
	for _, a := range arts {
		if taskID == "" || a.TaskID == taskID {
			out = append(out, a.ID)
		}
	}
	return out
}
