// Package gvisor runs task attempts in gVisor sandboxes with `runsc run`,
// one sandbox per attempt, each in its own cgroup with the attempt's limits.
package gvisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/skiffhq/skiff/internal/sandbox"
)

var _ sandbox.Driver = (*Driver)(nil)

// ErrNoEgress is returned by Run for an attempt that asks for a network on
// a driver configured without Egress.
var ErrNoEgress = errors.New("gvisor: attempt needs a network but no egress is configured")

// Driver is the gVisor sandbox driver.
type Driver struct {
	cfg   Config
	runsc runsc
	log   *slog.Logger
	// later tracks teardowns taken off the attempt's critical path;
	// Cleanup waits for them.
	later sync.WaitGroup
	// warm is the pools of pre-started sandboxes (warm.go).
	warm warmState
	// owner holds the claim on the cgroup parent (cgroupowner.go), taken
	// by the first Cleanup and kept open until the process exits.
	ownerMu sync.Mutex
	owner   *os.File
}

// New checks cfg (after filling in defaults) and the host: runsc must be
// there and we must be root, because runsc applies cgroup limits only when
// it runs as root (rootless runsc silently drops them).
func New(cfg Config) (*Driver, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	st, err := os.Stat(cfg.RunscPath)
	if err != nil {
		return nil, fmt.Errorf("gvisor: runsc: %w", err)
	}
	if st.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("gvisor: runsc %s is not executable", cfg.RunscPath)
	}
	if os.Geteuid() != 0 {
		// Rootless runsc would run the task with no CPU or memory limit at
		// all (docs/hosting.md, "Root, and rootless runsc"): refused rather
		// than run beyond the share the owner declared.
		return nil, errors.New("gvisor: must run as root: runsc applies the task's CPU and memory limits only as root, and rootless runsc would run tasks without them (see /docs/hosting, \"Root, and rootless runsc\")")
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("gvisor: create state dir: %w", err)
	}
	return &Driver{cfg: cfg, runsc: newRunsc(cfg), log: cfg.Logger.With("driver", "gvisor")}, nil
}

// Name implements sandbox.Driver.
func (d *Driver) Name() string { return "gvisor" }

// cgroupPath is the attempt's cgroup, relative to each hierarchy's root.
func (d *Driver) cgroupPath(attemptID string) string {
	return "/" + d.cfg.CgroupParent + "/" + attemptID
}

