package gvisor

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/skiffhq/skiff/internal/sandbox"
)

// The floor of a warm start, outside the driver: `skiff bench` boots a
// bare sandbox whose init is the launcher and times the hand-over of a
// command and the runner's exit, next to `runsc exec` into a running
// sandbox (what warm starts used before the launcher).

// LauncherPath is where a sandbox that boots the launcher binds it; its
// bundle's process is this path alone.
const LauncherPath = launcherPath

// WriteLauncher writes the launcher program to hostPath (executable,
// read-only), for a bundle that binds it at LauncherPath.
func WriteLauncher(hostPath string) error {
	return os.WriteFile(hostPath, launcherELF(), 0o555)
}

// Resident is a sandbox booted with the launcher as its init, waiting for
// one command.
type Resident struct {
	r       *resident
	logPath string
}

// BootResident runs `runsc run` of bundle as container id under runsc's
// --root stateDir, and returns once the launcher waits for its command.
// The bundle binds the launcher (WriteLauncher) at LauncherPath and runs it.
func BootResident(runscPath, stateDir, bundle, id string) (*Resident, error) {
	rs := newRunsc(Config{RunscPath: runscPath, StateDir: stateDir, Platform: DefaultPlatform})
	logPath := filepath.Join(bundle, id+".log")
	r, err := startResident(runscPath, rs.warmRunArgs(bundle, logPath, id), bundle)
	if err != nil {
		return nil, err
	}
	res := &Resident{r: r, logPath: logPath}
	if err := r.waitReady(runscTimeout); err != nil {
		msg, _ := runscErrors(logPath)
		res.Close()
		return nil, fmt.Errorf("boot resident sandbox: %w: %s", err, msg)
	}
	return res, nil
}

// Launch hands the launcher its command and waits until `runsc run` exits
// with the runner's status: elapsed is that span. The output is
// discarded.
func (res *Resident) Launch(path string, argv, env []string, cwd string) (code int, elapsed time.Duration, err error) {
	msg, err := launchMessage(path, argv, env, cwd)
	if err != nil {
		return 0, 0, err
	}
	copied := res.r.copyOutput(nil, nil)
	start := time.Now()
	if err := res.r.hand(msg); err != nil {
		return 0, 0, fmt.Errorf("hand the command to the launcher: %w", err)
	}
	select {
	case <-res.r.run.exited:
	case <-time.After(runscTimeout):
		return 0, 0, errors.New("the runner did not exit")
	}
	elapsed = time.Since(start)
	res.r.drain(copied, time.Second, slog.New(slog.DiscardHandler))
	if err := launchFailure(res.r.report(time.Second), path, cwd); err != nil {
		return 0, 0, err
	}
	code, err = sandbox.ExitCode(res.r.run.cmd.ProcessState, res.r.run.waitErr)
	if err == nil && code != 0 {
		msg, _ := runscErrors(res.logPath)
		err = fmt.Errorf("exit status %d: %s", code, msg)
	}
	return code, elapsed, err
}

// Close ends the sandbox if its launcher still waits (it reads no command
// and exits) and waits for `runsc run`, killing it after a while.
func (res *Resident) Close() {
	res.r.closeLaunch()
	res.r.close(warmKillWait, slog.New(slog.DiscardHandler))
}
