package httpapi_test

import (
	"encoding/json"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/testenv"
)

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
			lines := apitest.EventSource(t, f.e.URL+streamPath(j.ID), f.acct.Member)
			var seen []apitest.ESLine
			snap := apitest.NextLine(t, lines, apiv1.FrameSnapshot, &seen, streamWait)

			// Two tasks end while the client reads.
			runAttempt(t, f, j.ID, time.Second, succeed)
			runAttempt(t, f, j.ID, time.Second, succeed)
			for n := 0; n < 2; {
				var tf apiv1.TaskFrame
				l := apitest.NextLine(t, lines, apiv1.FrameTask, &seen, streamWait)
				if json.Unmarshal(l.Data, &tf) == nil && tf.Event.Kind == "attempt.succeeded" {
					n++
				}
			}
			// The controller goes away mid-stream; a task ends meanwhile.
			f.e.Stop()
			apitest.NextLine(t, lines, "error", &seen, streamWait)
			runAttempt(t, f, j.ID, time.Second, succeed)
			// Another controller takes over the address, on the same store.
			ln2, err := net.Listen("tcp", addr)
			if err != nil {
				t.Fatalf("listen again on %s: %v", addr, err)
			}
			next := apitest.Start(t, apitest.Options{Store: f.e.Store, Clock: f.e.Clock, Listener: ln2})
			apitest.NextLine(t, lines, "open", &seen, streamWait)
			g := &fixture{e: next, acct: f.acct, member: next.Client(f.acct.Member)}
			runAttempt(t, g, j.ID, time.Second, fail)
			done := apitest.NextLine(t, lines, apiv1.FrameDone, &seen, streamWait)
			var d apiv1.DoneFrame
			if err := json.Unmarshal(done.Data, &d); err != nil || d.Status != "partial" {
				t.Errorf("done: got %s, want status partial", done.Data)
			}
			// Exactly one frame per event after the snapshot, in order:
			// nothing skipped or doubled across the restart.
			apitest.WantResumed(t, seen, snap, eventsOf(t, g, j.ID))
		})
	}
}

// TestCurlStream reads the streams with curl: a job stream from its
// snapshot to done, and a resume with a Last-Event-ID header.
func TestCurlStream(t *testing.T) {
	onEnginesWithTool(t, "curl", "curl not installed", apitest.Options{}, func(t *testing.T, f *fixture, curl string) {
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
