package sandboxtest

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/testlog"
)

// Run is the conformance suite: the runner protocol, exit codes, output
// streams, results, artifacts, timeouts and cancellation, identically for
// every driver. Driver-specific properties (isolation, limits) are tested
// beside each driver.
func Run(t *testing.T, d sandbox.Driver, f Fixtures) {
	cases := []struct {
		name string
		fn   func(*testing.T, sandbox.Driver, Fixtures)
	}{
		{"SuccessWithResult", testSuccessWithResult},
		{"ExitCodePassesThrough", testExitCode},
		{"StdoutStderrSeparated", testStreams},
		{"EnvAndPayload", testEnvAndPayload},
		{"Artifacts", testArtifacts},
		{"ResultSymlinkRejected", testResultSymlink},
		{"ResultSizeCap", testResultCap},
		{"NoResult", testNoResult},
		{"TimeoutSIGTERM", testTimeoutTerm},
		{"TimeoutEscalatesToSIGKILL", testTimeoutKill},
		{"CancelKills", testCancel},
		{"CacheSharedAcrossAttempts", testCacheShared},
		{"InvalidSpec", testInvalidSpec},
		{"CommandOnPath", testCommandOnPath},
		{"WorkDirNotReused", testWorkDirReuse},
		{"NothingOutlivesTheRunner", testLingeringChild},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, d, f)
		})
	}
}

// mustRun runs spec with a test deadline and fails on an infrastructure
// error.
func mustRun(t *testing.T, d sandbox.Driver, spec sandbox.Spec) *sandbox.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := d.Run(ctx, spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out
}

func wantExit(t *testing.T, out *sandbox.Outcome, code int) {
	t.Helper()
	if out.ExitCode != code {
		t.Fatalf("exit code: got %d, want %d (sandbox error %q)", out.ExitCode, code, out.SandboxError)
	}
}

func wantFlags(t *testing.T, out *sandbox.Outcome, timedOut, killed, oom bool) {
	t.Helper()
	if out.TimedOut != timedOut || out.Killed != killed || out.OOMKilled != oom {
		t.Errorf("flags: got timed_out=%v killed=%v oom=%v, want %v %v %v",
			out.TimedOut, out.Killed, out.OOMKilled, timedOut, killed, oom)
	}
}

func testSuccessWithResult(t *testing.T, d sandbox.Driver, f Fixtures) {
	var stdout testlog.Buffer
	spec := f.Spec(t, Payload{Stdout: "hello\n"})
	spec.Stdout = &stdout
	before := time.Now()
	out := mustRun(t, d, spec)
	wantExit(t, out, 0)
	wantFlags(t, out, false, false, false)
	if out.Result == nil {
		t.Fatalf("result: got none (rejected: %q), want the runner's report", out.ResultRejected)
	}
	r := DecodeReport(t, out.Result)
	if string(r.Payload) != string(spec.Payload) {
		t.Errorf("payload seen by runner: got %s, want %s", r.Payload, spec.Payload)
	}
	if got := stdout.String(); got != "hello\n" {
		t.Errorf("stdout: got %q, want %q", got, "hello\n")
	}
	if out.StartedAt.Before(before) || !out.EndedAt.After(out.StartedAt) || out.Duration() <= 0 {
		t.Errorf("times: got started %v ended %v, want before <= started < ended", out.StartedAt, out.EndedAt)
	}
}

func testExitCode(t *testing.T, d sandbox.Driver, f Fixtures) {
	for _, code := range []int{1, 3, 42} {
		out := mustRun(t, d, f.Spec(t, Payload{Exit: code}))
		wantExit(t, out, code)
		wantFlags(t, out, false, false, false)
		if out.Result == nil {
			t.Errorf("exit %d: result written before exiting was not collected", code)
		}
	}
}

