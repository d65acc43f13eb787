package gvisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/skiffhq/skiff/internal/sandbox"
)

// warmKillWait bounds the wait for a killed sandbox process to be gone.
const warmKillWait = 10 * time.Second

// warmFreezeWait bounds the wait for a sandbox's tasks to freeze; a task
// stuck in the kernel longer makes the caller kill the sandbox instead.
const warmFreezeWait = time.Second

// runWarm runs spec's attempt in the warm sandbox s. handled is false when
// s could not take the attempt before anything ran (its directory could not
// become spec.WorkDir): the caller then starts the attempt cold.
func (d *Driver) runWarm(ctx context.Context, spec *sandbox.Spec, s *warmSlot, begin time.Time) (out *sandbox.Outcome, handled bool, err error) {
	log := d.log.With("attempt_id", spec.AttemptID, "warm_id", s.id)
	err = os.MkdirAll(filepath.Dir(spec.WorkDir), 0o755)
	if err == nil {
		err = os.Rename(s.dir, spec.WorkDir)
	}
	if err != nil {
		log.Warn("warm sandbox not usable; starting cold", "err", err)
		d.later.Go(func() { d.destroyWarm(s) })
		return nil, false, nil
	}
	s.dir = spec.WorkDir
	d.warm.used.Add(1)
	// The sandbox runs this attempt or none: it is destroyed on every path.
	var frozen *freezer
	defer d.later.Go(func() {
		if frozen != nil {
			// Killed tasks of a frozen cgroup v1 die only once thawed.
			if err := s.signalKill(); err != nil {
				log.Warn("kill warm sandbox", "err", err)
			}
			if err := frozen.thaw(); err != nil {
				log.Warn("thaw warm sandbox", "err", err)
			}
			if err := s.waitGone(warmKillWait); err != nil {
				log.Warn("kill warm sandbox", "err", err)
			}
		}
		s.closePidfd()
		d.teardown(context.Background(), s.id, log)
	})
	in := sandbox.ContainerDirs()
	if err := sandbox.FillPayload(spec, in); err != nil {
		return nil, true, fmt.Errorf("gvisor: prepare warm attempt: %w", err)
	}
	host := sandbox.HostDirs(spec)
	bundle := filepath.Join(spec.WorkDir, "bundle")
	process := filepath.Join(bundle, "process.json")
	if err := writeProcess(process, bundleParams{Spec: spec, Host: host, NoFile: d.cfg.NoFile, PidsOverhead: d.cfg.PidsOverhead}); err != nil {
		return nil, true, fmt.Errorf("gvisor: %w", err)
	}
	out, err = d.exec(ctx, spec, s, bundle, process, log)
	if err != nil {
		return nil, true, err
	}
	// Whatever the runner left running stops before its files are read:
	// frozen (killed later, off the attempt's path), or where the freezer
	// is not usable, killed and waited for.
	stopStart := time.Now()
	if f, ferr := d.freezeWarm(s); ferr == nil {
		frozen = f
	} else {
		log.Debug("warm sandbox not frozen; killing it", "err", ferr)
		if err := s.killSandbox(warmKillWait); err != nil {
			return nil, true, fmt.Errorf("gvisor: stop warm sandbox: %w", err)
		}
	}
	out.Stages.Teardown = time.Since(stopStart)
	sandbox.MarkStorage(out, spec)
	if err := sandbox.Collect(out, spec, host); err != nil {
		return nil, true, fmt.Errorf("gvisor: %w", err)
	}
	collected := time.Now()
	out.Stages.Prepare = out.StartedAt.Sub(begin)
	out.Stages.Sandbox = out.EndedAt.Sub(out.StartedAt)
	out.Stages.Collect = collected.Sub(out.EndedAt) - out.Stages.Teardown
	log.Debug("warm attempt", "prepare", out.Stages.Prepare, "sandbox", out.Stages.Sandbox, "kill", out.Stages.Teardown,
		"collect", out.Stages.Collect)
	return out, true, nil
}

// freezeWarm freezes the sandbox's cgroup. On failure nothing is left
// frozen: a freeze that did not complete is undone.
func (d *Driver) freezeWarm(s *warmSlot) (*freezer, error) {
	f, err := findFreezer(d.cgroupPath(s.id))
	if err != nil {
		return nil, err
	}
	if err := f.freeze(warmFreezeWait); err != nil {
		return nil, errors.Join(err, f.thaw())
	}
	return &f, nil
}

// exec starts the runner in the warm sandbox with `runsc exec`, supervises
// it like `runsc run` and returns the outcome without result and artifacts.
func (d *Driver) exec(ctx context.Context, spec *sandbox.Spec, s *warmSlot, bundle, process string, log *slog.Logger) (*sandbox.Outcome, error) {
	logPath := filepath.Join(bundle, "exec.log")
	pidFile := filepath.Join(bundle, "runner.pid")
	return d.supervised(ctx, spec, bundle, "exec", d.runsc.execArgs(process, logPath, pidFile, s.id), logPath, log,
		func(exited <-chan struct{}, abandon context.CancelFunc) sandbox.Stopper {
			return &warmStopper{d: d, s: s, pidFile: pidFile, exited: exited, abandon: abandon}
		})
}

// warmStopper signals a warm sandbox's runner, which is not the sandbox's
// init.
type warmStopper struct {
	d       *Driver
	s       *warmSlot
	exited  <-chan struct{}
	abandon context.CancelFunc
	pidFile string // the runner's pid in the sandbox (runsc exec --internal-pid-file)
}

// Signal sends sig to the runner by its pid inside the sandbox, which
// runsc exec writes once it has started it.
func (w *warmStopper) Signal(ctx context.Context, sig syscall.Signal) error {
	deadline := time.Now().Add(signalRetry)
	for {
		err := w.signal(ctx, sig)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-w.exited:
			return nil // nothing left to signal
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (w *warmStopper) signal(ctx context.Context, sig syscall.Signal) error {
	b, err := os.ReadFile(w.pidFile)
	if err != nil {
		return fmt.Errorf("runner pid: %w", err)
	}
	pid := strings.TrimSpace(string(b))
	if _, err := strconv.Atoi(pid); err != nil {
		return fmt.Errorf("runner pid %q: %w", pid, err)
	}
	return w.d.runsc.killPid(ctx, w.s.id, pid, sig)
}

func (w *warmStopper) Abandon(context.Context) {
	w.abandon()
	if err := w.s.killSandbox(warmKillWait); err != nil && !errors.Is(err, syscall.ESRCH) {
		w.d.log.Warn("kill warm sandbox after abandon", "warm_id", w.s.id, "err", err)
	}
}
