// Package testfactory inserts store rows for tests, in the manner of River's
// testfactory: one function per row kind, taking the Querier to write with
// and an options struct whose zero fields get sensible defaults, returning
// the row as the store wrote it. A test names only what it cares about;
// anything a row needs that the test does not name (an account for a
// project, a project for a job) is made for it.
//
// Every function fails the test on a store error, so set-up reads as a list
// of rows. Tests that check a write's error call the store themselves.
package testfactory

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
)

// Epoch is the time every row is written at unless its options say
// otherwise: a fixed instant, so tests never mix the wall clock in.
func Epoch() time.Time { return time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC) }

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func orTime(v time.Time) time.Time {
	if v.IsZero() {
		return Epoch()
	}
	return v
}

func orJSON(v json.RawMessage, def string) json.RawMessage {
	if v == nil {
		return json.RawMessage(def)
	}
	return v
}

// accountOr is accountID, or a new account's when it is empty.
func accountOr(tb testing.TB, q store.Querier, accountID string, now time.Time) string {
	tb.Helper()
	if accountID != "" {
		return accountID
	}
	return Account(tb, q, &AccountOpts{Now: now}).ID
}

// AccountOpts overrides an account's defaults (a unique name, written at Epoch).
type AccountOpts struct {
	ID, Name string
	Now      time.Time
}

// Account inserts an account.
func Account(tb testing.TB, q store.Querier, opts *AccountOpts) *store.Account {
	tb.Helper()
	if opts == nil {
		opts = &AccountOpts{}
	}
	acctID := or(opts.ID, id.New(id.Account))
	a, err := q.AccountCreate(tb.Context(), &store.AccountCreateParams{ID: acctID,
		Name: or(opts.Name, "user-"+acctID), Now: orTime(opts.Now)})
	if err != nil {
		tb.Fatalf("testfactory.Account(%q): %v", opts.Name, err)
	}
	return a
}

// ProjectOpts overrides a project's defaults: a new account when AccountID is
// empty, name "p", an OCI runtime at version 1, env {"A":"1"}, a 600 s setup
// timeout.
type ProjectOpts struct {
	AccountID, Name string
	Env             json.RawMessage
	RuntimeKind     string
	ImageRef        string
	Now             time.Time
}

// Project inserts a project (and its account when opts names none).
func Project(tb testing.TB, q store.Querier, opts *ProjectOpts) *store.Project {
	tb.Helper()
	if opts == nil {
		opts = &ProjectOpts{}
	}
	acct := accountOr(tb, q, opts.AccountID, opts.Now)
	name := or(opts.Name, "p")
	p, err := q.ProjectCreate(tb.Context(), &store.ProjectWriteParams{
		ID: id.New(id.Project), AccountID: acct, Name: name, SetupTimeoutS: 600,
		RuntimeKind: or(opts.RuntimeKind, "oci"), RuntimeVersion: 1, ImageRef: opts.ImageRef,
		Env: orJSON(opts.Env, `{"A":"1"}`), Now: orTime(opts.Now),
	})
	if err != nil {
		tb.Fatalf("testfactory.Project(%q): %v", name, err)
	}
	return p
}

// PushOpts overrides a push's defaults: a new project when Project is nil,
// a content hash unique to the push, 10 bytes, a one-file index.
type PushOpts struct {
	Project     *store.Project
	ContentHash string
	Now         time.Time
}

// Push inserts a queued push (and its project when opts names none).
func Push(tb testing.TB, q store.Querier, opts *PushOpts) *store.Push {
	tb.Helper()
	if opts == nil {
		opts = &PushOpts{}
	}
	p := opts.Project
	if p == nil {
		p = Project(tb, q, &ProjectOpts{Now: opts.Now})
	}
	pushID := id.New(id.Push)
	pu, err := q.PushCreate(tb.Context(), &store.PushCreateParams{ID: pushID, ProjectID: p.ID, AccountID: p.AccountID,
		ContentHash: or(opts.ContentHash, "sha256:"+pushID), SizeBytes: 10, FileIndex: json.RawMessage(`{"a":"1"}`),
		TarballDiff: json.RawMessage(`{"added_files":["a"]}`), ContextDir: "/tmp/ctx", Now: orTime(opts.Now)})
	if err != nil {
		tb.Fatalf("testfactory.Push: %v", err)
	}
	return pu
}

// JobOpts overrides a job's defaults: a new project (and account) when
// Project is nil, one task, queued, normal priority, a structured_runner
// request, submitted at Epoch. Task i has payload {"i":i}, meta
// {"chunk_index":i} and requirements {"cpu":1}.
type JobOpts struct {
	Project     *store.Project
	Tasks       int // 0: one task; TasksNone: a job without tasks
	Status      store.JobStatus
	Priority    *int // nil: store.PriorityNormal (store.PriorityHigh is 0)
	SubmittedAt time.Time
}

// TasksNone in JobOpts.Tasks asks for a job without tasks.
const TasksNone = -1