func testStreams(t *testing.T, d sandbox.Driver, f Fixtures) {
	var stdout, stderr testlog.Buffer
	spec := f.Spec(t, Payload{
		Stdout:   "to-stdout\n",
		Stderr:   "to-stderr\n",
		Progress: []string{`{"pct":50}`, `{"pct":100,"msg":"done"}`},
	})
	spec.Stdout, spec.Stderr = &stdout, &stderr
	out := mustRun(t, d, spec)
	wantExit(t, out, 0)
	wantOut := "to-stdout\n" + sandbox.ProgressPrefix + `{"pct":50}` + "\n" + sandbox.ProgressPrefix + `{"pct":100,"msg":"done"}` + "\n"
	if got := stdout.String(); got != wantOut {
		t.Errorf("stdout: got %q, want %q", got, wantOut)
	}
	if got := stderr.String(); got != "to-stderr\n" {
		t.Errorf("stderr: got %q, want %q", got, "to-stderr\n")
	}
}

func testEnvAndPayload(t *testing.T, d sandbox.Driver, f Fixtures) {
	names := []string{sandbox.EnvPayload, sandbox.EnvResult, sandbox.EnvArtifactDir, sandbox.EnvScratchDir,
		sandbox.EnvCacheDir, sandbox.EnvTaskID, "PROJECT_VAR", "PATH", "HOME"}
	spec := f.Spec(t, Payload{Env: names})
	spec.Env = map[string]string{
		"PROJECT_VAR":     "value with spaces=and equals",
		sandbox.EnvTaskID: "forged", // the driver's value must win
	}
	out := mustRun(t, d, spec)
	wantExit(t, out, 0)
	r := DecodeReport(t, out.Result)
	if got := r.Env[sandbox.EnvTaskID]; got != spec.TaskID {
		t.Errorf("%s: got %q, want %q", sandbox.EnvTaskID, got, spec.TaskID)
	}
	if got, want := r.Env["PROJECT_VAR"], spec.Env["PROJECT_VAR"]; got != want {
		t.Errorf("PROJECT_VAR: got %q, want %q", got, want)
	}
	for _, n := range names {
		if r.Env[n] == "" {
			t.Errorf("%s: not set in the runner", n)
		}
	}
	if got := filepath.Base(r.Env[sandbox.EnvPayload]); got != sandbox.PayloadFileName {
		t.Errorf("%s: got %q, want a path to %s", sandbox.EnvPayload, r.Env[sandbox.EnvPayload], sandbox.PayloadFileName)
	}
	if string(r.Payload) != string(spec.Payload) {
		t.Errorf("payload: got %s, want %s", r.Payload, spec.Payload)
	}
}

func testArtifacts(t *testing.T, d sandbox.Driver, f Fixtures) {
	spec := f.Spec(t, Payload{
		Artifacts: map[string]string{"a.txt": "A", "sub/dir/b.txt": "BB"},
		Symlinks: map[string]string{
			"link-abs":   "/etc/hostname",
			"sub/escape": "../../../payload/payload.json",
		},
	})
	out := mustRun(t, d, spec)
	wantExit(t, out, 0)
	var got []string
	for _, a := range out.Artifacts {
		got = append(got, a.Path)
		b, err := os.ReadFile(a.HostPath)
		if err != nil {
			t.Errorf("artifact %s: %v", a.Path, err)
			continue
		}
		if int64(len(b)) != a.Size {
			t.Errorf("artifact %s: size got %d, want %d", a.Path, a.Size, len(b))
		}
		if rel, err := filepath.Rel(filepath.Join(spec.WorkDir, sandbox.ArtifactDirName), a.HostPath); err != nil || strings.HasPrefix(rel, "..") {
			t.Errorf("artifact %s: host path %s is outside the artifact dir", a.Path, a.HostPath)
		}
	}
	if want := []string{"a.txt", "sub/dir/b.txt"}; !slices.Equal(got, want) {
		t.Errorf("artifacts: got %q, want %q", got, want)
	}
	if want := []string{"link-abs", "sub/escape"}; !slices.Equal(out.SkippedArtifacts, want) {
		t.Errorf("skipped artifacts: got %q, want %q", out.SkippedArtifacts, want)
	}
}

