package duty

import (
	"context"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

// PresenceStore is the part of the store Presence uses.
type PresenceStore interface {
	LeaseForce(ctx context.Context, p *store.LeaseParams) (*store.Lease, error)
	LeaseRelease(ctx context.Context, name, holder string) error
	LeaseList(ctx context.Context, prefix string) ([]*store.Lease, error)
}

// Presence keeps which members (hosts) are alive as leases named
// Prefix+id, held by the controller that last heard from each: the one a
// member talks to now takes its lease whoever held it before.
type Presence struct {
	Store  PresenceStore
	Holder string // this controller
	Prefix string // e.g. "host:"
}

// Mark records id alive from now until until.
func (p *Presence) Mark(ctx context.Context, id string, now, until time.Time) error {
	_, err := p.Store.LeaseForce(ctx, &store.LeaseParams{Name: p.Prefix + id, Holder: p.Holder, Now: now, Until: until})
	return err
}

// Drop records id gone, unless another controller heard from it since.
func (p *Presence) Drop(ctx context.Context, id string) error {
	return p.Store.LeaseRelease(ctx, p.Prefix+id, p.Holder)
}

// Alive lists the members alive at now.
func (p *Presence) Alive(ctx context.Context, now time.Time) (map[string]bool, error) {
	leases, err := p.Store.LeaseList(ctx, p.Prefix)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(leases))
	for _, l := range leases {
		if l.Live(now) {
			out[strings.TrimPrefix(l.Name, p.Prefix)] = true
		}
	}
	return out, nil
}