// JobParams returns the parameters Job would write, for a test that changes
// them first or checks JobCreate's own errors.
func JobParams(tb testing.TB, q store.Querier, opts *JobOpts) *store.JobCreateParams {
	tb.Helper()
	if opts == nil {
		opts = &JobOpts{}
	}
	p := opts.Project
	if p == nil {
		p = Project(tb, q, &ProjectOpts{Now: opts.SubmittedAt})
	}
	at := orTime(opts.SubmittedAt)
	priority := store.PriorityNormal
	if opts.Priority != nil {
		priority = *opts.Priority
	}
	tasks := make([]store.Task, max(or(opts.Tasks, 1), 0))
	for i := range tasks {
		tasks[i] = store.Task{ID: id.New(id.Task), Index: int64(i),
			Payload:      json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)),
			Meta:         json.RawMessage(fmt.Sprintf(`{"chunk_index":%d}`, i)),
			Requirements: json.RawMessage(`{"cpu":1}`)}
	}
	return &store.JobCreateParams{
		Job: store.Job{ID: id.New(id.Job), AccountID: p.AccountID, ProjectID: p.ID, ProjectName: p.Name,
			PushID: "psh_x", Type: "structured_runner", Status: or(opts.Status, store.JobQueued),
			Priority: priority,
			Request:  json.RawMessage(`{"type":"structured_runner"}`), Payload: json.RawMessage(`{"items":[1,2]}`),
			SubmittedAt: at},
		Tasks: tasks,
		Event: store.JobEvent{ID: id.New(id.Event), Kind: "job.submitted", Data: json.RawMessage(`{"n":1}`), CreatedAt: at},
	}
}

// Job inserts a job and its tasks.
func Job(tb testing.TB, q store.Querier, opts *JobOpts) *store.Job {
	tb.Helper()
	return JobFrom(tb, q, JobParams(tb, q, opts))
}

// JobFrom inserts the job p describes (from JobParams, changed by the test).
func JobFrom(tb testing.TB, q store.Querier, p *store.JobCreateParams) *store.Job {
	tb.Helper()
	j, err := q.JobCreate(tb.Context(), p)
	if err != nil {
		tb.Fatalf("testfactory.Job: %v", err)
	}
	return j
}

// Task inserts a queued job of one task (per opts) and returns the task.
func Task(tb testing.TB, q store.Querier, opts *JobOpts) *store.Task {
	tb.Helper()
	if opts == nil {
		opts = &JobOpts{}
	}
	opts.Tasks = 1
	j := Job(tb, q, opts)
	tasks, err := q.TaskList(tb.Context(), j.ID)
	if err != nil || len(tasks) != 1 {
		tb.Fatalf("testfactory.Task: tasks of %s: %v, %v", j.ID, tasks, err)
	}
	return tasks[0]
}

// AttemptOpts overrides a claim's defaults: host "wkr_a", a 4-CPU resource
// profile, no capacity limit, at Epoch.
type AttemptOpts struct {
	HostID, AttemptID string
	Now               time.Time
}

// Attempt claims the next queued task (the store's dispatch order) and
// returns the claimed task and its new attempt. Insert the task first
// (Task or Job); a store with nothing to claim fails the test.
func Attempt(tb testing.TB, q store.Querier, opts *AttemptOpts) (*store.Task, *store.Attempt) {
	tb.Helper()
	if opts == nil {
		opts = &AttemptOpts{}
	}
	task, att, err := q.TaskClaim(tb.Context(), &store.TaskClaimParams{HostID: or(opts.HostID, "wkr_a"),
		AttemptID: or(opts.AttemptID, id.New(id.Attempt)), ResourceProfile: json.RawMessage(`{"cpu_count":4}`),
		Now: orTime(opts.Now)})
	if err != nil {
		tb.Fatalf("testfactory.Attempt: %v", err)
	}
	return task, att
}

// ArtifactOpts overrides an artifact's defaults: a new account when
// AccountID is empty, local source, sha256 "a"*64, SizeBytes as given
// (0 is an empty file), at Epoch.
// JobID (with Kind) records the job's output reference as the store does.
type ArtifactOpts struct {
	AccountID     string
	SHA256        string
	SizeBytes     int64
	Filename      string
	Source        store.ArtifactSource
	URL           string
	JobID, TaskID string
	Kind          store.ArtifactKind
	Now           time.Time
}

// Artifact inserts an artifact.
func Artifact(tb testing.TB, q store.Querier, opts *ArtifactOpts) *store.Artifact {
	tb.Helper()
	if opts == nil {
		opts = &ArtifactOpts{}
	}
	acct := accountOr(tb, q, opts.AccountID, opts.Now)
	p := &store.ArtifactCreateParams{ID: id.New(id.Artifact), AccountID: acct, Filename: opts.Filename,
		Source: or(opts.Source, store.ArtifactLocal), URL: opts.URL, JobID: opts.JobID, TaskID: opts.TaskID,
		Kind: opts.Kind, Now: orTime(opts.Now)}
	if p.Source == store.ArtifactLocal {
		p.SHA256, p.SizeBytes = or(opts.SHA256, SHA('a')), opts.SizeBytes
	} else {
		p.SHA256, p.SizeBytes = opts.SHA256, opts.SizeBytes
	}
	a, err := q.ArtifactCreate(tb.Context(), p)
	if err != nil {
		tb.Fatalf("testfactory.Artifact: %v", err)
	}
	return a
}

// SHA is a well-formed sha256 hex string made of one repeated character.
func SHA(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}