// A process the runner left behind is stopped before the outcome is
// returned: nothing writes to the attempt's files once Run returned.
func testLingeringChild(t *testing.T, d sandbox.Driver, f Fixtures) {
	if f.Unisolated {
		t.Skip("plain processes: a child in its own session outlives the runner (the process driver is no sandbox)")
	}
	spec := f.Spec(t, Payload{Linger: "linger.txt"})
	out := mustRun(t, d, spec)
	wantExit(t, out, 0)
	path := filepath.Join(spec.WorkDir, sandbox.ArtifactDirName, "linger.txt")
	before, err := os.ReadFile(path)
	if err != nil || len(before) == 0 {
		t.Fatalf("the lingering child's file: %q, %v", before, err)
	}
	time.Sleep(300 * time.Millisecond)
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("the runner's child still wrote after Run returned: %d bytes then, %d bytes 300 ms later", len(before), len(after))
	}
}

func testResultSymlink(t *testing.T, d sandbox.Driver, f Fixtures) {
	out := mustRun(t, d, f.Spec(t, Payload{ResultLink: "/etc/passwd"}))
	wantExit(t, out, 0)
	if out.Result != nil || out.ResultRejected == "" {
		t.Errorf("result: got %q (rejected %q), want none and a rejection", out.Result, out.ResultRejected)
	}
}

func testResultCap(t *testing.T, d sandbox.Driver, f Fixtures) {
	spec := f.Spec(t, Payload{ResultPad: 4096})
	spec.MaxResultBytes = 1024
	out := mustRun(t, d, spec)
	wantExit(t, out, 0)
	if !out.ResultTooLarge || out.Result != nil {
		t.Errorf("over the cap: got too_large=%v result %d bytes, want too_large and no result", out.ResultTooLarge, len(out.Result))
	}
	spec = f.Spec(t, Payload{ResultPad: 4096})
	out = mustRun(t, d, spec) // default cap, 1 MiB
	if out.ResultTooLarge || len(out.Result) < 4096 {
		t.Errorf("under the default cap: got too_large=%v result %d bytes, want the whole result", out.ResultTooLarge, len(out.Result))
	}
}

func testNoResult(t *testing.T, d sandbox.Driver, f Fixtures) {
	out := mustRun(t, d, f.Spec(t, Payload{NoResult: true, Exit: 2}))
	wantExit(t, out, 2)
	if out.Result != nil || out.ResultRejected != "" || out.ResultTooLarge {
		t.Errorf("result: got %q (rejected %q), want none", out.Result, out.ResultRejected)
	}
}

// stopBound is how long a stop may take at most: the grace period plus
// generous room for a loaded CI machine.
func stopBound(f Fixtures) time.Duration { return f.Grace + 20*time.Second }

func testTimeoutTerm(t *testing.T, d sandbox.Driver, f Fixtures) {
	spec := f.Spec(t, Payload{SleepMS: 120_000})
	spec.Timeout = time.Second
	start := time.Now()
	out := mustRun(t, d, spec)
	if el := time.Since(start); el > spec.Timeout+stopBound(f) {
		t.Errorf("elapsed: got %v, want under %v", el, spec.Timeout+stopBound(f))
	}
	wantExit(t, out, 128+15)
	wantFlags(t, out, true, false, false)
	if out.Duration() < spec.Timeout {
		t.Errorf("duration: got %v, want at least the timeout %v", out.Duration(), spec.Timeout)
	}
}

func testTimeoutKill(t *testing.T, d sandbox.Driver, f Fixtures) {
	spec := f.Spec(t, Payload{IgnoreTerm: true, SleepMS: 120_000})
	spec.Timeout = time.Second
	start := time.Now()
	out := mustRun(t, d, spec)
	if el := time.Since(start); el > spec.Timeout+stopBound(f) {
		t.Errorf("elapsed: got %v, want under %v", el, spec.Timeout+stopBound(f))
	}
	// A SIGKILL we sent must not be mistaken for an OOM kill.
	wantExit(t, out, sandbox.ExitSIGKILL)
	wantFlags(t, out, true, false, false)
	if out.Duration() < spec.Timeout+f.Grace {
		t.Errorf("duration: got %v, want at least timeout+grace %v", out.Duration(), spec.Timeout+f.Grace)
	}
}

