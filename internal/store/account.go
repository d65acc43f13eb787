package store

import (
	"context"
	"time"
)

// Role is what an API key may do.
type Role string

const (
	RoleMember Role = "member" // manages its own projects, jobs and artifacts
	RoleViewer Role = "viewer" // read-only on its own account
	RoleAdmin  Role = "admin"  // operator
)

// Valid reports whether r is a known role.
func (r Role) Valid() bool {
	switch r {
	case RoleMember, RoleViewer, RoleAdmin:
		return true
	}
	return false
}

// Account owns projects, jobs, credits and keys.
type Account struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// APIKey is a stored key. The secret itself is never stored, only its hash.
type APIKey struct {
	ID         string
	AccountID  string
	Role       Role
	SecretHash string
	Hint       string // the first characters of the secret, to tell keys apart
	CreatedAt  time.Time
	RevokedAt  *time.Time
}

// Principal is who a request acts as: a key with its account.
type Principal struct {
	Key     APIKey
	Account Account
}

type AccountCreateParams struct {
	ID, Name string
	Now      time.Time
}

type APIKeyCreateParams struct {
	ID, AccountID string
	Role          Role
	SecretHash    string
	Hint          string
	Now           time.Time
}

// LedgerEntry is one append-only movement of money. Credits are positive,
// debits negative.
type LedgerEntry struct {
	ID           string
	AccountID    string
	EntryType    string
	AmountMicros int64
	Reference    string // what caused it: a job id, a quote id, an operator note
	Description  string
	CreatedAt    time.Time
}

type LedgerEntryCreateParams struct {
	ID, AccountID string
	EntryType     string
	AmountMicros  int64
	Reference     string
	Description   string
	Now           time.Time
}

// Balance is derived from the ledger, the active holds and the open quotes;
// it is never stored.
type Balance struct {
	LedgerMicros    int64
	HeldMicros      int64
	ActiveHoldCount int64
	OpenQuoteCount  int64
}

// AvailableMicros is what the account can spend now.
func (b Balance) AvailableMicros() int64 { return b.LedgerMicros - b.HeldMicros }

type AccountStore interface {
	AccountCreate(ctx context.Context, p *AccountCreateParams) (*Account, error)
	AccountGetByName(ctx context.Context, name string) (*Account, error)
	AccountGetByID(ctx context.Context, id string) (*Account, error)

	APIKeyCreate(ctx context.Context, p *APIKeyCreateParams) (*APIKey, error)
	// PrincipalGetByKeyHash resolves a secret's hash to its key and account;
	// revoked keys are not found.
	PrincipalGetByKeyHash(ctx context.Context, hash string) (*Principal, error)

	LedgerEntryCreate(ctx context.Context, p *LedgerEntryCreateParams) (*LedgerEntry, error)
	// BalanceGet sums the account's ledger, active holds and quotes still
	// open at now.
	BalanceGet(ctx context.Context, accountID string, now time.Time) (*Balance, error)
}
