package store

import (
	"context"
	"time"
)

// ArtifactSource says where an artifact's bytes are.
type ArtifactSource string

const (
	ArtifactLocal    ArtifactSource = "local"    // in the service's blob store
	ArtifactExternal ArtifactSource = "external" // at a registered http(s) URL
)

// ArtifactKind says how an artifact came to be.
type ArtifactKind string

const (
	ArtifactUpload       ArtifactKind = "upload"        // POST /artifacts
	ArtifactOutput       ArtifactKind = "output"        // a file of a task's artifact dir
	ArtifactFailedOutput ArtifactKind = "failed_output" // the same, of a failed attempt
	ArtifactResult       ArtifactKind = "result"        // a spilled structured result
	ArtifactLog          ArtifactKind = "log"           // a task's full output
)

// ArtifactRole is what a referencing job does with an artifact.
type ArtifactRole string

const (
	ArtifactRoleInput  ArtifactRole = "input"
	ArtifactRoleOutput ArtifactRole = "output"
)

// Artifact is one visible artifact and the references to it.
type Artifact struct {
	ID        string
	AccountID string
	SHA256    string // "" for an external artifact registered without one
	SizeBytes int64
	Filename  string
	Source    ArtifactSource
	URL       string
	JobID     string // the producing job, if any
	TaskID    string
	Kind      ArtifactKind
	CreatedAt time.Time
	DeletedAt *time.Time

	// Reference counts: every referencing job, those not yet terminal,
	// and those terminal; LastReferencedAt is the newest reference.
	ReferenceCount         int64
	ActiveReferenceCount   int64
	TerminalReferenceCount int64
	LastReferencedAt       *time.Time
}

// ArtifactCreateParams stores an artifact. JobID, when set, also records
// the job's output reference in the same statement batch.
type ArtifactCreateParams struct {
	ID, AccountID string
	SHA256        string
	SizeBytes     int64
	Filename      string
	Source        ArtifactSource
	URL           string
	JobID, TaskID string
	Kind          ArtifactKind
	Now           time.Time
}

type ArtifactListParams struct {
	AccountID     string
	Limit, Offset int
}

// ArtifactRefParams records that a job produces or consumes an artifact.
type ArtifactRefParams struct {
	ArtifactID, JobID string
	Role              ArtifactRole
	Now               time.Time
}

type ArtifactStore interface {
	ArtifactCreate(ctx context.Context, p *ArtifactCreateParams) (*Artifact, error)
	// ArtifactGet finds a visible (not deleted) artifact of one account.
	ArtifactGet(ctx context.Context, accountID, id string) (*Artifact, error)
	// ArtifactGetByID finds a visible artifact whatever its account: for
	// the controller's own work (a host fetching an input), never for a
	// caller's request.
	ArtifactGetByID(ctx context.Context, id string) (*Artifact, error)
	// ArtifactRefExists reports whether a job refers to an artifact in a
	// role.
	ArtifactRefExists(ctx context.Context, artifactID, jobID string, role ArtifactRole) (bool, error)
	// ArtifactListByJob lists the visible artifacts a job produced, oldest
	// first (reference counts are not filled in).
	ArtifactListByJob(ctx context.Context, jobID string) ([]*Artifact, error)
	// ArtifactList pages an account's visible artifacts, newest first, and
	// gives the total.
	ArtifactList(ctx context.Context, p *ArtifactListParams) ([]*Artifact, int, error)
	// ArtifactQuotaUsed sums the sizes of an account's visible stored
	// content, each sha256 once.
	ArtifactQuotaUsed(ctx context.Context, accountID string) (int64, error)
	// ArtifactContentCounted reports whether the account already has a
	// visible artifact with this content (so storing it again costs no
	// quota).
	ArtifactContentCounted(ctx context.Context, accountID, sha256 string) (bool, error)
	// ArtifactRefAdd records a reference; adding it twice is a no-op.
	ArtifactRefAdd(ctx context.Context, p *ArtifactRefParams) error
	// ArtifactHide marks a visible artifact deleted. ErrNotFound when it is
	// not visible to the account; ErrConflict when a job that is not
	// terminal refers to it (checked in the same statement).
	ArtifactHide(ctx context.Context, accountID, id string, now time.Time) error
	// ArtifactListHiddenBefore lists up to limit artifacts hidden at or
	// before t, oldest first: those whose grace is over.
	ArtifactListHiddenBefore(ctx context.Context, t time.Time, limit int) ([]*Artifact, error)
	// ArtifactPurge removes a hidden artifact's row and references.
	ArtifactPurge(ctx context.Context, id string) error
	// ArtifactContentHeld reports whether any row, visible or in its
	// grace, holds this content.
	ArtifactContentHeld(ctx context.Context, sha256 string) (bool, error)
}