// Run implements sandbox.Driver.
func (d *Driver) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Outcome, error) {
	begin := time.Now()
	if notFound := sandbox.ResolveCommand(&spec); notFound != nil {
		return notFound, nil
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.Network && d.cfg.Egress == nil {
		return nil, ErrNoEgress
	}
	if err := checkGPU(&spec); err != nil {
		return nil, fmt.Errorf("gvisor: %w", err)
	}
	if s := d.takeWarm(&spec); s != nil {
		if out, handled, err := d.runWarm(ctx, &spec, s, begin); handled {
			return out, err
		}
	}
	log := d.log.With("attempt_id", spec.AttemptID)
	host, err := sandbox.Prepare(&spec, &sandbox.Owner{UID: RunnerUID, GID: RunnerGID}, sandbox.ContainerDirs())
	if err != nil {
		return nil, fmt.Errorf("gvisor: prepare attempt: %w", err)
	}

	network, nsPath := "none", ""
	if spec.Network {
		path, release, err := d.cfg.Egress.Acquire(ctx, spec.AttemptID)
		if err != nil {
			return nil, fmt.Errorf("gvisor: acquire network: %w", err)
		}
		defer func() {
			if err := release(context.WithoutCancel(ctx)); err != nil {
				log.Warn("release network", "err", err)
			}
		}()
		network, nsPath = "sandbox", path
	}

	bundle := filepath.Join(spec.WorkDir, "bundle")
	err = writeBundle(bundle, bundleParams{
		Spec:         &spec,
		Host:         host,
		CgroupsPath:  d.cgroupPath(spec.AttemptID),
		NetNSPath:    nsPath,
		NoFile:       d.cfg.NoFile,
		PidsOverhead: d.cfg.PidsOverhead,
	})
	if err != nil {
		return nil, fmt.Errorf("gvisor: %w", err)
	}

	// From the moment `runsc run` starts, a container and a cgroup may exist
	// whatever happens next, so they are torn down on every path: here,
	// unless the run ended cleanly and the teardown was handed to later.
	handedOff := false
	defer func() {
		if !handedOff {
			d.teardown(context.WithoutCancel(ctx), spec.AttemptID, log)
		}
	}()

	out, err := d.run(ctx, &spec, bundle, network, log)
	if err != nil {
		return nil, err
	}
	sandbox.MarkStorage(out, &spec)
	if err := sandbox.Collect(out, &spec, host); err != nil {
		return nil, fmt.Errorf("gvisor: %w", err)
	}
	collected := time.Now()
	out.Stages.Prepare = out.StartedAt.Sub(begin)
	out.Stages.Sandbox = out.EndedAt.Sub(out.StartedAt)
	out.Stages.Collect = collected.Sub(out.EndedAt)
	if exitedCleanly(out) {
		// `runsc run` deleted its container and cgroups as it exited: what
		// is left to check need not delay the outcome. A crash before it
		// runs leaves at most an empty cgroup, which Cleanup removes at the
		// next start.
		handedOff = true
		d.later.Go(func() { d.teardownAfterCleanExit(spec.AttemptID, log) })
		return out, nil
	}
	d.teardown(context.WithoutCancel(ctx), spec.AttemptID, log)
	handedOff = true
	out.Stages.Teardown = time.Since(collected)
	return out, nil
}

// exitedCleanly reports whether runsc ended the sandbox by itself: the
// runner exited without the driver stopping it and runsc reported no error
// of its own. runsc then destroys the sandbox and its container before it
// exits, so nothing of it can still be running.
func exitedCleanly(o *sandbox.Outcome) bool {
	return !o.TimedOut && !o.Killed && o.SandboxError == ""
}

// run starts `runsc run`, supervises it and returns the outcome without the
// result and artifacts.
func (d *Driver) run(ctx context.Context, spec *sandbox.Spec, bundle, network string, log *slog.Logger) (*sandbox.Outcome, error) {
	logPath := filepath.Join(bundle, "runsc.log")
	return d.supervised(ctx, spec, bundle, "run", gpuArgs(spec, d.runsc.runArgs(network, bundle, logPath, spec.AttemptID)), logPath, log,
		func(exited <-chan struct{}, abandon context.CancelFunc) sandbox.Stopper {
			return &stopper{d: d, id: spec.AttemptID, exited: exited, abandon: abandon}
		})
}

// supervised starts `runsc <verb> args...` (a cold start's `runsc run`) and
// supervises it.
func (d *Driver) supervised(ctx context.Context, spec *sandbox.Spec, bundle, verb string, args []string, logPath string,
	log *slog.Logger, stopperFor func(exited <-chan struct{}, abandon context.CancelFunc) sandbox.Stopper) (*sandbox.Outcome, error) {
	// runsc is not tied to ctx: cancellation goes through the SIGTERM/SIGKILL
	// escalation, and only if that fails is the process group killed.
	procCtx, abandon := context.WithCancel(context.WithoutCancel(ctx))
	defer abandon()
	cmd := exec.CommandContext(procCtx, d.cfg.RunscPath, args...)
	// Its own process group, so that abandoning it kills runsc's helpers too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = d.cfg.WaitDelay
	// A nil writer becomes /dev/null; any other is fed from a pipe by a
	// goroutine of exec's, so the runner blocks if the writer stalls.
	cmd.Stdout, cmd.Stderr = spec.Stdout, spec.Stderr
	cmd.Dir = bundle

	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("gvisor: not started: %w", err)
	}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("gvisor: start runsc %s: %w", verb, err)
	}
	log.Debug("sandbox started", "verb", verb, "pid", cmd.Process.Pid)
	w := waitFor(cmd)
	return d.supervise(ctx, spec, verb, started, w, logPath, log, stopperFor(w.exited, abandon))
}

// waited is a started runsc process that a goroutine waits for.
type waited struct {
	cmd     *exec.Cmd
	exited  chan struct{} // closed once cmd.Wait returned
	waitErr error         // cmd.Wait's error, set before exited closes
}

func waitFor(cmd *exec.Cmd) *waited {
	w := &waited{cmd: cmd, exited: make(chan struct{})}
	go func() {
		w.waitErr = w.cmd.Wait()
		close(w.exited)
	}()
	return w
}

