package agent_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/agent"
	"github.com/skiffhq/skiff/internal/agent/agenthttp"
	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/ociimage"
	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/sandbox/gvisor/gvisortest"
	"github.com/skiffhq/skiff/internal/sandbox/process"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
)

const testToken = "host-token-for-tests"

// fakeController implements the three agentproto endpoints over an
// in-memory queue.
type fakeController struct {
	t   *testing.T
	srv *httptest.Server

	mu        sync.Mutex
	queue     []agentproto.Assignment
	cancel    []string
	events    map[string][]agentproto.AttemptEvent
	fail      map[agentproto.EventKind]int // events of this kind to answer 503
	failed    int
	registers []agentproto.RegisterRequest
	leases    []agentproto.PollRequest
	changed   chan struct{}
	// intercept, when set, sees every authorized request first; a non-zero
	// status is answered with code in an agentproto.ErrorResponse instead
	// of serving the request. It runs with mu held.
	intercept func(path string, body []byte) (status int, code string)
}

func newFakeController(t *testing.T) *fakeController {
	fc := &fakeController{t: t, events: map[string][]agentproto.AttemptEvent{}, fail: map[agentproto.EventKind]int{}, changed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+agentproto.RegisterPath, fc.register)
	mux.HandleFunc("POST "+agentproto.PollPath, fc.lease)
	mux.HandleFunc("POST /agent/v1/attempts/{id}/events", fc.event)
	fc.srv = httptest.NewServer(fc.auth(mux))
	t.Cleanup(fc.srv.Close)
	return fc
}

func (fc *fakeController) auth(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+testToken || r.Header.Get(agentproto.VersionHeader) != strconv.Itoa(agentproto.ProtocolVersion) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "read body", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		fc.mu.Lock()
		status, code := 0, ""
		if fc.intercept != nil {
			status, code = fc.intercept(r.URL.Path, body)
		}
		fc.mu.Unlock()
		if status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(agentproto.ErrorResponse{Code: code, Message: "intercepted by the test"})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// notify wakes waiters; call with mu held.
func (fc *fakeController) notify() {
	close(fc.changed)
	fc.changed = make(chan struct{})
}

func (fc *fakeController) register(w http.ResponseWriter, r *http.Request) {
	var req agentproto.RegisterRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.ProtocolVersion != agentproto.ProtocolVersion {
		http.Error(w, "bad register", http.StatusBadRequest)
		return
	}
	fc.mu.Lock()
	fc.registers = append(fc.registers, req)
	fc.notify()
	fc.mu.Unlock()
	writeJSON(w, agentproto.RegisterResponse{ProtocolVersion: agentproto.ProtocolVersion, HostID: "wkr_test", HeartbeatIntervalS: 10})
}

func (fc *fakeController) lease(w http.ResponseWriter, r *http.Request) {
	var req agentproto.PollRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.HostID != "wkr_test" {
		http.Error(w, "bad lease", http.StatusBadRequest)
		return
	}
	deadline := time.After(time.Duration(req.WaitS)*time.Second + 100*time.Millisecond)
	for {
		fc.mu.Lock()
		fc.leases = append(fc.leases, req)
		if len(fc.queue) > 0 || len(fc.cancel) > 0 {
			resp := agentproto.PollResponse{Assignments: fc.queue, Cancel: fc.cancel}
			fc.queue, fc.cancel = nil, nil
			fc.mu.Unlock()
			writeJSON(w, resp)
			return
		}
		ch := fc.changed
		fc.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			writeJSON(w, agentproto.PollResponse{})
			return
		case <-r.Context().Done():
			return
		}
	}
}

func (fc *fakeController) event(w http.ResponseWriter, r *http.Request) {
	var ev agentproto.AttemptEvent
	if err := json.NewDecoder(r.Body).Decode(&ev); err != nil || ev.AttemptID != r.PathValue("id") {
		http.Error(w, "bad event", http.StatusBadRequest)
		return
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.fail[ev.Kind] > 0 {
		fc.fail[ev.Kind]--
		fc.failed++
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	}
	evs := fc.events[ev.AttemptID]
	if n := len(evs); n > 0 && evs[n-1].Seq >= ev.Seq {
		writeJSON(w, agentproto.EventResponse{}) // duplicate
		return
	}
	fc.events[ev.AttemptID] = append(evs, ev)
	fc.notify()
	writeJSON(w, agentproto.EventResponse{})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (fc *fakeController) assign(a agentproto.Assignment) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.queue = append(fc.queue, a)
	fc.notify()
}

func (fc *fakeController) cancelAttempt(id string) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.cancel = append(fc.cancel, id)
	fc.notify()
}

