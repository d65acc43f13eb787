package sandbox

import (
	"context"
	"log/slog"
	"syscall"
	"time"
)

// StopReason says why a driver stopped a runner, if it did.
type StopReason int

const (
	// StopNone: the runner exited on its own.
	StopNone StopReason = iota
	// StopTimeout: Spec.Timeout expired.
	StopTimeout
	// StopCancel: the caller's context was cancelled.
	StopCancel
)

func (r StopReason) String() string {
	switch r {
	case StopTimeout:
		return "timeout"
	case StopCancel:
		return "cancel"
	default:
		return "none"
	}
}

// Stopper is how Supervise stops one running attempt.
type Stopper interface {
	// Signal delivers sig to the runner. Errors are logged, not fatal: the
	// next step of the escalation follows regardless.
	Signal(ctx context.Context, sig syscall.Signal) error
	// Abandon is the last resort when the runner has outlived SIGKILL: it
	// kills whatever the driver itself started, so that exited closes.
	Abandon(ctx context.Context)
}

// Escalation configures Supervise.
type Escalation struct {
	// Timeout is Spec.Timeout; 0 means none.
	Timeout time.Duration
	// Grace is how long SIGTERM is given before SIGKILL.
	Grace time.Duration
	// KillWait is how long SIGKILL is given before Abandon.
	KillWait time.Duration
	Logger   *slog.Logger
}

// Supervise blocks until exited is closed. If the timeout expires or ctx is
// cancelled first, it stops the runner: SIGTERM, Grace, SIGKILL, KillWait,
// Abandon; it still waits for exited before returning why it stopped it.
// The reason is decided before the first signal, so an exit caused by our
// signal is never mistaken for the runner's own (137 looks like an OOM).
func Supervise(ctx context.Context, exited <-chan struct{}, esc Escalation, st Stopper) StopReason {
	var timeout <-chan time.Time
	if esc.Timeout > 0 {
		t := time.NewTimer(esc.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var reason StopReason
	select {
	case <-exited:
		return StopNone
	case <-timeout:
		reason = StopTimeout
	case <-ctx.Done():
		reason = StopCancel
	}
	log := esc.Logger.With("reason", reason.String())
	// The signals must go out even though ctx may be what was cancelled.
	sigCtx := context.WithoutCancel(ctx)
	log.Info("stopping runner", "signal", "SIGTERM")
	if err := st.Signal(sigCtx, syscall.SIGTERM); err != nil {
		log.Warn("SIGTERM failed", "err", err)
	}
	if waitFor(exited, esc.Grace) {
		return reason
	}
	log.Info("stopping runner", "signal", "SIGKILL")
	if err := st.Signal(sigCtx, syscall.SIGKILL); err != nil {
		log.Warn("SIGKILL failed", "err", err)
	}
	if waitFor(exited, esc.KillWait) {
		return reason
	}
	log.Error("runner outlived SIGKILL; abandoning it", "kill_wait", esc.KillWait)
	st.Abandon(sigCtx)
	<-exited
	return reason
}

func waitFor(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}