// supervise waits for the started runsc process w under the attempt's
// timeout and stop escalation and returns the outcome without the result
// and artifacts, timed from started; logPath is runsc's log, read for the
// reason a sandbox failed.
func (d *Driver) supervise(ctx context.Context, spec *sandbox.Spec, verb string, started time.Time, w *waited, logPath string,
	log *slog.Logger, stop sandbox.Stopper) (*sandbox.Outcome, error) {
	reason := sandbox.Supervise(ctx, w.exited, sandbox.Escalation{
		Timeout:  spec.Timeout,
		Grace:    d.cfg.Grace,
		KillWait: d.cfg.KillWait,
		Logger:   log,
	}, stop)
	ended := time.Now()

	code, err := sandbox.ExitCode(w.cmd.ProcessState, w.waitErr)
	if err != nil {
		return nil, fmt.Errorf("gvisor: runsc %s: %w", verb, err)
	}
	out := sandbox.NewOutcome(code, reason, started, ended)
	if out.SandboxError, err = runscErrors(logPath); err != nil {
		log.Warn("read runsc log", "err", err)
	}
	out.StartFailed = startFailure(out.SandboxError)
	log.Debug("sandbox exited", "verb", verb, "exit_code", code, "stop", reason.String(), "duration", ended.Sub(started))
	return out, nil
}

// teardownAfterCleanExit removes what a clean exit may still leave: a
// container's state (force-deleted only if runsc left some, which saves a
// runsc process per attempt) and empty cgroup directories.
func (d *Driver) teardownAfterCleanExit(id string, log *slog.Logger) {
	if d.hasState(id) {
		log.Debug("container state left after a clean exit; deleting it")
		if err := d.runsc.forceDelete(context.Background(), id); err != nil {
			log.Debug("runsc delete", "err", err)
		}
	}
	if err := removeCgroup(d.cgroupPath(id)); err != nil {
		log.Warn("remove cgroup", "err", err)
	}
}

// hasState reports whether runsc keeps state for container id under its
// root (its state files are named after the container id). When the
// directory cannot be read it says yes, so the caller deletes to be safe.
func (d *Driver) hasState(id string) bool {
	entries, err := os.ReadDir(d.cfg.StateDir)
	if err != nil {
		return true
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), id+"_") || strings.HasPrefix(e.Name(), id+".") || e.Name() == id {
			return true
		}
	}
	return false
}

// teardown force-deletes the container and removes its cgroup. Both are
// no-ops after a clean exit; after a crash or an abandoned run they are
// what stops the sandbox.
func (d *Driver) teardown(ctx context.Context, id string, log *slog.Logger) {
	if err := d.runsc.forceDelete(ctx, id); err != nil {
		log.Debug("runsc delete", "err", err)
	}
	if err := removeCgroup(d.cgroupPath(id)); err != nil {
		log.Warn("remove cgroup", "err", err)
	}
}

// signalRetry is how long a failing `runsc kill` is retried: a stop that
// comes while runsc is still creating the sandbox finds no container yet.
const signalRetry = 3 * time.Second

// stopper signals the runner through runsc.
type stopper struct {
	d       *Driver
	id      string
	exited  <-chan struct{}
	abandon context.CancelFunc
}

func (s *stopper) Signal(ctx context.Context, sig syscall.Signal) error {
	deadline := time.Now().Add(signalRetry)
	for {
		err := s.d.runsc.kill(ctx, s.id, sig)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-s.exited:
			return nil // nothing left to signal
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *stopper) Abandon(ctx context.Context) {
	s.abandon()
	// Killing `runsc run` does not stop the sandbox it started.
	if err := s.d.runsc.forceDelete(ctx, s.id); err != nil {
		s.d.log.Warn("runsc delete after abandon", "attempt_id", s.id, "err", err)
	}
}

// startFailure reports whether runsc's error says the runner itself could
// not be started from the image ("creating process: failed to load /x: no
// such file or directory", "permission denied", "exec format error"), as
// opposed to the sandbox failing. runsc says so only in words; this is the
// one place that reads them.
func startFailure(runscError string) bool {
	for _, p := range []string{"creating process:", "failed to load", "executable file not found", "exec format error"} {
		if strings.Contains(runscError, p) {
			return true
		}
	}
	return false
}
