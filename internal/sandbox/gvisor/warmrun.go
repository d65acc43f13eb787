package gvisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/skiffhq/skiff/internal/sandbox"
)

// warmKillWait bounds the wait for a warm sandbox's `runsc run` to exit
// once its container is deleted.
const warmKillWait = 10 * time.Second

// runWarm runs spec's attempt in the warm sandbox s. handled is false when
// s could not take the attempt before anything ran (its directory could not
// become spec.WorkDir, the command does not fit the launcher): the caller
// then starts the attempt cold.
func (d *Driver) runWarm(ctx context.Context, spec *sandbox.Spec, s *warmSlot, begin time.Time) (out *sandbox.Outcome, handled bool, err error) {
	log := d.log.With("attempt_id", spec.AttemptID, "warm_id", s.id)
	// The pool refills when the attempt ends, or warmRefillDelay after its
	// start if it runs longer: a sandbox booting beside the runner's start
	// takes the CPU it starts on (on 2 cores, about 4 ms of a 48 ms warm
	// start; docs/bench.md).
	refill := time.AfterFunc(warmRefillDelay, func() { d.refillWarm(s.key) })
	defer func() {
		if refill.Stop() {
			d.refillWarm(s.key)
		}
	}()
	in := sandbox.ContainerDirs()
	cwd := spec.Cwd
	if cwd == "" {
		cwd = "/"
	}
	msg, err := launchMessage(spec.Args[0], spec.Args, sandbox.Environ(spec, in), cwd)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(spec.WorkDir), 0o755)
	}
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
	// The sandbox runs this attempt or none: it ends on every path, off
	// the attempt's path. Its output reaches the attempt's writers only
	// until Run returns.
	var copied <-chan struct{}
	defer func() {
		if copied != nil {
			s.drain(copied, 0, log)
		}
		clean := out != nil && exitedCleanly(out)
		d.later.Go(func() { s.end(d, clean, log) })
	}()
	if err := sandbox.FillPayload(spec, in); err != nil {
		return nil, true, fmt.Errorf("gvisor: prepare warm attempt: %w", err)
	}
	host := sandbox.HostDirs(spec)

	copied = s.copyOutput(spec.Stdout, spec.Stderr)
	started := time.Now()
	if err := s.hand(msg); err != nil {
		return nil, true, fmt.Errorf("gvisor: hand the attempt to the warm sandbox: %w", err)
	}
	out, err = d.supervise(ctx, spec, "run", started, s.run, s.logPath, log, &stopper{d: d, id: s.id, exited: s.run.exited, abandon: s.kill})
	if err != nil {
		return nil, true, err
	}
	// The sandbox is gone with its runner (`runsc run` exits after it):
	// nothing can write the output pipes or the result any more, unless
	// runsc was abandoned.
	s.drain(copied, d.cfg.WaitDelay, log)
	if ferr := launchFailure(s.report(d.cfg.WaitDelay), spec.Args[0], cwd); ferr != nil {
		// As a cold start whose runner cannot be loaded: runsc's exit
		// status and its error, which the user also sees on stderr.
		out.ExitCode, out.SandboxError, out.StartFailed = 128, ferr.Error(), true
		if spec.Stderr != nil {
			fmt.Fprintln(spec.Stderr, ferr)
		}
	}
	sandbox.MarkStorage(out, spec)
	if err := sandbox.Collect(out, spec, host); err != nil {
		return nil, true, fmt.Errorf("gvisor: %w", err)
	}
	collected := time.Now()
	out.Stages.Prepare = out.StartedAt.Sub(begin)
	out.Stages.Sandbox = out.EndedAt.Sub(out.StartedAt)
	out.Stages.Collect = collected.Sub(out.EndedAt)
	log.Debug("warm attempt", "prepare", out.Stages.Prepare, "sandbox", out.Stages.Sandbox, "collect", out.Stages.Collect)
	return out, true, nil
}