// waitEvent waits for an event of attempt id that ok accepts and returns
// the attempt's events up to then.
func (fc *fakeController) waitEvent(id string, ok func(agentproto.AttemptEvent) bool) []agentproto.AttemptEvent {
	fc.t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		fc.mu.Lock()
		evs := append([]agentproto.AttemptEvent(nil), fc.events[id]...)
		ch := fc.changed
		fc.mu.Unlock()
		for _, ev := range evs {
			if ok(ev) {
				return evs
			}
		}
		select {
		case <-ch:
		case <-timeout:
			fc.t.Fatalf("attempt %s: timed out waiting for an event; have %+v", id, evs)
		}
	}
}

func (fc *fakeController) finished(id string) (*agentproto.Outcome, []agentproto.AttemptEvent) {
	fc.t.Helper()
	evs := fc.waitEvent(id, func(ev agentproto.AttemptEvent) bool { return ev.Kind == agentproto.EventFinished })
	last := evs[len(evs)-1]
	if last.Kind != agentproto.EventFinished || last.Outcome == nil {
		fc.t.Fatalf("last event: got %+v, want finished with an outcome", last)
	}
	return last.Outcome, evs
}

// image is a test image and a cache it is already unpacked in. Sharing
// one pre-filled cache keeps parallel tests from writing the runner binary
// while another forks: a child inheriting the open file makes exec fail
// with ETXTBSY (golang/go#22315).
type image struct {
	layoutDir, digest string
	cache             *ociimage.Cache
}

func newImage(t *testing.T) image {
	t.Helper()
	layoutDir, digest := sandboxtest.RunnerImage(t)
	c := &ociimage.Cache{Root: filepath.Join(t.TempDir(), "images"), MountPoints: sandbox.MountPoints()}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Unpack(ctx, layoutDir, digest); err != nil {
		t.Fatal(err)
	}
	return image{layoutDir, digest, c}
}

// startAgent runs an agent against fc until the test ends; opts adjust
// its configuration.
func startAgent(t *testing.T, fc *fakeController, d sandbox.Driver, img image, opts ...func(*agent.Config)) {
	t.Helper()
	t.Cleanup(runAgent(t, fc, d, img, opts...))
}

// runAgent runs an agent against fc until the returned stop (which may be
// called more than once) returns.
func runAgent(t *testing.T, fc *fakeController, d sandbox.Driver, img image, opts ...func(*agent.Config)) (stop func()) {
	t.Helper()
	dir := t.TempDir()
	cfg := agent.Config{
		Controller:       &agenthttp.Client{BaseURL: fc.srv.URL, Token: testToken},
		Driver:           d,
		Images:           img.cache,
		WorkRoot:         filepath.Join(dir, "work"),
		CacheRoot:        filepath.Join(dir, "cache"),
		Slots:            4,
		LayoutsInPlace:   true,
		PollWait:         time.Second,
		MinBackoff:       20 * time.Millisecond,
		MaxBackoff:       200 * time.Millisecond,
		ProgressInterval: time.Second,
		ShutdownGrace:    30 * time.Second,
		Logger:           slog.New(slog.NewTextHandler(testWriter{t}, nil)),
	}
	for _, o := range opts {
		o(&cfg)
	}
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("Run: got %v, want context.Canceled", err)
			}
		})
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func assignment(t *testing.T, img image, p sandboxtest.Payload) agentproto.Assignment {
	return agentproto.Assignment{
		AttemptID:      "att_" + strings.ToLower(rand.Text()),
		TaskID:         "tsk_" + strings.ToLower(rand.Text()),
		JobID:          "job_1",
		ProjectID:      "prj_1",
		ImageDigest:    img.digest,
		ImageLayoutDir: img.layoutDir,
		Payload:        p.Encode(t),
		TimeoutS:       60,
		Env:            map[string]string{"PROJECT_VAR": "yes"},
	}
}

