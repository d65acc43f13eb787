package store

import (
	"context"
	"time"
)

// Lease is a named claim held by one holder until it expires: who runs a
// singleton duty, or which controller last heard from a host.
type Lease struct {
	Name   string
	Holder string
	// Epoch counts the changes of holder: each tenure has its own.
	Epoch      int64
	AcquiredAt time.Time // start of the current holder's tenure
	ExpiresAt  time.Time
}

// Live reports whether the lease is held at now.
func (l *Lease) Live(now time.Time) bool { return l.ExpiresAt.After(now) }

// LeaseParams name a lease, its would-be holder, the holder's now and the
// expiry it asks for.
type LeaseParams struct {
	Name   string
	Holder string
	Now    time.Time
	Until  time.Time
}

// LeaseStore keeps leases (docs/scaling.md). Times are the holders' clocks:
// controllers on one database are expected to agree within a second.
type LeaseStore interface {
	// LeaseAcquire takes the lease when it is free, expired at Now or
	// already Holder's, until Until, and returns it; ErrConflict when
	// another holder's lease is live.
	LeaseAcquire(ctx context.Context, p *LeaseParams) (*Lease, error)
	// LeaseForce takes the lease until Until whoever holds it.
	LeaseForce(ctx context.Context, p *LeaseParams) (*Lease, error)
	// LeaseRenew extends Holder's live lease to Until; ErrConflict when
	// Holder does not hold it live at Now (it expired, or changed hands).
	LeaseRenew(ctx context.Context, p *LeaseParams) (*Lease, error)
	// LeaseRelease ends Holder's lease at once; releasing a lease held by
	// someone else, or none, does nothing.
	LeaseRelease(ctx context.Context, name, holder string) error
	// LeaseList lists the leases, live or expired, whose name starts with
	// prefix, by name.
	LeaseList(ctx context.Context, prefix string) ([]*Lease, error)
}
