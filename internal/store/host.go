package store

import (
	"context"
	"encoding/json"
	"time"
)

// Enrollment is a one-time code an operator made for a machine to join the
// fleet. Only the code's hash is kept.
type Enrollment struct {
	CodeHash    string
	Name        string // the host's name once redeemed; "" lets the host's hostname name it
	WorkKinds   string // "cpu", "gpu" or "cpu,gpu"
	RatePercent int    // the host's share of what its tasks earn
	CreatedAt   time.Time
	ExpiresAt   time.Time
	UsedAt      time.Time // zero until redeemed
	HostID      string    // the host it made, "" until redeemed
}

type EnrollmentCreateParams struct {
	CodeHash    string
	Name        string
	WorkKinds   string
	RatePercent int
	Now         time.Time
	ExpiresAt   time.Time
}

// EnrollmentUseParams marks a code used by the host it made.
type EnrollmentUseParams struct {
	CodeHash string
	HostID   string
	Now      time.Time
}

// HostState is where an enrolled host stands.
type HostState string

const (
	HostActive   HostState = "active"   // takes new work
	HostDraining HostState = "draining" // finishes what it runs, takes nothing new
	HostRemoved  HostState = "removed"  // its credential no longer authenticates
)

// Host is an enrolled bring-your-own-hardware host. CPUs, MemoryMB and
// GPUs are the share it declared, not the machine's size.
type Host struct {
	ID             string // "wkr_..."
	Name           string
	State          HostState
	WorkKinds      string
	RatePercent    int
	CPUs           float64
	MemoryMB       int64
	GPUs           int
	Hostname       string
	Profile        json.RawMessage // the measured resource profile, a JSON object
	CredentialHash string
	CreatedAt      time.Time
	LastSeenAt     time.Time // zero until it first registered
}

type HostCreateParams struct {
	ID             string
	Name           string
	WorkKinds      string
	RatePercent    int
	CPUs           float64
	MemoryMB       int64
	GPUs           int
	Hostname       string
	Profile        json.RawMessage
	CredentialHash string
	Now            time.Time
}

// HostSetStateParams moves a host to State if it is in one of From.
type HostSetStateParams struct {
	ID    string
	State HostState
	From  []HostState
}

type HostStore interface {
	EnrollmentCreate(ctx context.Context, p *EnrollmentCreateParams) (*Enrollment, error)
	// EnrollmentGet finds a code by its hash; ErrNotFound when unknown.
	EnrollmentGet(ctx context.Context, codeHash string) (*Enrollment, error)
	// EnrollmentUse marks an unused code used; ErrConflict when it was
	// used already (a concurrent redeem won).
	EnrollmentUse(ctx context.Context, p *EnrollmentUseParams) error
	// HostCreate stores a host; ErrConflict on a repeated id or credential.
	HostCreate(ctx context.Context, p *HostCreateParams) (*Host, error)
	HostGet(ctx context.Context, id string) (*Host, error)
	// HostGetByCredential finds a host by its credential's hash, whatever
	// its state; ErrNotFound when none.
	HostGetByCredential(ctx context.Context, credentialHash string) (*Host, error)
	// HostList lists hosts oldest first.
	HostList(ctx context.Context, p *ListParams) ([]Host, error)
	// HostSetState changes a host's state; ErrNotFound for an unknown host,
	// ErrConflict when its state is not among p.From.
	HostSetState(ctx context.Context, p *HostSetStateParams) (*Host, error)
	// HostSeen records when the host last called.
	HostSeen(ctx context.Context, id string, at time.Time) error
}
