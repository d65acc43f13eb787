// Package store is the storage seam: one interface, implemented by the SQLite
// and PostgreSQL engines under store/sqlite and store/postgres, both held to
// the conformance suite in store/storetest. Domain packages depend on this
// package only, never on an engine.
//
// Methods are named Noun+Verb and take a params struct when they need more
// than an id. Times are UTC and money is an integer count of micro-USD.
package store

import (
	"context"
	"errors"
)

// ErrNotFound is returned when a row does not exist (or is not visible to the
// account asking).
var ErrNotFound = errors.New("store: not found")

// ErrConflict is returned when a unique constraint or a guarded update refuses
// the change.
var ErrConflict = errors.New("store: conflict")

// Store is everything the service keeps.
type Store interface {
	Querier
	// InTx runs fn in one transaction: everything fn does commits together
	// or not at all. fn must use the Querier it is given.
	InTx(ctx context.Context, fn func(q Querier) error) error
	// InGroupTx is InTx for short, independent writes that arrive in
	// bursts (job admissions): where the engine has a single writer
	// (SQLite), fns queued behind one another share one transaction, each
	// in its own savepoint, so that one commit serves them all. fn's
	// changes are still all or nothing, and InGroupTx returns only once
	// they are committed (or refused). fn runs on another goroutine and
	// must not depend on its caller's cancellation mid-way: give it a
	// context that is not cancelled. Elsewhere it is InTx.
	InGroupTx(ctx context.Context, fn func(q Querier) error) error
	// Ping checks that the store answers.
	Ping(ctx context.Context) error
	// Engine names the engine ("sqlite" or "postgres").
	Engine() string
	Close() error
}

// Querier is the set of operations, usable inside or outside a transaction.
type Querier interface {
	AccountStore
	ProjectStore
	PushStore
	RuntimeStore
	QuoteStore
	BillingStore
	JobStore
	JobEditStore
	TaskPageStore
	WalletStore
	PaymentStore
	ContactStore
	ArtifactStore
	RetentionStore
	ExpiryStore
	LeaseStore
	HostStore
	SharedValueStore
	ImageStore
}
