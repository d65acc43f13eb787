package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/testenv"
)

// streamCase is a stream test with the server options it needs.
type streamCase struct {
	name         string
	streams      httpapi.StreamConfig
	brokerBuffer int
	run          func(t *testing.T, f *fixture)
}

// TestStreams runs the SSE stream tests on every engine, each on a fresh
// server whose project is published and funded.
func TestStreams(t *testing.T) {
	t.Parallel()
	cases := []streamCase{
		{name: "job_stream_lifecycle", run: testJobStreamLifecycle},
		{name: "job_stream_resume_mid_fanout", run: testJobStreamResume},
		{name: "job_stream_bad_last_event_id", run: testJobStreamBadLastEventID},
		{name: "job_stream_cancel", run: testJobStreamCancel},
		{name: "watch", run: testWatch},
		{name: "watch_bad_input", run: testWatchBadInput},
		{name: "project_stream", streams: httpapi.StreamConfig{Timeout: 500 * time.Millisecond}, run: testProjectStream},
		{name: "stream_cap", streams: httpapi.StreamConfig{PerAccount: 1}, run: testStreamCap},
		{name: "job_metrics_and_leases", run: testJobMetricsAndLeases},
		{name: "ping", streams: httpapi.StreamConfig{PingInterval: 20 * time.Millisecond}, run: testStreamPing},
		{name: "slow_reader", brokerBuffer: 8, run: testStreamSlowReader},
		{name: "project_stream_admin", run: testProjectStreamAdmin},
	}
	for _, eng := range apitest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			t.Parallel()
			if eng.Skip != "" {
				testenv.Skip(t, eng.Skip)
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					f := setupWith(t, eng, apitest.Options{Streams: tc.streams, BrokerBuffer: tc.brokerBuffer})
					funded(100_000_000)(t, f)
					tc.run(t, f)
				})
			}
		})
	}
}

func streamPath(jobID string) string { return "/api/v1/jobs/" + jobID + "/stream" }

func fanOut(n int) map[string]any {
	items := make([]any, n)
	for i := range items {
		items[i] = map[string]any{"i": i}
	}
	return map[string]any{"fan_out": map[string]any{"items": items}, "timeout_s": 600}
}

// eventsOf is every event of a job, by GET /events.
func eventsOf(t *testing.T, f *fixture, jobID string) []apiv1.JobEvent {
	t.Helper()
	var l apiv1.JobEventList
	f.member.Get(t, "/api/v1/jobs/"+jobID+"/events?limit=1000").JSON(t, http.StatusOK, &l)
	return l.Events
}

// readUntilDone reads frames up to done (included) and the stream's end.
func readUntilDone(t *testing.T, s *sseClient) []sseFrame {
	t.Helper()
	var out []sseFrame
	for {
		f, ok := s.next(t)
		if !ok {
			t.Fatalf("stream ended without done after %d frames", len(out))
		}
		out = append(out, f)
		if f.Event == apiv1.FrameDone {
			s.ended(t)
			return out
		}
	}
}

