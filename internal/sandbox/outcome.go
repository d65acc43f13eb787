package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// ExitSIGKILL is what a runner killed by SIGKILL exits with, whether the
// kernel's OOM killer, the runner itself or the driver sent it.
const ExitSIGKILL = 128 + int(syscall.SIGKILL)

// NewOutcome is the outcome of a run that exited with code, stopped (or not)
// for reason. An exit of 137 that the driver did not cause is taken for an
// OOM kill: under gVisor the sandbox's memory cgroup is the usual sender.
func NewOutcome(code int, reason StopReason, started, ended time.Time) *Outcome {
	return &Outcome{
		ExitCode:  code,
		TimedOut:  reason == StopTimeout,
		Killed:    reason == StopCancel,
		OOMKilled: reason == StopNone && code == ExitSIGKILL,
		StartedAt: started,
		EndedAt:   ended,
	}
}

// ExitCode turns the result of exec.Cmd.Wait into a shell-style exit code
// (128+N for death by signal N). exec.ErrWaitDelay (the process exited but a
// grandchild kept its output open) still yields the process's code.
func ExitCode(ps *os.ProcessState, waitErr error) (int, error) {
	if ps == nil {
		return 0, fmt.Errorf("wait: %w", waitErr)
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return 0, fmt.Errorf("wait: %w", waitErr)
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return ps.ExitCode(), nil
}
