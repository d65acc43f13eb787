package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/testenv"
)

// TestEventSourceWatchAndProjectStreams reads a watch stream and a project
// stream with the WHATWG EventSource client (test/sse) on both stores.
// Streams live 1.5 s here, so each ends with a timeout frame mid-way and
// the client reconnects by itself with Last-Event-ID while jobs change:
// every job frame arrives once, in order, and no second snapshot is sent.
func TestEventSourceWatchAndProjectStreams(t *testing.T) {
	t.Parallel()
	for _, eng := range apitest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			t.Parallel()
			if eng.Skip != "" {
				testenv.Skip(t, eng.Skip)
			}
			f := setupWith(t, eng, apitest.Options{Streams: httpapi.StreamConfig{Timeout: 1500 * time.Millisecond}})
			funded(100_000_000)(t, f)
			t.Run("watch", func(t *testing.T) { testEventSourceWatch(t, f) })
			t.Run("project", func(t *testing.T) { testEventSourceProject(t, f) })
		})
	}
}

// jobFramesWant is the job frames a watch or project stream owes a client
// for jobs: one per job.* event after position from, up to position to,
// in order, as "position:job".
func jobFramesWant(t *testing.T, f *fixture, jobs []string, from, to int64) []string {
	t.Helper()
	var pos []int64
	for _, id := range jobs {
		for _, e := range eventsOf(t, f, id) {
			if strings.HasPrefix(e.Kind, "job.") && e.Position > from && e.Position <= to {
				pos = append(pos, e.Position)
			}
		}
	}
	slices.Sort(pos)
	out := make([]string, len(pos))
	for i, p := range pos {
		out[i] = fmt.Sprintf("%d:job", p)
	}
	return out
}

// jobFramesSeen is what the client saw after its snapshot: its job frames
// as "id:job", how many connections it opened and whether a timeout frame
// came; a second snapshot fails the test.
func jobFramesSeen(t *testing.T, seen []apitest.ESLine, snap apitest.ESLine) (frames []string, opens int, timeouts int) {
	t.Helper()
	for _, l := range seen {
		switch l.Type {
		case "open":
			opens++
		case apiv1.FrameTimeout:
			timeouts++
		case apiv1.FrameSnapshot:
			if l.ID != snap.ID {
				t.Errorf("a second snapshot (id %s): the client did not resume", l.ID)
			}
		case apiv1.FrameJob:
			frames = append(frames, l.ID+":job")
		}
	}
	return frames, opens, timeouts
}

func testEventSourceWatch(t *testing.T, f *fixture) {
	a := submitJob(t, f.member, map[string]any{"client_ref": "run-a", "tags": []string{"es"}})
	b := submitJob(t, f.member, map[string]any{"client_ref": "run-b"})
	lines := apitest.EventSource(t, f.e.URL+"/api/v1/jobs/watch?ids="+a.ID+","+b.ID, f.acct.Member)
	var seen []apitest.ESLine
	snap := apitest.NextLine(t, lines, apiv1.FrameSnapshot, &seen, streamWait)
	var ws apiv1.WatchSnapshot
	if err := json.Unmarshal(snap.Data, &ws); err != nil || len(ws.Jobs) != 2 || ws.Jobs[0].Result == nil ||
		ws.Jobs[0].Result.ClientRef == nil || *ws.Jobs[0].Result.ClientRef != "run-a" {
		t.Fatalf("snapshot: %s", snap.Data)
	}
	runAttempt(t, f, a.ID, time.Second, succeed)
	// The stream's life ends; b ends while the client reconnects.
	apitest.NextLine(t, lines, apiv1.FrameTimeout, &seen, streamWait)
	runAttempt(t, f, b.ID, time.Second, succeed)
	done := apitest.NextLine(t, lines, apiv1.FrameDone, &seen, streamWait)
	var d apiv1.DoneFrame
	if err := json.Unmarshal(done.Data, &d); err != nil || d.Statuses[a.ID] != "completed" || d.Statuses[b.ID] != "completed" {
		t.Errorf("done: got %s, want both completed", done.Data)
	}
	from, _ := strconv.ParseInt(snap.ID, 10, 64)
	got, opens, timeouts := jobFramesSeen(t, seen, snap)
	want := jobFramesWant(t, f, []string{a.ID, b.ID}, from, 1<<62)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("watch job frames:\ngot  %v\nwant %v", got, want)
	}
	if opens < 2 || timeouts < 1 {
		t.Errorf("%d connections, %d timeout frames; want a timeout and a reconnect", opens, timeouts)
	}
	// The terminal frames carry the result's public fields.
	ends := 0
	for _, l := range seen {
		var jf apiv1.JobFrame
		if l.Type == apiv1.FrameJob && json.Unmarshal(l.Data, &jf) == nil && jf.Event.Kind == "job.completed" {
			ends++
			if jf.Result == nil || jf.Result.ClientRef == nil {
				t.Errorf("terminal frame of %s without the result's client_ref: %s", jf.Job.ID, l.Data)
			}
		}
	}
	if ends != 2 {
		t.Errorf("got %d terminal job frames, want 2", ends)
	}
}