// checkFramesAreEvents holds frames (after position from) to the job's
// events: one frame per event after from, in order, its id the event's
// position and its name the event's frame kind; nothing skipped or doubled.
func checkFramesAreEvents(t *testing.T, f *fixture, jobID string, from int64, frames []sseFrame) {
	t.Helper()
	var want []string
	for _, e := range eventsOf(t, f, jobID) {
		if e.Position > from {
			want = append(want, fmt.Sprintf("%d:%s", e.Position, apitest.FrameKind(e.Kind)))
		}
	}
	var got []string
	for _, fr := range frames {
		if fr.HasID {
			got = append(got, fr.ID+":"+fr.Event)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("frames:\ngot  %v\nwant %v", got, want)
	}
}

func snapshotOf(t *testing.T, s *sseClient) (apiv1.JobStreamSnapshot, int64) {
	t.Helper()
	fr := s.want(t, apiv1.FrameSnapshot)
	var snap apiv1.JobStreamSnapshot
	fr.decode(t, &snap)
	if fr.ID != strconv.FormatInt(snap.Position, 10) {
		t.Errorf("snapshot id %q, position %d", fr.ID, snap.Position)
	}
	return snap, snap.Position
}

// A job stream shows the snapshot, then every change as it commits: the
// task's move to running, its start, the output and progress the runner
// printed (the last lines before the task's end), the job's end, and done.
func testJobStreamLifecycle(t *testing.T, f *fixture) {
	ctx := t.Context()
	j := submitJob(t, f.member, fanOut(2))
	s := openSSE(t, f.e.URL, f.acct.Member, streamPath(j.ID), "")
	if s.Status != http.StatusOK || !strings.HasPrefix(s.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("got %d %q, want 200 text/event-stream", s.Status, s.Header.Get("Content-Type"))
	}
	snap, from := snapshotOf(t, s)
	if snap.Job.ID != j.ID || snap.Job.Status != "queued" || snap.TaskCount != 2 || len(snap.Tasks) != 2 ||
		snap.TaskCounts["queued"] != 2 || snap.TasksTruncated || snap.Resync != nil {
		t.Fatalf("snapshot: got %+v", snap)
	}
	var frames []sseFrame
	a := claimAttempt(t, f, j.ID)
	fr := s.want(t, apiv1.FrameTask)
	var tf apiv1.TaskFrame
	fr.decode(t, &tf)
	if tf.Event.Kind != "attempt.assigned" || tf.Task.Status != "running" || tf.JobID != j.ID {
		t.Errorf("first task frame: got %s, task %s", tf.Event.Kind, tf.Task.Status)
	}
	frames = append(frames, fr)
	fr = s.want(t, apiv1.FrameJob)
	var jf apiv1.JobFrame
	fr.decode(t, &jf)
	if jf.Event.Kind != "job.running" || jf.Job.Status != "running" {
		t.Errorf("job frame: got %s, job %s", jf.Event.Kind, jf.Job.Status)
	}
	frames = append(frames, fr)
	start := f.e.Clock.Now()
	if err := f.e.Jobs.AttemptStarted(ctx, a, start); err != nil {
		t.Fatal(err)
	}
	frames = append(frames, s.want(t, apiv1.FrameTask))
	if err := f.e.Jobs.AttemptProgress(ctx, a, json.RawMessage(`{"step":1}`), "line 1\n"); err != nil {
		t.Fatal(err)
	}
	fr = s.want(t, apiv1.FrameTask)
	fr.decode(t, &tf)
	if tf.Event.Kind != "task.progress" || tf.Task.LiveFeedback == nil || tf.Task.LiveFeedback.OutputTail != "line 1\n" ||
		string(tf.Task.LatestProgress) != `{"step":1}` {
		t.Errorf("progress frame: got %s, live %+v, progress %s", tf.Event.Kind, tf.Task.LiveFeedback, tf.Task.LatestProgress)
	}
	frames = append(frames, fr)
	f.e.Clock.Advance(time.Minute)
	o := succeed
	o.StartedAt, o.EndedAt = start, f.e.Clock.Now()
	if err := f.e.Jobs.AttemptFinished(ctx, a, &o, json.RawMessage(`{"step":2}`), "line 1\nlast line\n"); err != nil {
		t.Fatal(err)
	}
	// The last lines first, then the end.
	fr = s.want(t, apiv1.FrameTask)
	fr.decode(t, &tf)
	if tf.Event.Kind != "task.progress" || tf.Task.LiveFeedback == nil || tf.Task.LiveFeedback.OutputTail != "line 1\nlast line\n" {
		t.Errorf("last output frame: got %s, live %+v", tf.Event.Kind, tf.Task.LiveFeedback)
	}
	frames = append(frames, fr)
	fr = s.want(t, apiv1.FrameTask)
	fr.decode(t, &tf)
	if tf.Event.Kind != "attempt.succeeded" || tf.Task.Status != "succeeded" {
		t.Errorf("end frame: got %s, task %s", tf.Event.Kind, tf.Task.Status)
	}
	frames = append(frames, fr)
	runAttempt(t, f, j.ID, 10*time.Second, succeed)
	rest := readUntilDone(t, s)
	frames = append(frames, rest...)
	checkFramesAreEvents(t, f, j.ID, from, frames)
	last := rest[len(rest)-2]
	if last.Event != apiv1.FrameJob {
		t.Fatalf("frame before done: got %s, want job", last.Event)
	}
	last.decode(t, &jf)
	if jf.Event.Kind != "job.completed" || jf.Job.Status != "completed" {
		t.Errorf("terminal frame: got %s, job %s", jf.Event.Kind, jf.Job.Status)
	}
	var done apiv1.DoneFrame
	rest[len(rest)-1].decode(t, &done)
	if done.JobID != j.ID || done.Status != "completed" {
		t.Errorf("done: got %+v", done)
	}
	// A client that saw the end and reconnects is told to stop (204).
	again := openSSE(t, f.e.URL, f.acct.Member, streamPath(j.ID), last.ID)
	if again.Status != http.StatusNoContent {
		t.Errorf("resume after the end: got %d, want 204", again.Status)
	}
	// A fresh stream of the ended job: its snapshot, then done.
	fresh := openSSE(t, f.e.URL, f.acct.Member, streamPath(j.ID), "")
	if snap, _ := snapshotOf(t, fresh); snap.Job.Status != "completed" {
		t.Errorf("snapshot of the ended job: got %s", snap.Job.Status)
	}
	fresh.want(t, apiv1.FrameDone)
	fresh.ended(t)
}

// A client that drops in the middle of a fan-out and reconnects with
// Last-Event-ID gets exactly what it missed, in order, then the rest.
func testJobStreamResume(t *testing.T, f *fixture) {
	j := submitJob(t, f.member, fanOut(5))
	s := openSSE(t, f.e.URL, f.acct.Member, streamPath(j.ID), "")
	_, from := snapshotOf(t, s)
	runAttempt(t, f, j.ID, 10*time.Second, succeed)
	runAttempt(t, f, j.ID, 10*time.Second, succeed)
	// Read some of what was sent, then drop the connection.
	var seen []sseFrame
	for range 4 {
		fr, ok := s.next(t)
		if !ok {
			t.Fatal("stream ended early")
		}
		seen = append(seen, fr)
	}
	s.Close()
	lastID := seen[len(seen)-1].ID
	// Meanwhile the fan-out goes on.
	runAttempt(t, f, j.ID, 10*time.Second, succeed)
	runAttempt(t, f, j.ID, 10*time.Second, fail)
	r := openSSE(t, f.e.URL, f.acct.Member, streamPath(j.ID), lastID)
	if r.Status != http.StatusOK {
		t.Fatalf("resume: got %d", r.Status)
	}
	// No snapshot: the missed frames come first.
	fr, _ := r.next(t)
	if fr.Event == apiv1.FrameSnapshot {
		t.Fatal("resume sent a snapshot")
	}
	seen = append(seen, fr)
	runAttempt(t, f, j.ID, 10*time.Second, succeed)
	seen = append(seen, readUntilDone(t, r)...)
	checkFramesAreEvents(t, f, j.ID, from, seen)
	var done apiv1.DoneFrame
	seen[len(seen)-1].decode(t, &done)
	if done.Status != "partial" {
		t.Errorf("done: got %+v, want partial", done)
	}
}

// A Last-Event-ID that is not a position this store gave gets a fresh
// snapshot that says so.
func testJobStreamBadLastEventID(t *testing.T, f *fixture) {
	j := submitJob(t, f.member, fanOut(1))
	for _, id := range []string{"abc", "-3", "999999999999", "1.5"} {
		s := openSSE(t, f.e.URL, f.acct.Member, streamPath(j.ID), id)
		snap, _ := snapshotOf(t, s)
		if snap.Resync == nil || *snap.Resync != apiv1.ResyncInvalidLastEvent {
			t.Errorf("Last-Event-ID %q: resync %v, want %s", id, snap.Resync, apiv1.ResyncInvalidLastEvent)
		}
		s.Close()
	}
	// The query parameter serves clients that cannot set the header.
	evs := eventsOf(t, f, j.ID)
	s := openSSE(t, f.e.URL, f.acct.Member, streamPath(j.ID)+"?last_event_id="+strconv.FormatInt(evs[0].Position, 10), "")
	f.member.Put(t, "/api/v1/jobs/"+j.ID+"/cancel", map[string]any{}).Want(t, http.StatusOK)
	frames := readUntilDone(t, s)
	checkFramesAreEvents(t, f, j.ID, evs[0].Position, frames)
	// Another account's job is not found; no credentials, 401.
	_, other := fundedAccount(t, f.e, "other", "beta", 0)
	if s := openSSE(t, f.e.URL, other.Token, streamPath(j.ID), ""); s.Status != http.StatusNotFound {
		t.Errorf("another account's job: got %d, want 404", s.Status)
	}
	if s := openSSE(t, f.e.URL, "", streamPath(j.ID), ""); s.Status != http.StatusUnauthorized {
		t.Errorf("no credentials: got %d, want 401", s.Status)
	}
}

// Cancelling ends a job stream with the terminal job frame and done.
func testJobStreamCancel(t *testing.T, f *fixture) {
	j := submitJob(t, f.member, fanOut(3))
	s := openSSE(t, f.e.URL, f.acct.Member, streamPath(j.ID), "")
	_, from := snapshotOf(t, s)
	claimAttempt(t, f, j.ID)
	f.member.Put(t, "/api/v1/jobs/"+j.ID+"/cancel", map[string]any{"reason": "enough"}).Want(t, http.StatusOK)
	frames := readUntilDone(t, s)
	checkFramesAreEvents(t, f, j.ID, from, frames)
	var jf apiv1.JobFrame
	frames[len(frames)-2].decode(t, &jf)
	if jf.Event.Kind != "job.cancelled" || jf.Job.Status != "cancelled" {
		t.Errorf("terminal frame: got %s %s", jf.Event.Kind, jf.Job.Status)
	}
}

// A watch stream: a snapshot of each job (unknown ids reported per id),
// job deltas with the result fields on terminal frames, done when all
// are terminal.
func testWatch(t *testing.T, f *fixture) {
	ref := "run-7"
	a := submitJob(t, f.member, map[string]any{"client_ref": ref, "tags": []string{"nightly"}, "meta": map[string]any{"k": "v"}})
	b := submitJob(t, f.member, fanOut(2))
	s := openSSE(t, f.e.URL, f.acct.Member, "/api/v1/jobs/watch?ids="+a.ID+",job_unknown,"+b.ID, "")
	if s.Status != http.StatusOK {
		t.Fatalf("watch: got %d", s.Status)
	}
	var snap apiv1.WatchSnapshot
	s.want(t, apiv1.FrameSnapshot).decode(t, &snap)
	if len(snap.Jobs) != 3 || snap.Jobs[0].ID != a.ID || snap.Jobs[1].Error == nil || snap.Jobs[1].Error.Code != "job_not_found" ||
		snap.Jobs[2].Job == nil || snap.Jobs[2].Job.Status != "queued" {
		t.Fatalf("snapshot: got %+v", snap)
	}
	if r := snap.Jobs[0].Result; r == nil || r.ClientRef == nil || *r.ClientRef != ref || len(r.Tags) != 1 || string(r.Meta) != `{"k":"v"}` {
		t.Errorf("snapshot result fields: got %+v", snap.Jobs[0].Result)
	}
	f.member.Put(t, "/api/v1/jobs/"+a.ID+"/cancel", map[string]any{}).Want(t, http.StatusOK)
	var jf apiv1.JobFrame
	s.want(t, apiv1.FrameJob).decode(t, &jf)
	if jf.Job.ID != a.ID || jf.Job.Status != "cancelled" || jf.Result == nil || jf.Result.ClientRef == nil || *jf.Result.ClientRef != ref {
		t.Errorf("terminal frame of a: got %+v", jf)
	}
	runAttempt(t, f, b.ID, time.Second, succeed)
	runAttempt(t, f, b.ID, time.Second, succeed)
	jf = apiv1.JobFrame{}
	s.want(t, apiv1.FrameJob).decode(t, &jf)
	if jf.Event.Kind != "job.running" || jf.Result != nil {
		t.Errorf("b's first delta: got %s, result %v", jf.Event.Kind, jf.Result)
	}
	jf = apiv1.JobFrame{}
	s.want(t, apiv1.FrameJob).decode(t, &jf)
	if jf.Event.Kind != "job.completed" || jf.Result == nil || jf.Result.Status != "completed" {
		t.Errorf("b's end: got %s, result %+v", jf.Event.Kind, jf.Result)
	}
	var done apiv1.DoneFrame
	s.want(t, apiv1.FrameDone).decode(t, &done)
	if done.Statuses[a.ID] != "cancelled" || done.Statuses[b.ID] != "completed" {
		t.Errorf("done: got %+v", done)
	}
	s.ended(t)
}

func testWatchBadInput(t *testing.T, f *fixture) {
	j := submitJob(t, f.member, fanOut(1))
	many := make([]string, 101)
	for i := range many {
		many[i] = fmt.Sprintf("job_%03d", i)
	}
	for _, tc := range []struct {
		query string
		want  int
		code  string
	}{
		{"", http.StatusUnprocessableEntity, "invalid_ids"},
		{"?ids=", http.StatusUnprocessableEntity, "invalid_ids"},
		{"?ids=nope", http.StatusUnprocessableEntity, "invalid_ids"},
		{"?ids=" + j.ID + ",job_a%20b", http.StatusUnprocessableEntity, "invalid_ids"},
		{"?ids=" + strings.Join(many, ","), http.StatusUnprocessableEntity, "too_many_ids"},
		{"?ids=job_unknown,job_other", http.StatusNotFound, "job_not_found"},
	} {
		r := f.member.Get(t, "/api/v1/jobs/watch"+tc.query)
		r.Want(t, tc.want)
		var e apiv1.Error
		r.JSON(t, tc.want, &e)
		if e.Code != tc.code || e.RecommendedAction == "" {
			t.Errorf("%s: got %+v, want code %s with an action", tc.query, e, tc.code)
		}
	}
	// 100 ids (one known) are allowed.
	ok := append(many[:99:99], j.ID)
	s := openSSE(t, f.e.URL, f.acct.Member, "/api/v1/jobs/watch?ids="+strings.Join(ok, ","), "")
	if s.Status != http.StatusOK {
		t.Errorf("100 ids: got %d", s.Status)
	}
}

// A project stream: the snapshot of its jobs, a job frame on each change,
// and a timeout frame when its life ends.
func testProjectStream(t *testing.T, f *fixture) {
	queued := submitJob(t, f.member, fanOut(1))
	// Made before the stream opens: the stream lives 0.5 s here, and a
	// slow set-up on a loaded machine would outlive it.
	_, other := fundedAccount(t, f.e, "other", fixtureProject, 100_000_000)
	s := openSSE(t, f.e.URL, f.acct.Member, "/api/v1/projects/"+fixtureProject+"/stream", "")
	if s.Status != http.StatusOK {
		t.Fatalf("project stream: got %d", s.Status)
	}
	var snap apiv1.ProjectSnapshot
	s.want(t, apiv1.FrameSnapshot).decode(t, &snap)
	if snap.Project != fixtureProject || len(snap.Queued) != 1 || snap.Queued[0].ID != queued.ID || len(snap.Active) != 0 {
		t.Fatalf("snapshot: got %+v", snap)
	}
	// A viewer key reads the stream too.
	if v := openSSE(t, f.e.URL, f.acct.Viewer, "/api/v1/projects/"+fixtureProject+"/stream", ""); v.Status != http.StatusOK {
		t.Errorf("viewer: got %d, want 200", v.Status)
	} else {
		v.Close()
	}
	// Another account's jobs never show.
	other.Post(t, "/api/v1/jobs", map[string]any{"project": fixtureProject, "runner_command": []string{"/r"}}).Want(t, http.StatusCreated)
	next := submitJob(t, f.member, fanOut(1))
	var pf apiv1.ProjectJobFrame
	s.want(t, apiv1.FrameJob).decode(t, &pf)
	if pf.Job.ID != next.ID || pf.Event.Kind != "job.submitted" {
		t.Errorf("delta: got %s %s, want %s job.submitted", pf.Job.ID, pf.Event.Kind, next.ID)
	}
	var to apiv1.TimeoutFrame
	s.want(t, apiv1.FrameTimeout).decode(t, &to)
	if to.LastEventID == "" || to.RecommendedAction == "" {
		t.Errorf("timeout: got %+v", to)
	}
	s.ended(t)
	if r := f.member.Get(t, "/api/v1/projects/nope/stream"); r.Status != http.StatusNotFound {
		t.Errorf("unknown project: got %d", r.Status)
	}
}

// An admin (the operator) sees every account's projects: account= names
// the account, by name or id. Anyone else naming another account gets 403,
// and an unknown account 404, before any frame.
func testProjectStreamAdmin(t *testing.T, f *fixture) {
	own := submitJob(t, f.member, fanOut(1))
	otherAcct, other := fundedAccount(t, f.e, "other", fixtureProject, 100_000_000)
	theirs := other.Post(t, "/api/v1/jobs", map[string]any{"project": fixtureProject, "runner_command": []string{"/r"}}).
		Object(t, http.StatusCreated)["id"].(string)
	path := "/api/v1/projects/" + fixtureProject + "/stream?account="
	for _, key := range []string{f.acct.Member, f.acct.Viewer} {
		var e apiv1.Error
		f.e.Client(key).Get(t, path+"other").JSON(t, http.StatusForbidden, &e)
		if e.Code != "admin_required" || e.RecommendedAction == "" {
			t.Errorf("non-admin naming another account: got %+v", e)
		}
	}
	// Naming one's own account is the same as naming none.
	mine := openSSE(t, f.e.URL, f.acct.Member, path+f.acct.Name, "")
	var snap apiv1.ProjectSnapshot
	mine.want(t, apiv1.FrameSnapshot).decode(t, &snap)
	if len(snap.Queued) != 1 || snap.Queued[0].ID != own.ID {
		t.Errorf("own account by name: got %+v, want job %s", snap.Queued, own.ID)
	}
	mine.Close()
	for _, name := range []string{"other", otherAcct.ID} {
		s := openSSE(t, f.e.URL, f.acct.Admin, path+name, "")
		if s.Status != http.StatusOK {
			t.Fatalf("admin, account=%s: got %d", name, s.Status)
		}
		snap = apiv1.ProjectSnapshot{}
		s.want(t, apiv1.FrameSnapshot).decode(t, &snap)
		if len(snap.Queued) != 1 || snap.Queued[0].ID != theirs {
			t.Errorf("admin, account=%s: got %+v, want only job %s", name, snap.Queued, theirs)
		}
		s.Close()
	}
	// Deltas follow the named account's project, not the admin's own.
	s := openSSE(t, f.e.URL, f.acct.Admin, path+"other", "")
	s.want(t, apiv1.FrameSnapshot)
	submitJob(t, f.member, fanOut(1))
	next := other.Post(t, "/api/v1/jobs", map[string]any{"project": fixtureProject, "runner_command": []string{"/r"}}).
		Object(t, http.StatusCreated)["id"].(string)
	var pf apiv1.ProjectJobFrame
	s.want(t, apiv1.FrameJob).decode(t, &pf)
	if pf.Job.ID != next {
		t.Errorf("admin delta: got job %s, want %s", pf.Job.ID, next)
	}
	var e apiv1.Error
	f.e.Client(f.acct.Admin).Get(t, path+"nobody").JSON(t, http.StatusNotFound, &e)
	if e.Code != "account_not_found" {
		t.Errorf("unknown account: got %+v", e)
	}
}

// One stream more than the account's cap is refused with 429 and
// Retry-After.
func testStreamCap(t *testing.T, f *fixture) {
	j := submitJob(t, f.member, fanOut(1))
	s := openSSE(t, f.e.URL, f.acct.Member, streamPath(j.ID), "")
	snapshotOf(t, s)
	r := f.member.Get(t, "/api/v1/jobs/watch?ids="+j.ID)
	var e apiv1.Error
	r.JSON(t, http.StatusTooManyRequests, &e)
	if e.Code != "too_many_streams" || r.Header.Get("Retry-After") == "" {
		t.Errorf("over the cap: got %+v, Retry-After %q", e, r.Header.Get("Retry-After"))
	}
}

// An idle stream sends ping frames.
func testStreamPing(t *testing.T, f *fixture) {
	j := submitJob(t, f.member, fanOut(1))
	s := openSSE(t, f.e.URL, f.acct.Member, streamPath(j.ID), "")
	snapshotOf(t, s)
	if fr := s.rawNext(t); fr.Event != apiv1.FramePing || fr.HasID {
		t.Errorf("idle: got %s frame (id %q), want ping without id", fr.Event, fr.ID)
	}
}

// GET /jobs/{id}/metrics and /leases/{job_id} after a run with a success,
// a retried failure and a lost attempt.
func testJobMetricsAndLeases(t *testing.T, f *fixture) {
	body := fanOut(3)
	body["max_retries"] = 1
	j := submitJob(t, f.member, body)
	var l apiv1.LeaseStatus
	f.member.Get(t, "/api/v1/leases/"+j.ID).JSON(t, http.StatusOK, &l)
	if l.Leases != (apiv1.LeaseCounts{}) || string(l.Reservation) != "null" {
		t.Errorf("leases before any run: got %+v %s", l.Leases, l.Reservation)
	}
	f.e.Clock.Advance(7 * time.Second)
	runAttempt(t, f, j.ID, 10*time.Second, succeed) // task 0
	runAttempt(t, f, j.ID, 5*time.Second, fail)     // task 1, retried
	runAttempt(t, f, j.ID, 30*time.Second, succeed) // task 1
	lost := claimAttempt(t, f, j.ID)                // task 2, lost before it started: free
	if err := f.e.Jobs.AttemptLost(t.Context(), lost, "host vanished"); err != nil {
		t.Fatal(err)
	}
	runAttempt(t, f, j.ID, 20*time.Second, succeed) // task 2
	var m apiv1.JobMetrics
	f.member.Get(t, "/api/v1/jobs/"+j.ID+"/metrics").JSON(t, http.StatusOK, &m)
	if m.Status != "completed" || m.QueueTimeS != 7 || m.RunTimeS == nil || *m.RunTimeS != 65 {
		t.Errorf("times: got status %s queue %v run %v, want completed 7 65", m.Status, m.QueueTimeS, m.RunTimeS)
	}
	if m.AttemptsTotal != 5 || m.Attempts["succeeded"] != 3 || m.Attempts["failed"] != 1 || m.Attempts["lost"] != 1 {
		t.Errorf("attempts: got %d %v", m.AttemptsTotal, m.Attempts)
	}
	if m.Requeues != (apiv1.JobRequeues{Total: 2, Retries: 1, Free: 1}) || m.Tasks["succeeded"] != 3 {
		t.Errorf("requeues %+v, tasks %v", m.Requeues, m.Tasks)
	}
	if m.BilledSeconds != 240 || m.CostUSD <= 0 { // four metered attempts, 60 s minimum each
		t.Errorf("billing: got %d s, %v", m.BilledSeconds, m.CostUSD)
	}
	if d := m.TaskDurationsS; d.Count != 3 || *d.P50 != 20 || *d.P95 != 35 || *d.Max != 35 {
		t.Errorf("task durations: got %+v", d)
	}
	f.member.Get(t, "/api/v1/leases/"+j.ID).JSON(t, http.StatusOK, &l)
	if l.Leases != (apiv1.LeaseCounts{Total: 5, Done: 3, Failed: 0, Requeued: 2}) || string(l.Reservation) != "null" {
		t.Errorf("leases: got %+v %s", l.Leases, l.Reservation)
	}
	f.member.Get(t, "/api/v1/leases/job_nope").Want(t, http.StatusNotFound)
	f.member.Get(t, "/api/v1/jobs/job_nope/metrics").Want(t, http.StatusNotFound)
}
