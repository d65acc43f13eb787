package gvisor

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// resident is a `runsc run` whose sandbox's init is the launcher, with the
// ends of its pipes that the driver holds from boot: the launcher's command
// pipe (launch) and report (status), and the sandbox's stdout and stderr.
type resident struct {
	run                            *waited
	launch, status, stdout, stderr *os.File
}

// startResident starts runsc with args (a `runsc run` that passes the
// launcher's descriptors, warmRunArgs) in dir.
func startResident(runscPath string, args []string, dir string) (*resident, error) {
	r := &resident{}
	var theirs []*os.File // the ends runsc and the sandbox hold
	defer func() {
		for _, f := range theirs {
			f.Close()
		}
	}()
	pipe := func(ours **os.File, keepRead bool) error {
		rd, wr, err := os.Pipe()
		if err != nil {
			return err
		}
		if keepRead {
			*ours, theirs = rd, append(theirs, wr)
		} else {
			*ours, theirs = wr, append(theirs, rd)
		}
		return nil
	}
	if err := errors.Join(pipe(&r.launch, false), pipe(&r.status, true), pipe(&r.stdout, true), pipe(&r.stderr, true)); err != nil {
		r.closeAll()
		return nil, err
	}
	cmd := exec.Command(runscPath, args...)
	// Its own process group, so that abandoning it kills runsc's helpers too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Dir = dir
	// Files, not writers: no goroutine of exec's copies them, and Wait does
	// not wait for the sandbox's output to close.
	cmd.ExtraFiles = []*os.File{theirs[0], theirs[1]} // fds 3 and 4: launcherCmdFD, launcherStatusFD
	cmd.Stdout, cmd.Stderr = theirs[2], theirs[3]
	if err := cmd.Start(); err != nil {
		r.closeAll()
		return nil, fmt.Errorf("start runsc run: %w", err)
	}
	r.run = waitFor(cmd)
	return r, nil
}

// waitReady waits for the launcher's ready byte: the sandbox is booted and
// the launcher waits for its command. EOF means runsc exited.
func (r *resident) waitReady(limit time.Duration) error {
	if err := r.status.SetReadDeadline(time.Now().Add(limit)); err != nil {
		return err
	}
	ready := make([]byte, 1)
	if _, err := io.ReadFull(r.status, ready); err != nil {
		return fmt.Errorf("launcher not ready: %w", err)
	}
	if ready[0] != launcherReady {
		return fmt.Errorf("launcher not ready: it wrote %q", ready)
	}
	return r.status.SetReadDeadline(time.Time{})
}

// hand writes the launch message and closes the pipe: the launcher reads
// to EOF.
func (r *resident) hand(msg []byte) error {
	defer r.closeLaunch()
	if err := r.launch.SetWriteDeadline(time.Now().Add(runscTimeout)); err != nil {
		return err
	}
	_, err := r.launch.Write(msg)
	return err
}

// copyOutput copies the sandbox's stdout and stderr to the attempt's
// writers (discarded when nil) until EOF; the channel closes when both are
// done.
func (r *resident) copyOutput(stdout, stderr io.Writer) <-chan struct{} {
	copyTo := func(w io.Writer, f *os.File, finished chan<- struct{}) {
		if w == nil {
			w = io.Discard
		}
		_, _ = io.Copy(w, f)
		close(finished)
	}
	outDone, errDone, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go copyTo(stdout, r.stdout, outDone)
	go copyTo(stderr, r.stderr, errDone)
	go func() {
		<-outDone
		<-errDone
		close(done)
	}()
	return done
}

// drain waits up to limit for the output copies to reach EOF, then stops
// them (as exec.Cmd.WaitDelay does for a cold start's runsc). Draining
// twice is harmless.
func (r *resident) drain(copied <-chan struct{}, limit time.Duration, log *slog.Logger) {
	select {
	case <-copied:
		return
	case <-time.After(limit):
	}
	if limit > 0 {
		log.Warn("sandbox output still open after runsc exited; closing it")
	}
	r.stdout.Close()
	r.stderr.Close()
	<-copied
}

// report reads what the launcher wrote after its ready byte: nothing when
// it started the runner. Its pipe closes once the sandbox is gone; limit
// bounds the wait when it is not.
func (r *resident) report(limit time.Duration) []byte {
	if err := r.status.SetReadDeadline(time.Now().Add(limit)); err != nil {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(r.status, 64))
	return b
}

// kill kills `runsc run` and its helpers (not the sandbox: deleting the
// container does that).
func (r *resident) kill() {
	_ = syscall.Kill(-r.run.cmd.Process.Pid, syscall.SIGKILL) // ESRCH: gone already
}

func (r *resident) closeLaunch() {
	if r.launch != nil {
		r.launch.Close()
		r.launch = nil
	}
}

// close waits up to limit for `runsc run` to exit (its container deleted
// or its runner gone), kills it after that, and closes the pipes.
func (r *resident) close(limit time.Duration, log *slog.Logger) {
	select {
	case <-r.run.exited:
	case <-time.After(limit):
		log.Warn("runsc run still running after its sandbox ended; killing it")
		r.kill()
		<-r.run.exited
	}
	r.closeAll()
}

func (r *resident) closeAll() {
	r.closeLaunch()
	for _, f := range []*os.File{r.status, r.stdout, r.stderr} {
		if f != nil {
			f.Close()
		}
	}
}
