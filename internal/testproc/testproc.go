// Package testproc runs a process under test whose stderr is a JSON log
// (skiff server, skiff host): it starts it, waits for a log line, reads the
// log back, stops it with SIGTERM or kill -9, and stops it for good when the
// test ends, printing its log if the test failed.
package testproc

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Proc is a running process whose stderr carries JSON log lines.
type Proc struct {
	Cmd    *exec.Cmd
	done   chan struct{} // closed when the process has exited
	exit   int
	logMu  sync.Mutex
	log    []map[string]any
	raw    strings.Builder
	notify chan struct{} // a new log line arrived
}

// Start starts cmd, reading its stderr as the log, and stops it (SIGTERM,
// then kill after 30 s) when t ends.
func Start(t testing.TB, cmd *exec.Cmd) *Proc {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &Proc{Cmd: cmd, done: make(chan struct{}), notify: make(chan struct{}, 1)}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", cmd.Args, err)
	}
	go p.read(stderr)
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-p.done
			}
		}
		if t.Failed() {
			t.Logf("%v log:\n%s", cmd.Args, p.Log())
		}
	})
	return p
}

func (p *Proc) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		_ = json.Unmarshal(sc.Bytes(), &m)
		p.logMu.Lock()
		p.raw.WriteString(sc.Text() + "\n")
		if m != nil {
			p.log = append(p.log, m)
		}
		p.logMu.Unlock()
		select {
		case p.notify <- struct{}{}:
		default:
		}
	}
	_ = p.Cmd.Wait()
	p.exit = p.Cmd.ProcessState.ExitCode()
	close(p.done)
}

// Log is everything the process wrote to stderr so far.
func (p *Proc) Log() string {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	return p.raw.String()
}

// Find returns the first JSON log line for which match holds, or nil.
func (p *Proc) Find(match func(map[string]any) bool) map[string]any {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	for _, l := range p.log {
		if match(l) {
			return l
		}
	}
	return nil
}

// WaitLog waits for a JSON log line whose msg is msg and returns it.
func (p *Proc) WaitLog(t testing.TB, msg string, timeout time.Duration) map[string]any {
	t.Helper()
	return p.WaitMatch(t, msg, func(l map[string]any) bool { return l["msg"] == msg }, timeout)
}

// WaitMatch waits for a JSON log line for which match holds; what names
// the line in the failure message.
func (p *Proc) WaitMatch(t testing.TB, what string, match func(map[string]any) bool, timeout time.Duration) map[string]any {
	t.Helper()
	deadline := time.After(timeout)
	for {
		if l := p.Find(match); l != nil {
			return l
		}
		select {
		case <-p.notify:
		case <-p.done:
			if l := p.Find(match); l != nil { // the line may have come with the exit
				return l
			}
			t.Fatalf("%v exited (code %d) before logging %q", p.Cmd.Args, p.exit, what)
		case <-deadline:
			t.Fatalf("%v did not log %q within %s", p.Cmd.Args, what, timeout)
		}
	}
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Stop sends SIGTERM and returns the exit code, failing t unless the
// process exits within timeout.
func (p *Proc) Stop(t testing.TB, timeout time.Duration) int {
	t.Helper()
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	return p.Wait(t, timeout)
}

// Kill is kill -9; it returns once the process is gone.
func (p *Proc) Kill() {
	_ = p.Cmd.Process.Kill()
	<-p.done
}

// Wait waits for the exit and returns its code.
func (p *Proc) Wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.exit
	case <-time.After(timeout):
		t.Fatalf("%v did not exit within %s", p.Cmd.Args, timeout)
		return -1
	}
}
