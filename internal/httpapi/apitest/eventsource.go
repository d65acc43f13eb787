package apitest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/testenv"
)

// ESLine is one line test/sse/read.mjs printed: a frame {type, id, data},
// {type: "open"} on each (re)connect, {type: "error"} on a drop.
type ESLine struct {
	Type string          `json:"type"`
	ID   string          `json:"id"`
	Data json.RawMessage `json:"data"`
}

// EventSource runs the eventsource npm client (test/sse, found from the
// test's package two levels under the repository root) on url; its lines
// arrive on the channel, closed when it exits. The client reconnects by
// itself with Last-Event-ID, as browsers do.
func EventSource(t *testing.T, url, token string) <-chan ESLine {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Skip(t, "node not installed (make setup installs Debian's nodejs)")
	}
	dir, _ := filepath.Abs("../../test/sse")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "eventsource")); err != nil {
		testenv.Skip(t, "test/sse/node_modules missing: run make setup (npm ci)")
	}
	cmd := exec.CommandContext(t.Context(), node, filepath.Join(dir, "read.mjs"), url, token)
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan ESLine, 4096)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var l ESLine
			if err := json.Unmarshal(sc.Bytes(), &l); err == nil {
				lines <- l
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("read.mjs stderr:\n%s", stderr.String())
		}
	})
	return lines
}

// NextLine returns the next line of type typ (every line read is kept in
// seen); it fails when the client exits first or within is over.
func NextLine(t *testing.T, lines <-chan ESLine, typ string, seen *[]ESLine, within time.Duration) ESLine {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the eventsource client exited before a %s line", typ)
			}
			*seen = append(*seen, l)
			if l.Type == typ {
				return l
			}
		case <-timeout:
			t.Fatalf("no %s line within %s", typ, within)
		}
	}
}

// FrameKind is the frame a job stream sends for an event kind.
func FrameKind(kind string) string {
	switch {
	case strings.HasPrefix(kind, "job."):
		return apiv1.FrameJob
	case strings.HasPrefix(kind, "attempt."), kind == "task.progress":
		return apiv1.FrameTask
	}
	return apiv1.FrameEvent
}

// WantResumed holds what an EventSource client saw of a job stream (seen,
// from its snapshot snap on) to the job's events: exactly one frame per
// event after the snapshot, in order, nothing skipped or doubled across
// reconnects, no second snapshot (the client resumed each time), and at
// least one reconnect.
func WantResumed(t *testing.T, seen []ESLine, snap ESLine, events []apiv1.JobEvent) {
	t.Helper()
	from, _ := strconv.ParseInt(snap.ID, 10, 64)
	var got, want []string
	opens := 0
	for _, l := range seen {
		switch l.Type {
		case "open":
			opens++
		case apiv1.FrameSnapshot:
			if l.ID != snap.ID {
				t.Errorf("a second snapshot (id %s): the client did not resume", l.ID)
			}
		case apiv1.FrameJob, apiv1.FrameTask, apiv1.FrameEvent:
			got = append(got, l.ID+":"+l.Type)
		}
	}
	for _, e := range events {
		if e.Position > from {
			want = append(want, fmt.Sprintf("%d:%s", e.Position, FrameKind(e.Kind)))
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("frames:\ngot  %v\nwant %v", got, want)
	}
	if opens < 2 {
		t.Errorf("the client opened %d connections, want a reconnect", opens)
	}
}