func testEventSourceProject(t *testing.T, f *fixture) {
	lines := apitest.EventSource(t, f.e.URL+"/api/v1/projects/"+fixtureProject+"/stream", f.acct.Member)
	var seen []apitest.ESLine
	snap := apitest.NextLine(t, lines, apiv1.FrameSnapshot, &seen, streamWait)
	c := submitJob(t, f.member, fanOut(1))
	apitest.NextLine(t, lines, apiv1.FrameJob, &seen, streamWait)
	// The stream's life ends; d is submitted and runs while the client
	// reconnects.
	apitest.NextLine(t, lines, apiv1.FrameTimeout, &seen, streamWait)
	d := submitJob(t, f.member, fanOut(1))
	runAttempt(t, f, d.ID, time.Second, succeed)
	var last apitest.ESLine
	for {
		last = apitest.NextLine(t, lines, apiv1.FrameJob, &seen, streamWait)
		var pf apiv1.ProjectJobFrame
		if json.Unmarshal(last.Data, &pf) == nil && pf.Job.ID == d.ID && pf.Event.Kind == "job.completed" {
			break
		}
	}
	from, _ := strconv.ParseInt(snap.ID, 10, 64)
	to, _ := strconv.ParseInt(last.ID, 10, 64)
	got, opens, _ := jobFramesSeen(t, seen, snap)
	// Every job of the project since the snapshot (the watch part's jobs
	// ended before it).
	want := jobFramesWant(t, f, []string{c.ID, d.ID}, from, to)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("project job frames:\ngot  %v\nwant %v", got, want)
	}
	if opens < 2 {
		t.Errorf("%d connections; want a reconnect after the timeout frame", opens)
	}
}

// TestCurlWatchAndProjectStreams reads a watch stream and a project stream
// with curl: the watch of two ended jobs is its snapshot and done; the
// project stream is its snapshot, the frames of a job submitted meanwhile,
// and the timeout frame that ends its life (2 s here), after which curl
// sees the response end.
func TestCurlWatchAndProjectStreams(t *testing.T) {
	onEnginesWithTool(t, "curl", "curl not installed", apitest.Options{Streams: httpapi.StreamConfig{Timeout: 2 * time.Second}},
		func(t *testing.T, f *fixture, curl string) {
			a := submitJob(t, f.member, fanOut(1))
			runAttempt(t, f, a.ID, time.Second, succeed)
			b := submitJob(t, f.member, fanOut(1))
			runAttempt(t, f, b.ID, time.Second, succeed)
			curlFrames := func(path string) []string {
				t.Helper()
				out, err := exec.CommandContext(t.Context(), curl, "-sS", "-N", "--max-time", "30",
					"-H", "Authorization: Bearer "+f.acct.Member, f.e.URL+path).Output()
				if err != nil {
					t.Fatalf("curl %s: %v\n%s", path, err, out)
				}
				var events []string
				for _, line := range strings.Split(string(out), "\n") {
					if v, ok := strings.CutPrefix(line, "event: "); ok {
						events = append(events, v)
					}
				}
				return events
			}
			if got := curlFrames("/api/v1/jobs/watch?ids=" + a.ID + "," + b.ID); strings.Join(got, " ") != "snapshot done" {
				t.Errorf("watch of ended jobs: got frames %v, want snapshot done", got)
			}
			// A job submitted while curl follows the project.
			submitted := make(chan error, 1)
			go func() {
				for f.e.Broker.Count() == 0 {
					time.Sleep(10 * time.Millisecond)
				}
				time.Sleep(200 * time.Millisecond) // past the snapshot
				body := `{"project": "` + fixtureProject + `", "runner_command": ["/r"]}`
				req, _ := http.NewRequest(http.MethodPost, f.e.URL+"/api/v1/jobs", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+f.acct.Member)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode != http.StatusCreated {
						err = fmt.Errorf("submit: %d", resp.StatusCode)
					}
				}
				submitted <- err
			}()
			got := strings.Join(curlFrames("/api/v1/projects/"+fixtureProject+"/stream"), " ")
			if err := <-submitted; err != nil {
				t.Fatal(err)
			}
			if got != "snapshot job timeout" {
				t.Errorf("project stream: got frames %q, want snapshot, job, timeout", got)
			}
		})
}