func testCancel(t *testing.T, d sandbox.Driver, f Fixtures) {
	spec := f.Spec(t, Payload{Stdout: "started\n", SleepMS: 120_000})
	ready := make(chan struct{})
	spec.Stdout = &notifyWriter{ch: ready}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-ready:
		case <-time.After(30 * time.Second):
		}
		cancel()
	}()
	start := time.Now()
	out, err := d.Run(ctx, spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if el := time.Since(start); el > 30*time.Second+stopBound(f) {
		t.Errorf("elapsed: got %v, want under %v", el, 30*time.Second+stopBound(f))
	}
	wantExit(t, out, 128+15)
	wantFlags(t, out, false, true, false)
}

// notifyWriter closes ch at the first write.
type notifyWriter struct {
	once sync.Once
	ch   chan struct{}
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.ch) })
	return len(p), nil
}

func testCacheShared(t *testing.T, d sandbox.Driver, f Fixtures) {
	holder := f.Spec(t, Payload{Flock: &Flock{Role: "hold", Name: "build.lock", HoldMS: 3000}})
	prober := f.Spec(t, Payload{Flock: &Flock{Role: "probe", Name: "build.lock"}})
	prober.CacheDir = holder.CacheDir
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	outs := make([]*sandbox.Outcome, 2)
	errs := make([]error, 2)
	for i, spec := range []sandbox.Spec{holder, prober} {
		wg.Go(func() { outs[i], errs[i] = d.Run(ctx, spec) })
	}
	wg.Wait()
	for i, out := range outs {
		if errs[i] != nil {
			t.Fatalf("attempt %d: Run: %v", i, errs[i])
		}
		wantExit(t, out, 0)
		if out.Result == nil {
			t.Fatalf("attempt %d: no result", i)
		}
	}
	if got := DecodeReport(t, outs[0].Result).Flock; got != "held" {
		t.Errorf("holder: got %q, want %q", got, "held")
	}
	// The probe saw the holder's announcement, so the cache directory is
	// shared; whether the lock excludes across attempts depends on the driver.
	got := DecodeReport(t, outs[1].Result).Flock
	want := "acquired"
	if f.SharedLocks {
		want = "blocked"
	}
	if got != want {
		t.Errorf("probe: got %q, want %q (Fixtures.SharedLocks=%v)", got, want, f.SharedLocks)
	}
}

func testInvalidSpec(t *testing.T, d sandbox.Driver, f Fixtures) {
	bad := map[string]func(*sandbox.Spec){
		"attempt id":    func(s *sandbox.Spec) { s.AttemptID = "../escape" },
		"no args":       func(s *sandbox.Spec) { s.Args = nil },
		"relative dirs": func(s *sandbox.Spec) { s.WorkDir = "work" },
		"env name":      func(s *sandbox.Spec) { s.Env = map[string]string{"A=B": "c"} },
	}
	for name, mutate := range bad {
		spec := f.Spec(t, Payload{})
		mutate(&spec)
		if _, err := d.Run(context.Background(), spec); err == nil {
			t.Errorf("%s: Run accepted an invalid spec", name)
		}
	}
}

// A runner command named without a path runs from the image's PATH, as
// users write ["python", "main.py"]; one found nowhere exits 127 and says
// why, an attempt that failed rather than a host error.
func testCommandOnPath(t *testing.T, d sandbox.Driver, f Fixtures) {
	spec := f.Spec(t, Payload{Stdout: "found\n"})
	spec.Args = []string{path.Base(RunnerPath)}
	spec.Env = map[string]string{"PATH": "/nowhere:" + path.Dir(RunnerPath)}
	wantExit(t, mustRun(t, d, spec), 0)

	var stderr testlog.Buffer
	spec = f.Spec(t, Payload{})
	spec.Args, spec.Stderr = []string{"no-such-command"}, &stderr
	out := mustRun(t, d, spec)
	wantExit(t, out, sandbox.ExitCommandNotFound)
	if !strings.Contains(stderr.String(), "no-such-command: command not found") || out.SandboxError == "" {
		t.Errorf("stderr %q, sandbox error %q: want the reason in both", stderr.String(), out.SandboxError)
	}
}

func testWorkDirReuse(t *testing.T, d sandbox.Driver, f Fixtures) {
	spec := f.Spec(t, Payload{})
	mustRun(t, d, spec)
	spec.AttemptID += "-again"
	if _, err := d.Run(context.Background(), spec); err == nil {
		t.Errorf("Run reused a work dir that already holds an attempt")
	}
}
