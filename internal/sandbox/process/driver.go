// Package process runs task attempts as plain host processes. It is NOT a
// sandbox: the runner has the agent's user, filesystem and network. It
// exists so controller logic can be tested quickly, and refuses to run
// unless the caller says, in so many words, that it accepts that.
//
// It keeps the runner protocol of the real driver: the same SKIFF_*
// variables (pointing at host paths), result and artifact collection,
// timeouts and cancellation. The image root filesystem only locates the
// executable: Args[0] is run as RootFS+Args[0], in RootFS+Cwd when that
// directory exists and in the scratch directory otherwise.
package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/skiffhq/skiff/internal/sandbox"
)

var _ sandbox.Driver = (*Driver)(nil)

// ErrUnisolated is returned by New unless Config.AllowUnisolated is set.
var ErrUnisolated = errors.New("process driver: refusing to run tasks without isolation; set AllowUnisolated only for trusted development and tests")

// Defaults filled in by New.
const (
	DefaultGrace     = 5 * time.Second
	DefaultKillWait  = 5 * time.Second
	DefaultWaitDelay = 5 * time.Second
)

// Config configures the process driver.
type Config struct {
	// AllowUnisolated must be true. It acknowledges that runners execute
	// unsandboxed, as the agent's own user; never set it from a default.
	AllowUnisolated bool
	// Grace is the time between SIGTERM and SIGKILL when stopping a runner.
	Grace time.Duration
	// KillWait is how long SIGKILL may take before the driver stops waiting
	// on the process group.
	KillWait time.Duration
	// WaitDelay bounds how long output pipes may stay open after the runner
	// exits (a background child holding them).
	WaitDelay time.Duration
	Logger    *slog.Logger
}

// Driver is the unisolated process driver.
type Driver struct {
	cfg Config
	log *slog.Logger
}

// New returns a driver, or ErrUnisolated unless cfg.AllowUnisolated.
func New(cfg Config) (*Driver, error) {
	if !cfg.AllowUnisolated {
		return nil, ErrUnisolated
	}
	if cfg.Grace < 0 || cfg.KillWait < 0 || cfg.WaitDelay < 0 {
		return nil, errors.New("process driver: durations must not be negative")
	}
	if cfg.Grace == 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.KillWait == 0 {
		cfg.KillWait = DefaultKillWait
	}
	if cfg.WaitDelay == 0 {
		cfg.WaitDelay = DefaultWaitDelay
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	log := cfg.Logger.With("driver", "process")
	log.Warn("process driver enabled: task runners are NOT isolated")
	return &Driver{cfg: cfg, log: log}, nil
}

// Name implements sandbox.Driver.
func (d *Driver) Name() string { return "process" }

// Cleanup implements sandbox.Driver. A process group outlives its agent
// only if the agent was killed mid-run; there is no state to find it by,
// so there is nothing to clean.
func (d *Driver) Cleanup(context.Context) error { return nil }

// Run implements sandbox.Driver.
func (d *Driver) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Outcome, error) {
	if notFound := sandbox.ResolveCommand(&spec); notFound != nil {
		return notFound, nil
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.GPU != nil {
		return nil, errors.New("process driver: cannot attach GPUs (GPU tasks need the gvisor driver)")
	}
	if len(spec.Mounts) > 0 {
		// Without a mount namespace a data source or cache mount cannot
		// appear at its path; running without it would be worse.
		return nil, fmt.Errorf("process driver: cannot mount %s (data sources and cache mounts need the gvisor driver)", spec.Mounts[0].Destination)
	}
	if spec.Network {
		d.log.Debug("network requested; the process driver always has the host's")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("process driver: not started: %w", err)
	}
	host, err := sandbox.Prepare(&spec, nil, sandbox.HostDirs(&spec))
	if err != nil {
		return nil, fmt.Errorf("process driver: prepare attempt: %w", err)
	}
	log := d.log.With("attempt_id", spec.AttemptID)

	procCtx, abandon := context.WithCancel(context.WithoutCancel(ctx))
	defer abandon()
	exe := filepath.Join(spec.RootFS, filepath.FromSlash(spec.Args[0]))
	cmd := exec.CommandContext(procCtx, exe, spec.Args[1:]...)
	cmd.Args[0] = spec.Args[0]
	cmd.Dir = workingDir(&spec, host)
	cmd.Env = sandbox.Environ(&spec, host)
	cmd.Stdout, cmd.Stderr = spec.Stdout, spec.Stderr // nil is /dev/null
	// The runner and its children form one process group, killed whole.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = d.cfg.WaitDelay

	started := time.Now()
	if err := cmd.Start(); err != nil {
		// A runner that cannot be executed is the runner's failure, as in
		// the gvisor driver (runsc exits 128), not the host's.
		o := sandbox.NewOutcome(128, sandbox.StopNone, started, time.Now())
		o.SandboxError = err.Error()
		o.StartFailed = true
		if spec.Stderr != nil {
			fmt.Fprintf(spec.Stderr, "process driver: %v\n", err)
		}
		if err := sandbox.Collect(o, &spec, host); err != nil {
			return nil, fmt.Errorf("process driver: %w", err)
		}
		return o, nil
	}
	pgid := cmd.Process.Pid
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	reason := sandbox.Supervise(ctx, exited, sandbox.Escalation{
		Timeout: spec.Timeout, Grace: d.cfg.Grace, KillWait: d.cfg.KillWait, Logger: log,
	}, groupStopper{pgid: pgid, abandon: abandon})
	ended := time.Now()
	// Children left in the background die with the attempt.
	if err := killGroup(pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		log.Warn("kill leftover process group", "err", err)
	}

	code, err := sandbox.ExitCode(cmd.ProcessState, waitErr)
	if err != nil {
		return nil, fmt.Errorf("process driver: %w", err)
	}
	out := sandbox.NewOutcome(code, reason, started, ended)
	if err := sandbox.Collect(out, &spec, host); err != nil {
		return nil, fmt.Errorf("process driver: %w", err)
	}
	return out, nil
}

// workingDir maps spec.Cwd into RootFS when it exists there.
func workingDir(spec *sandbox.Spec, host sandbox.Dirs) string {
	if spec.Cwd != "" {
		dir := filepath.Join(spec.RootFS, filepath.FromSlash(spec.Cwd))
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			return dir
		}
	}
	return host.Scratch
}

func killGroup(pgid int, sig syscall.Signal) error { return syscall.Kill(-pgid, sig) }

// groupStopper signals the runner's process group.
type groupStopper struct {
	pgid    int
	abandon context.CancelFunc
}

func (g groupStopper) Signal(_ context.Context, sig syscall.Signal) error {
	return killGroup(g.pgid, sig)
}

func (g groupStopper) Abandon(context.Context) { g.abandon() }
