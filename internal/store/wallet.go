package store

import (
	"context"
	"time"
)

// Wallet challenge statuses.
const (
	ChallengeOpen = "open"
	ChallengeUsed = "used"
)

// WalletChallenge is a message a wallet signs to sign in (spec 2.2).
type WalletChallenge struct {
	ID        string
	Chain     string
	Address   string // lower-case 0x...
	Nonce     string
	Message   string
	Status    string
	ExpiresAt time.Time
	CreatedAt time.Time
	UsedAt    *time.Time
}

// Wallet ties a (chain, address) pair to its account.
type Wallet struct {
	Chain     string
	Address   string
	AccountID string
	CreatedAt time.Time
}

// WalletSession is a signed-in wallet's bearer session (fls_...).
type WalletSession struct {
	ID         string
	AccountID  string
	Chain      string
	Address    string
	SecretHash string
	ExpiresAt  time.Time
	CreatedAt  time.Time
}

type WalletChallengeUseParams struct {
	ID  string
	Now time.Time
}

type WalletStore interface {
	WalletChallengeCreate(ctx context.Context, c *WalletChallenge) error
	WalletChallengeGet(ctx context.Context, id string) (*WalletChallenge, error)
	// WalletChallengeUse marks an open challenge used; ErrConflict when it
	// was used already.
	WalletChallengeUse(ctx context.Context, p *WalletChallengeUseParams) error
	WalletGet(ctx context.Context, chain, address string) (*Wallet, error)
	// WalletCreate records a wallet; ErrConflict when it exists.
	WalletCreate(ctx context.Context, w *Wallet) error
	WalletSessionCreate(ctx context.Context, s *WalletSession) error
	// WalletSessionRevoke deletes the session whose secret hashes to hash
	// (a logout); ErrNotFound when there is none.
	WalletSessionRevoke(ctx context.Context, hash string) error
	// PrincipalGetBySessionHash resolves a session secret's hash to a
	// principal acting as a member of the wallet's account; sessions
	// expired at now are not found.
	PrincipalGetBySessionHash(ctx context.Context, hash string, now time.Time) (*Principal, error)
}

// Settlement statuses.
const (
	SettlementPending = "pending"
	SettlementSettled = "settled"
	SettlementFailed  = "failed"
)

// Settlement is one attempt to settle a quote's payment.
type Settlement struct {
	ID              string
	QuoteID         string
	AccountID       string
	Protocol        string // x402 or mpp
	Status          string
	Payer           string // lower-case address
	Nonce           string // lower-case 0x bytes32
	CredentialKey   string // hash identifying the exact credential
	Request         []byte // facilitator request JSON
	Response        []byte // facilitator settle answer JSON
	TransactionHash string
	LedgerEntryID   string
	// SentAt is when the settlement was first sent to the facilitator's
	// /settle; nil while it never was. Only a settlement sent before may
	// be looked up on the chain (a lost answer), never a fresh one.
	SentAt    *time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
}

// SettlementFinishParams ends a pending settlement.
type SettlementFinishParams struct {
	ID              string
	Status          string // settled or failed
	Response        []byte
	TransactionHash string
	LedgerEntryID   string
	Now             time.Time
}

// QuotePayParams marks an open quote paid.
type QuotePayParams struct {
	ID  string
	Now time.Time
}

type PaymentStore interface {
	// QuoteGetByID finds a quote whatever its account (a credential names
	// the quote, not the account).
	QuoteGetByID(ctx context.Context, id string) (*Quote, error)
	// QuotePay marks an open quote paid; ErrConflict when it is not open.
	QuotePay(ctx context.Context, p *QuotePayParams) (*Quote, error)
	// SettlementCreate records an intent; ErrConflict when the quote or the
	// authorization (payer, nonce) has a live (pending or settled) one.
	SettlementCreate(ctx context.Context, s *Settlement) error
	// SettlementGetLive is the quote's pending or settled settlement;
	// ErrNotFound when none.
	SettlementGetLive(ctx context.Context, quoteID string) (*Settlement, error)
	// SettlementFinish ends a pending settlement (or turns a failed one
	// settled: the facilitator's success wins); ErrConflict otherwise.
	SettlementFinish(ctx context.Context, p *SettlementFinishParams) (*Settlement, error)
	// SettlementMarkSent records that a settlement is being sent to the
	// facilitator's /settle (the first time only: a later call keeps the
	// first time).
	SettlementMarkSent(ctx context.Context, id string, now time.Time) error
	// SettlementListPending lists pending settlements, oldest first.
	SettlementListPending(ctx context.Context, limit int) ([]*Settlement, error)
}
