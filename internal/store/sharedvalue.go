package store

import (
	"context"
	"time"
)

// SharedValue is a value one controller writes for all the others on the
// database to read, such as the price feed's last good rate table.
type SharedValue struct {
	Name      string
	Value     []byte
	UpdatedAt time.Time // the writer's clock
}

// SharedValueStore keeps shared values (docs/scaling.md).
type SharedValueStore interface {
	// SharedValuePut stores value under name as of at, unless the stored
	// value is newer than at (then it does nothing): a writer that lost its
	// duty mid-way cannot roll the value back.
	SharedValuePut(ctx context.Context, name string, value []byte, at time.Time) error
	// SharedValueGet is the value under name; ErrNotFound when none.
	SharedValueGet(ctx context.Context, name string) (*SharedValue, error)
}
