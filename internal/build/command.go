package build

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// command is one subprocess run (buildah, runsc) in its own process group, so
// that a timeout or a cancelled context kills it whole rather than leaving
// grandchildren behind.
type command struct {
	path string
	args []string
	env  []string // added to the builder's environment
	out  io.Writer
	// onKill runs after the group has been killed, while Wait may still be
	// blocked on pipes held by processes outside the group (runsc's sandbox
	// and gofer start their own sessions). It must finish them off.
	onKill    func()
	waitDelay time.Duration
}

// run starts the command and waits for it. The error wraps ctx.Err() when the
// context ended the run.
func (c command) run(ctx context.Context) error {
	err := c.cmd(ctx, c.out, c.out).Run() // one writer for both: one pipe, output in order
	if ctxErr := ctx.Err(); ctxErr != nil && err != nil {
		return fmt.Errorf("%s killed: %w", c.path, ctxErr)
	}
	return err
}

// output runs the command and returns its stdout; stderr goes into the error.
func (c command) output(ctx context.Context) ([]byte, error) {
	stdout, stderr := &limitedBuffer{max: 4 << 20}, &limitedBuffer{max: 8 << 10}
	if err := c.cmd(ctx, stdout, stderr).Run(); err != nil {
		return nil, fmt.Errorf("%s %v: %w: %s", c.path, c.args, err, stderr.String())
	}
	return stdout.Bytes(), nil
}

func (c command) cmd(ctx context.Context, stdout, stderr io.Writer) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.path, c.args...)
	cmd.Env = append(os.Environ(), c.env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if c.onKill != nil {
			c.onKill()
		}
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
	cmd.WaitDelay = c.waitDelay
	return cmd
}

// limitedBuffer keeps the first max bytes written and drops the rest.
type limitedBuffer struct {
	max int
	buf []byte
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (b *limitedBuffer) Bytes() []byte  { return b.buf }
func (b *limitedBuffer) String() string { return string(b.buf) }
