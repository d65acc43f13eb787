package store

import (
	"context"
	"time"
)

// Hold statuses (spec 2.8).
const (
	HoldActive            = "active"
	HoldReleased          = "released"
	HoldCaptured          = "captured"
	HoldPartiallyCaptured = "partially_captured"
	HoldExpired           = "expired"
)

// Hold reserves an account's money for a job until the job ends and the
// hold is captured: for the amount the job used, the rest released (the
// card-payment words; "settle" is kept for x402 payments, Settlement*).
type Hold struct {
	ID             string
	AccountID      string
	JobID          string
	Status         string
	AmountMicros   int64
	CapturedMicros int64
	CreatedAt      time.Time
	UpdatedAt      time.Time
	// CapturedAt is when the hold was captured (or released whole). Its
	// column is still holds.settled_at, the word before the rename: a
	// column is not renamed without a migration.
	CapturedAt *time.Time
}

type HoldCreateParams struct {
	ID, AccountID, JobID string
	AmountMicros         int64
	Now                  time.Time
}

// HoldCaptureParams ends an active hold: Status is released, captured or
// partially_captured, CapturedMicros at most the hold's amount.
type HoldCaptureParams struct {
	ID             string
	Status         string
	CapturedMicros int64
	Now            time.Time
}

// HoldGrowParams raises an active hold to AmountMicros (a requirements
// edit that re-priced its job, PATCH /jobs/:id/requirements). Guarded: the
// hold must still be active and still hold PrevAmountMicros, what the
// caller read in its transaction, and AmountMicros must be more.
type HoldGrowParams struct {
	ID               string
	PrevAmountMicros int64
	AmountMicros     int64
	Now              time.Time
}

// Paged list filters. An empty filter value means any; Limit > 0.
type (
	LedgerListParams struct {
		AccountID, EntryType string
		Limit, Offset        int
	}
	HoldListParams struct {
		AccountID, Status, JobID string
		Limit, Offset            int
	}
	// QuoteListParams: a quote open past its expiry counts as expired at Now.
	QuoteListParams struct {
		AccountID, Status, QuoteType string
		Limit, Offset                int
		Now                          time.Time
	}
)

// JobMeter is what a job's attempts were metered so far.
type JobMeter struct {
	BilledSeconds int64
	CostMicros    int64
}

// IdempotencyKey is a remembered Idempotency-Key of an account.
type IdempotencyKey struct {
	AccountID   string
	Key         string
	RequestHash string
	Response    string
	CreatedAt   time.Time
}

// BillingStore keeps holds, metering and idempotency keys; ledger entries
// and quotes are in AccountStore and QuoteStore.
type BillingStore interface {
	// AccountLock holds the account's row lock (PostgreSQL) until the
	// transaction ends, so that concurrent reservations against one
	// balance are decided one after the other. SQLite serialises writing
	// transactions already. ErrNotFound when there is no account.
	AccountLock(ctx context.Context, accountID string) error
	HoldCreate(ctx context.Context, p *HoldCreateParams) (*Hold, error)
	// HoldReserve creates an active hold only when the account's available
	// balance (ledger minus held) covers p.AmountMicros, deciding that and
	// writing the hold in one statement: concurrent reservations against
	// one balance never together exceed it, and no lock is taken before
	// it. On PostgreSQL it locks the account row until the transaction
	// ends, so call it last, just before the commit. It returns the hold
	// (nil when the balance is short) and the balance available before
	// it; ErrNotFound when there is no account.
	HoldReserve(ctx context.Context, p *HoldCreateParams) (*Hold, int64, error)
	// JobBillingSet replaces a job's stored billing (its admission, once
	// the reservation has said what was available); ErrNotFound when there
	// is no such job.
	JobBillingSet(ctx context.Context, jobID string, billing []byte) error
	// HoldGetByJob is a job's hold; ErrNotFound when it has none.
	HoldGetByJob(ctx context.Context, jobID string) (*Hold, error)
	// HoldCapture ends an active hold; ErrConflict when it is not active
	// (captured already).
	HoldCapture(ctx context.Context, p *HoldCaptureParams) (*Hold, error)
	// HoldGrow raises an active hold's amount; ErrConflict when it is not
	// active, no longer holds p.PrevAmountMicros, or p.AmountMicros is not
	// more; ErrNotFound when there is no such hold. Call it after
	// AccountLock and a balance check, as HoldCreate.
	HoldGrow(ctx context.Context, p *HoldGrowParams) (*Hold, error)
	HoldList(ctx context.Context, p *HoldListParams) ([]*Hold, int, error)
	// LedgerList pages an account's entries, newest first.
	LedgerList(ctx context.Context, p *LedgerListParams) ([]*LedgerEntry, int, error)
	// QuoteList pages an account's quotes, newest first.
	QuoteList(ctx context.Context, p *QuoteListParams) ([]*Quote, int, error)

	// AttemptSetCost meters an ended attempt (one cancelled while it ran).
	AttemptSetCost(ctx context.Context, attemptID string, billedSeconds, costMicros int64) error
	// JobChargeTotal sums the metered cost of a job's attempts.
	JobChargeTotal(ctx context.Context, jobID string) (int64, error)
	// JobMeterTotal sums the billed seconds and metered cost of a job's
	// attempts, for the job's cost view.
	JobMeterTotal(ctx context.Context, jobID string) (*JobMeter, error)

	// IdempotencyKeyPut remembers a key; ErrConflict when the account has
	// it already (read it with IdempotencyKeyGet).
	IdempotencyKeyPut(ctx context.Context, k *IdempotencyKey) error
	IdempotencyKeyGet(ctx context.Context, accountID, key string) (*IdempotencyKey, error)
}
