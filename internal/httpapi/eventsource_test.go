package httpapi_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/testenv"
)

// esLine is one line test/sse/read.mjs printed.
type esLine struct {
	Type string          `json:"type"`
	ID   string          `json:"id"`
	Data json.RawMessage `json:"data"`
}

// eventSource runs the eventsource npm client (test/sse) on url; its lines
// arrive on the channel, closed when it exits.
func eventSource(t *testing.T, url, token string) <-chan esLine {
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
	lines := make(chan esLine, 4096)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var l esLine
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

// nextLine returns the next line of type typ (other lines are kept in
// seen); it fails when the client exits first.
func nextLine(t *testing.T, lines <-chan esLine, typ string, seen *[]esLine) esLine {
	t.Helper()
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
		case <-time.After(streamWait):
			t.Fatalf("no %s line within %s", typ, streamWait)
		}
	}
}

// TestEventSourceClient reads a job stream with the WHATWG EventSource
// client through a fan-out during which the controller restarts: a first
// server stops mid-stream (its connections cut), tasks go on meanwhile, a
// second server over the same store takes over the address, and the client
// reconnects by itself with Last-Event-ID and misses nothing.
func TestEventSourceClient(t *testing.T) {
	t.Parallel()
	for _, eng := range apitest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			t.Parallel()
			if eng.Skip != "" {
				testenv.Skip(t, eng.Skip)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			f := setupWith(t, eng, apitest.Options{Listener: ln})
			funded(100_000_000)(t, f)
			j := submitJob(t, f.member, fanOut(4))
			lines := eventSource(t, f.e.URL+streamPath(j.ID), f.acct.Member)
			var seen []esLine
			snap := nextLine(t, lines, apiv1.FrameSnapshot, &seen)
			from, _ := strconv.ParseInt(snap.ID, 10, 64)

			// Two tasks end while the client reads.
			runAttempt(t, f, j.ID, time.Second, succeed)
			runAttempt(t, f, j.ID, time.Second, succeed)
			for n := 0; n < 2; {
				var tf apiv1.TaskFrame
				l := nextLine(t, lines, apiv1.FrameTask, &seen)
				if json.Unmarshal(l.Data, &tf) == nil && tf.Event.Kind == "attempt.succeeded" {
					n++
				}
			}
			// The controller goes away mid-stream; a task ends meanwhile.
			f.e.Stop()
			nextLine(t, lines, "error", &seen)
			runAttempt(t, f, j.ID, time.Second, succeed)
			// Another controller takes over the address, on the same store.
			ln2, err := net.Listen("tcp", addr)
			if err != nil {
				t.Fatalf("listen again on %s: %v", addr, err)
			}
			next := apitest.Start(t, apitest.Options{Store: f.e.Store, Clock: f.e.Clock, Listener: ln2})
			nextLine(t, lines, "open", &seen)
			g := &fixture{e: next, acct: f.acct, member: next.Client(f.acct.Member)}
			runAttempt(t, g, j.ID, time.Second, fail)
			done := nextLine(t, lines, apiv1.FrameDone, &seen)
			var d apiv1.DoneFrame
			if err := json.Unmarshal(done.Data, &d); err != nil || d.Status != "partial" {
				t.Errorf("done: got %s, want status partial", done.Data)
			}
			// Exactly one frame per event after the snapshot, in order:
			// nothing skipped or doubled across the restart, and no second
			// snapshot (the client resumed).
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
			for _, e := range eventsOf(t, g, j.ID) {
				if e.Position > from {
					want = append(want, fmt.Sprintf("%d:%s", e.Position, frameKind(e.Kind)))
				}
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("frames:\ngot  %v\nwant %v", got, want)
			}
			if opens < 2 {
				t.Errorf("the client opened %d connections, want a reconnect", opens)
			}
		})
	}
}

// TestCurlStream reads the streams with curl: a job stream from its
// snapshot to done, and a resume with a Last-Event-ID header.
func TestCurlStream(t *testing.T) {
	t.Parallel()
	curl, err := exec.LookPath("curl")
	if err != nil {
		testenv.Skip(t, "curl not installed")
	}
	for _, eng := range apitest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			t.Parallel()
			if eng.Skip != "" {
				testenv.Skip(t, eng.Skip)
			}
			f := setupWith(t, eng, apitest.Options{})
			funded(100_000_000)(t, f)
			j := submitJob(t, f.member, fanOut(2))
			runAttempt(t, f, j.ID, time.Second, succeed)
			evs := eventsOf(t, f, j.ID)
			mid := evs[1].Position
			runAttempt(t, f, j.ID, time.Second, succeed) // the job ends
			run := func(args ...string) string {
				t.Helper()
				base := []string{"-sS", "-N", "--max-time", "30", "-H", "Authorization: Bearer " + f.acct.Member}
				out, err := exec.CommandContext(t.Context(), curl, append(base, args...)...).Output()
				if err != nil {
					t.Fatalf("curl %v: %v", args, err)
				}
				return string(out)
			}
			names := func(out string) (events, ids []string) {
				for _, line := range strings.Split(out, "\n") {
					if v, ok := strings.CutPrefix(line, "event: "); ok {
						events = append(events, v)
					}
					if v, ok := strings.CutPrefix(line, "id: "); ok {
						ids = append(ids, v)
					}
				}
				return events, ids
			}
			// The whole story of an ended job: snapshot, then done.
			events, _ := names(run(f.e.URL + streamPath(j.ID)))
			if strings.Join(events, " ") != "snapshot done" {
				t.Errorf("ended job: got frames %v, want snapshot done", events)
			}
			// Resumed after the second event: every later event, then done.
			_, ids := names(run("-H", "Last-Event-ID: "+strconv.FormatInt(mid, 10), f.e.URL+streamPath(j.ID)))
			var want []string
			for _, e := range eventsOf(t, f, j.ID) {
				if e.Position > mid {
					want = append(want, strconv.FormatInt(e.Position, 10))
				}
			}
			if strings.Join(ids, " ") != strings.Join(want, " ") {
				t.Errorf("resumed ids: got %v, want %v", ids, want)
			}
			// curl sees the 422 of a malformed watch.
			out := run("-w", "%{http_code}", "-o", "/dev/null", f.e.URL+"/api/v1/jobs/watch?ids=bad")
			if out != strconv.Itoa(http.StatusUnprocessableEntity) {
				t.Errorf("bad watch: got %s, want 422", out)
			}
		})
	}
}
