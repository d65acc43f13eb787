package e2e_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/testenv"
)

// terminal is a tmux session on a server of its own, running one command
// in a real pseudo-terminal.
type terminal struct {
	t      *testing.T
	socket string
}

// newTerminal runs skiff args in a 110x30 tmux window with env, then
// prints EXIT=<code> and keeps the window.
func newTerminal(t *testing.T, env []string, args ...string) *terminal {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		testenv.Skip(t, "skipping: tmux is not installed (run make setup)")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "run.sh")
	var b strings.Builder
	// The shell outlives a Ctrl-C meant for skiff (a trap with a handler
	// is not inherited, so skiff gets the default disposition).
	b.WriteString("#!/bin/sh\ntrap true INT\n")
	for _, kv := range append(env, asSkiff+"=1", "TERM=xterm") {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "export %s='%s'\n", k, v)
	}
	fmt.Fprintf(&b, "'%s'", os.Args[0])
	for _, a := range args {
		fmt.Fprintf(&b, " '%s'", a)
	}
	b.WriteString("\necho EXIT=$?\nsleep 600\n")
	if err := os.WriteFile(script, []byte(b.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	term := &terminal{t: t, socket: fmt.Sprintf("skiff-test-%d-%d", os.Getpid(), time.Now().UnixNano())}
	term.tmux("new-session", "-d", "-s", "run", "-x", "110", "-y", "30", script)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", term.socket, "kill-server").Run() })
	return term
}

func (term *terminal) tmux(args ...string) string {
	term.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", term.socket}, args...)...).CombinedOutput()
	if err != nil {
		term.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// screen is what the window shows now.
func (term *terminal) screen() string { return term.tmux("capture-pane", "-p", "-t", "run") }

// waitScreen waits until the screen shows every one of wants.
func (term *terminal) waitScreen(wants ...string) string {
	term.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := term.screen()
		ok := true
		for _, w := range wants {
			ok = ok && strings.Contains(s, w)
		}
		if ok {
			return s
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("the screen never showed %q; it shows:\n%s", wants, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRunLiveInTerminal runs `skiff run` in a real terminal (tmux) against
// a real server and reads the screen: the live block with the task counts,
// a progress bar from SKIFF_PROGRESS, the output tail and the cost, then
// the result; and Ctrl-C asks whether to cancel or detach.
func TestRunLiveInTerminal(t *testing.T) {
	ce := newClientEnv(t, apitest.Engines()[0])
	ce.env = append(ce.env, "SKIFF_TOKEN="+ce.acct.Member)
	payload := filepath.Join(t.TempDir(), "payload.json")
	if err := os.WriteFile(payload, []byte(`{"steps": 4}`), 0o644); err != nil {
		t.Fatal(err)
	}
	w := ce.e.Worker()

	t.Run("follow", func(t *testing.T) {
		term := newTerminal(t, ce.env, "run", "--project", "p", "--fan-out", "2", payload)
		id := ce.waitNewJob(t)
		term.waitScreen(id+"  queued", "tasks  0/2 done  0 running  0 failed  2 queued")
		w.Claim(t)
		w.Progress(t, `{"pct": 50, "stage": "epoch 2"}`, "loss=0.31\n")
		term.waitScreen(id+"  running", "tasks  0/2 done  1 running  0 failed  1 queued",
			"task 0    [##########----------]  50% epoch 2", "| loss=0.31")
		w.Finish(t, 90*time.Second, 0, `{"loss": 0.3}`, "loss=0.31\n", "")
		term.waitScreen("tasks  1/2 done  0 running  0 failed  1 queued", "cost $0.000844")
		w.Claim(t)
		w.Finish(t, time.Second, 0, `{"loss": 0.2}`, "", "")
		s := term.waitScreen("EXIT=0")
		for _, want := range []string{id + "  completed", "tasks  2/2 done", "Result of " + id, `"loss": 0.2`} {
			if !strings.Contains(s, want) {
				t.Errorf("final screen lacks %q:\n%s", want, s)
			}
		}
		// Drawn in place: the status line is on the screen once.
		if n := strings.Count(s, "tasks  "); n != 1 {
			t.Errorf("the task line shows %d times, want 1 (redrawn in place):\n%s", n, s)
		}
	})

	t.Run("ctrl-c cancels", func(t *testing.T) {
		known := jobIDs(t, ce)
		term := newTerminal(t, ce.env, "run", "--project", "p", payload)
		id := ce.waitNewJob(t, known...)
		term.waitScreen(id + "  queued")
		term.tmux("send-keys", "-t", "run", "C-c")
		term.waitScreen("Cancel job " + id + ", or detach")
		term.tmux("send-keys", "-t", "run", "c", "Enter")
		term.waitScreen("EXIT=1", "cancelled")
		if j, err := ce.c.Job(t.Context(), id); err != nil || j.Status != "cancelled" {
			t.Errorf("job after Ctrl-C, c: %+v %v", j, err)
		}
	})

	t.Run("ctrl-c detaches", func(t *testing.T) {
		known := jobIDs(t, ce)
		term := newTerminal(t, ce.env, "run", "--project", "p", payload)
		id := ce.waitNewJob(t, known...)
		term.waitScreen(id + "  queued")
		term.tmux("send-keys", "-t", "run", "C-c")
		term.waitScreen("Cancel job " + id)
		term.tmux("send-keys", "-t", "run", "d", "Enter")
		term.waitScreen("EXIT=0", "Detached; "+id+" goes on")
		if j, err := ce.c.Job(t.Context(), id); err != nil || j.Status != "queued" {
			t.Errorf("job after Ctrl-C, d: %+v %v", j, err)
		}
	})
}

func jobIDs(t *testing.T, ce *clientEnv) []string {
	t.Helper()
	var ids []string
	for j, err := range ce.c.Jobs(t.Context(), clientJobFilter()) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	return ids
}
