package agent

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Deadlines of one artifact input's fetch: a controller (or an external
// URL behind it) that sends nothing for InputIdleTimeout, or has not
// finished in InputFetchTimeout, fails the attempt's start instead of
// holding its slot.
const (
	InputIdleTimeout  = 2 * time.Minute
	InputFetchTimeout = 6 * time.Hour
)

// errTooLong is what a bounded writer answers past its declared size.
type errTooLong struct {
	what  string
	limit int64
}

func (e *errTooLong) Error() string {
	return fmt.Sprintf("%s sent more than its declared %d bytes; the fetch was stopped there", e.what, e.limit)
}

// boundedFetch runs fetch with a writer that refuses bytes past limit
// (when limit >= 0) and a context that ends when no byte was written for
// idle, or after total: a download stops at its declared size and cannot
// hang for ever.
func boundedFetch(ctx context.Context, what string, w io.Writer, limit int64, idle, total time.Duration,
	fetch func(ctx context.Context, w io.Writer) error) error {
	ctx, cancelTotal := context.WithTimeoutCause(ctx, total, fmt.Errorf("%s was not fetched within %s", what, total))
	defer cancelTotal()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := time.AfterFunc(idle, func() { cancel(fmt.Errorf("%s: nothing received for %s", what, idle)) })
	defer timer.Stop()
	bw := &boundedWriter{w: w, left: limit, limit: limit, what: what, idle: timer, idleFor: idle}
	err := fetch(ctx, bw)
	if bw.over != nil {
		return bw.over
	}
	if err != nil && context.Cause(ctx) != nil && ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", context.Cause(ctx), err)
	}
	return err
}

type boundedWriter struct {
	w           io.Writer
	left, limit int64 // left < 0: no limit
	what        string
	idle        *time.Timer
	idleFor     time.Duration
	over        error
}

func (b *boundedWriter) Write(p []byte) (int, error) {
	if b.limit >= 0 && int64(len(p)) > b.left {
		b.over = &errTooLong{what: b.what, limit: b.limit}
		return 0, b.over
	}
	n, err := b.w.Write(p)
	if b.limit >= 0 {
		b.left -= int64(n)
	}
	if n > 0 {
		b.idle.Reset(b.idleFor)
	}
	return n, err
}