func processDriver(t *testing.T) sandbox.Driver {
	d, err := process.New(process.Config{AllowUnisolated: true, Grace: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestAgentProcess(t *testing.T) {
	img := newImage(t)

	t.Run("success with result", func(t *testing.T) {
		t.Parallel()
		fc := newFakeController(t)
		startAgent(t, fc, processDriver(t), img)
		asg := assignment(t, img, sandboxtest.Payload{Stdout: "hello\n", Stderr: "warn\n", Env: []string{"PROJECT_VAR", "RUNNER_IMAGE", sandbox.EnvTaskID}})
		fc.assign(asg)
		o, evs := fc.finished(asg.AttemptID)
		if o.ExitCode != 0 || o.HostError != "" || o.TimedOut || o.Killed {
			t.Fatalf("outcome: got %+v, want a clean exit 0", o)
		}
		if evs[0].Kind != agentproto.EventStarted || evs[0].Seq != 1 || evs[0].HostID != "wkr_test" {
			t.Errorf("first event: got %+v, want started seq 1 from wkr_test", evs[0])
		}
		r := sandboxtest.DecodeReport(t, o.Result)
		want := map[string]string{"PROJECT_VAR": "yes", "RUNNER_IMAGE": "1", sandbox.EnvTaskID: asg.TaskID}
		for k, v := range want {
			if r.Env[k] != v {
				t.Errorf("runner env %s: got %q, want %q", k, r.Env[k], v)
			}
		}
		if !strings.Contains(o.Stdout, "hello") || !strings.Contains(o.Stderr, "warn") {
			t.Errorf("streams: got stdout %q stderr %q, want hello and warn", o.Stdout, o.Stderr)
		}
		if o.EndedAt.Before(o.StartedAt) || o.StartedAt.IsZero() {
			t.Errorf("times: got %v..%v, want a started_at before ended_at", o.StartedAt, o.EndedAt)
		}
		if regs := fc.registrations(); len(regs) != 1 || regs[0].Driver != "process" || len(regs[0].Running) != 0 {
			t.Errorf("registrations: got %+v, want one, from the process driver, with nothing running", regs)
		}
	})

	t.Run("non-zero exit", func(t *testing.T) {
		t.Parallel()
		fc := newFakeController(t)
		startAgent(t, fc, processDriver(t), img)
		asg := assignment(t, img, sandboxtest.Payload{Stderr: strings.Repeat("e", 3000) + "LAST", Exit: 3})
		fc.assign(asg)
		o, _ := fc.finished(asg.AttemptID)
		if o.ExitCode != 3 || o.HostError != "" {
			t.Errorf("exit: got %d (host error %q), want 3", o.ExitCode, o.HostError)
		}
		if len(o.Stderr) != agentproto.StderrTailBytes || !strings.HasSuffix(o.Stderr, "LAST") {
			t.Errorf("stderr tail: got %d bytes ending %q, want %d ending LAST", len(o.Stderr), o.Stderr[max(0, len(o.Stderr)-10):], agentproto.StderrTailBytes)
		}
	})

	t.Run("progress lines", func(t *testing.T) {
		t.Parallel()
		fc := newFakeController(t)
		startAgent(t, fc, processDriver(t), img)
		lines := []string{`{"step":1}`, `{"step":2}`, `{"step":3}`}
		asg := assignment(t, img, sandboxtest.Payload{Stdout: strings.Repeat("x", 11<<10) + "\n", Progress: lines, SleepMS: 1500})
		fc.assign(asg)
		o, evs := fc.finished(asg.AttemptID)
		var progress []string
		for _, ev := range evs {
			if ev.Kind == agentproto.EventProgress {
				progress = append(progress, string(ev.Progress))
			}
		}
		if len(progress) < 1 || len(progress) > 2 {
			t.Fatalf("progress events: got %q, want 1 or 2 (throttled to one a second)", progress)
		}
		if got := progress[len(progress)-1]; got != lines[2] {
			t.Errorf("last progress event: got %s, want %s", got, lines[2])
		}
		if got := string(evs[len(evs)-1].Progress); got != lines[2] {
			t.Errorf("finished progress: got %s, want %s", got, lines[2])
		}
		if len(o.Stdout) != agentproto.StdoutMaxBytes || !o.StdoutTruncated {
			t.Errorf("stdout: got %d bytes truncated=%v, want %d truncated", len(o.Stdout), o.StdoutTruncated, agentproto.StdoutMaxBytes)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		fc := newFakeController(t)
		startAgent(t, fc, processDriver(t), img)
		asg := assignment(t, img, sandboxtest.Payload{SleepMS: 60_000})
		asg.TimeoutS = 1
		fc.assign(asg)
		o, _ := fc.finished(asg.AttemptID)
		if !o.TimedOut || o.Killed || o.HostError != "" {
			t.Errorf("outcome: got timed_out=%v killed=%v host_error=%q, want timed out only", o.TimedOut, o.Killed, o.HostError)
		}
	})

	t.Run("cancel from controller", func(t *testing.T) {
		t.Parallel()
		fc := newFakeController(t)
		startAgent(t, fc, processDriver(t), img)
		asg := assignment(t, img, sandboxtest.Payload{Progress: []string{`{"running":true}`}, SleepMS: 60_000})
		fc.assign(asg)
		// A progress event proves the runner runs.
		fc.waitEvent(asg.AttemptID, func(ev agentproto.AttemptEvent) bool { return ev.Kind == agentproto.EventProgress })
		fc.cancelAttempt(asg.AttemptID)
		o, _ := fc.finished(asg.AttemptID)
		if !o.Killed || o.TimedOut || o.HostError != "" {
			t.Errorf("outcome: got killed=%v timed_out=%v host_error=%q, want killed by the controller", o.Killed, o.TimedOut, o.HostError)
		}
	})

	t.Run("finished report retried after 503", func(t *testing.T) {
		t.Parallel()
		fc := newFakeController(t)
		fc.fail[agentproto.EventFinished] = 1
		startAgent(t, fc, processDriver(t), img)
		asg := assignment(t, img, sandboxtest.Payload{})
		fc.assign(asg)
		o, evs := fc.finished(asg.AttemptID)
		if o.ExitCode != 0 {
			t.Errorf("exit: got %d, want 0", o.ExitCode)
		}
		fc.mu.Lock()
		failed := fc.failed
		fc.mu.Unlock()
		if failed != 1 {
			t.Errorf("503 answers: got %d, want 1", failed)
		}
		if n := len(evs); evs[n-1].Seq != int64(n) {
			t.Errorf("seq of finished: got %d, want %d", evs[n-1].Seq, n)
		}
	})

	t.Run("an image the host cannot get is a host error", func(t *testing.T) {
		t.Parallel()
		fc := newFakeController(t)
		startAgent(t, fc, processDriver(t), img)
		asg := assignment(t, img, sandboxtest.Payload{})
		// An image this host has not unpacked, by URL from a controller
		// that does not serve it.
		asg.ImageDigest = "sha256:" + strings.Repeat("0", 64)
		asg.ImageLayoutDir, asg.ImageURL = "", "/agent/v1/attempts/"+asg.AttemptID+"/image"
		fc.assign(asg)
		o, _ := fc.finished(asg.AttemptID)
		if o.HostError == "" || !strings.Contains(o.HostError, "image") {
			t.Errorf("host error: got %q, want one about the image", o.HostError)
		}
	})
}

// TestAgentGVisor is not parallel: its image unpack writes an executable,
// which must not overlap the process driver's forks (see image).
func TestAgentGVisor(t *testing.T) {
	d := gvisortest.Driver(t, "skiff-agent-test")
	img := newImage(t)
	fc := newFakeController(t)
	startAgent(t, fc, d, img)
	asg := assignment(t, img, sandboxtest.Payload{Progress: []string{`{"pct":50}`}, Cwd: true, Exit: 0})
	asg.Cwd = sandboxtest.RunnerWorkDir
	asg.MemoryMB, asg.CPU = 256, 1
	fc.assign(asg)
	o, evs := fc.finished(asg.AttemptID)
	if o.ExitCode != 0 || o.HostError != "" || o.SandboxError != "" {
		t.Fatalf("outcome: got %+v, want exit 0", o)
	}
	if r := sandboxtest.DecodeReport(t, o.Result); r.Cwd != sandboxtest.RunnerWorkDir {
		t.Errorf("cwd: got %q, want %q", r.Cwd, sandboxtest.RunnerWorkDir)
	}
	if got := string(evs[len(evs)-1].Progress); got != `{"pct":50}` {
		t.Errorf("progress: got %s, want {\"pct\":50}", got)
	}
}
