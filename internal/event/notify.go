package event

import (
	"context"

	"github.com/skiffhq/skiff/internal/store"
)

// NotifyingStore wraps a store so that every write that may have committed
// events wakes the broker once it returns: a transaction, a job admission
// and a lone event. Give it to the services that write events; the broker
// then reads the feed without waiting for its poll.
func NotifyingStore(s store.Store, b *Broker) store.Store {
	return &notifying{Store: s, b: b}
}

type notifying struct {
	store.Store
	b *Broker
}

func (n *notifying) InTx(ctx context.Context, fn func(q store.Querier) error) error {
	err := n.Store.InTx(ctx, fn)
	n.b.Wake()
	return err
}

func (n *notifying) InGroupTx(ctx context.Context, fn func(q store.Querier) error) error {
	err := n.Store.InGroupTx(ctx, fn)
	n.b.Wake()
	return err
}

func (n *notifying) JobCreate(ctx context.Context, p *store.JobCreateParams) (*store.Job, error) {
	j, err := n.Store.JobCreate(ctx, p)
	n.b.Wake()
	return j, err
}

func (n *notifying) JobEventCreate(ctx context.Context, e *store.JobEvent) error {
	err := n.Store.JobEventCreate(ctx, e)
	n.b.Wake()
	return err
}
