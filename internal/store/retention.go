package store

import (
	"context"
	"time"
)

// DefaultJobRetention is how long terminal jobs are kept (spec section 8).
const DefaultJobRetention = 30 * 24 * time.Hour

// RetentionStore removes what has outlived its retention.
type RetentionStore interface {
	// JobPurgeFinishedBefore deletes up to limit terminal jobs that
	// finished before t, oldest first, with their tasks, attempts, events,
	// tags, dependencies and artifact references (the artifacts stay, one
	// reference fewer). It returns how many jobs it deleted.
	JobPurgeFinishedBefore(ctx context.Context, t time.Time, limit int) (int, error)
}
