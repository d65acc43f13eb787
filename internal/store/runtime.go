package store

import (
	"context"
	"time"
)

// RuntimePrepStatus is how far a host has prepared a revision.
type RuntimePrepStatus string

const (
	RuntimePreparing RuntimePrepStatus = "preparing"
	RuntimeReady     RuntimePrepStatus = "ready"
	RuntimeFailed    RuntimePrepStatus = "failed"
	RuntimeStale     RuntimePrepStatus = "stale"
)

// RuntimePrep is one host's preparation of a project's revision.
type RuntimePrep struct {
	ProjectID   string
	HostID      string
	ContentHash string
	ImageDigest string
	Status      RuntimePrepStatus
	Error       string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	ReadyAt     *time.Time
}

type RuntimePrepPutParams struct {
	ProjectID, HostID        string
	ContentHash, ImageDigest string
	Status                   RuntimePrepStatus
	Error                    string
	Now                      time.Time
}

// Quote is an amount an account is asked to pay (spec 2.8).
type Quote struct {
	ID           string
	AccountID    string
	QuoteType    string
	Status       string
	AmountMicros int64
	Description  string
	Attrs        []byte // JSON object
	ExpiresAt    time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time
	PaidAt       *time.Time
}

type QuoteCreateParams struct {
	ID, AccountID string
	QuoteType     string
	AmountMicros  int64
	Description   string
	Attrs         []byte
	ExpiresAt     time.Time
	Now           time.Time
}

type RuntimeStore interface {
	// RuntimePrepPut creates or replaces a host's preparation of a project.
	RuntimePrepPut(ctx context.Context, p *RuntimePrepPutParams) (*RuntimePrep, error)
	RuntimePrepList(ctx context.Context, projectID string) ([]*RuntimePrep, error)
	// RuntimePrepMarkStale marks every preparation of the project stale and
	// returns how many changed.
	RuntimePrepMarkStale(ctx context.Context, projectID string, now time.Time) (int64, error)
}

type QuoteStore interface {
	QuoteCreate(ctx context.Context, p *QuoteCreateParams) (*Quote, error)
	QuoteGet(ctx context.Context, accountID, id string) (*Quote, error)
}
