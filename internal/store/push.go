package store

import (
	"context"
	"encoding/json"
	"time"
)

// PushStatus is where a durable build stands.
type PushStatus string

const (
	PushQueued    PushStatus = "queued"
	PushBuilding  PushStatus = "building"
	PushPublished PushStatus = "published"
	PushFailed    PushStatus = "failed"
)

// IsTerminal reports whether no further transition can happen.
func (s PushStatus) IsTerminal() bool { return s == PushPublished || s == PushFailed }

// PushTransitions lists, for each status, the statuses it may move to. The
// store's guarded updates and the tests both use it.
var PushTransitions = map[PushStatus][]PushStatus{
	PushQueued:   {PushBuilding, PushFailed},
	PushBuilding: {PushPublished, PushFailed, PushQueued}, // back to queued when a restart resumes it
}

// CanTransition reports whether from -> to is allowed.
func (s PushStatus) CanTransition(to PushStatus) bool {
	for _, t := range PushTransitions[s] {
		if t == to {
			return true
		}
	}
	return false
}

// Push is one upload of a project's code and its build.
type Push struct {
	ID          string // push_ref
	ProjectID   string
	AccountID   string
	Status      PushStatus
	ContentHash string
	SizeBytes   int64
	TarballDiff json.RawMessage // {added_files, removed_files, changed_files} or null
	FileIndex   json.RawMessage // path -> sha256 of this revision, for the next diff
	Manifest    json.RawMessage
	ContextDir  string // where the extracted build context waits for the builder
	ImageRef    string
	ImageDigest string
	Error       string
	NextAction  string
	LogTail     string
	Attempts    int64 // build starts, counted so a push that crashes the server is not retried forever
	CreatedAt   time.Time
	UpdatedAt   time.Time
	StartedAt   *time.Time
	FinishedAt  *time.Time
}

type PushCreateParams struct {
	ID, ProjectID, AccountID string
	ContentHash              string
	SizeBytes                int64
	TarballDiff              json.RawMessage
	FileIndex                json.RawMessage
	Manifest                 json.RawMessage
	ContextDir               string
	Now                      time.Time
}

// PushFinishParams ends a build: published with an image, or failed with an
// error and a next action.
type PushFinishParams struct {
	ID          string
	Status      PushStatus // PushPublished or PushFailed
	ImageRef    string
	ImageDigest string
	Error       string
	NextAction  string
	LogTail     string
	Now         time.Time
}

type PushStore interface {
	PushCreate(ctx context.Context, p *PushCreateParams) (*Push, error)
	PushGet(ctx context.Context, projectID, id string) (*Push, error)
	// PushLatest is the newest push of a project, any status.
	PushLatest(ctx context.Context, projectID string) (*Push, error)
	// PushLatestPublished is the revision jobs run against.
	PushLatestPublished(ctx context.Context, projectID string) (*Push, error)
	// PushActive is the queued or building push of a project, if any.
	PushActive(ctx context.Context, projectID string) (*Push, error)
	PushList(ctx context.Context, projectID string, limit int) ([]*Push, error)
	// PushListUnfinished lists queued and building pushes of every project,
	// oldest first, for the builder to resume after a restart.
	PushListUnfinished(ctx context.Context) ([]*Push, error)
	// PushCountUnfinished counts an account's queued and building pushes,
	// over all its projects (the per-account build quota).
	PushCountUnfinished(ctx context.Context, accountID string) (int, error)
	// PushStart moves a queued push to building and counts the attempt.
	// ErrConflict when it is not queued.
	PushStart(ctx context.Context, id string, now time.Time) (*Push, error)
	// PushRequeue moves a building push back to queued (a restart found it
	// interrupted). ErrConflict when it is not building.
	PushRequeue(ctx context.Context, id string, now time.Time) error
	// PushFinish moves a queued or building push to a terminal status.
	// ErrConflict when it is already terminal.
	PushFinish(ctx context.Context, p *PushFinishParams) (*Push, error)
	// PushSetLogTail updates the log tail of a running build.
	PushSetLogTail(ctx context.Context, id, logTail string, now time.Time) error
}
