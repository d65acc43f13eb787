package gvisor

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
	"github.com/skiffhq/skiff/internal/testlog"
)

func TestConformance(t *testing.T) {
	d, f := newTestDriver(t)
	sandboxtest.Run(t, d, f)
}

func run(t testing.TB, d *Driver, spec sandbox.Spec) *sandbox.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := d.Run(ctx, spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out
}

func TestIsolation(t *testing.T) {
	d, f := newTestDriver(t)
	dirs := sandbox.ContainerDirs()
	spec := f.Spec(t, sandboxtest.Payload{
		ProcVersion: true,
		Interfaces:  true,
		Cwd:         true,
		WriteFile: []string{
			sandboxtest.RunnerPath + ".new",                                         // image root: read-only
			"/etc-new",                                                              // image root: read-only
			dirs.PayloadFile(),                                                      // payload: read-only
			"/tmp/x", dirs.Scratch + "/x", dirs.Cache + "/x", dirs.Artifacts + "/x", // writable
		},
		ReadFile: []string{"/proc/self/status"},
	})
	spec.Cwd = sandboxtest.RunnerWorkDir
	out := run(t, d, spec)
	if out.ExitCode != 0 {
		t.Fatalf("exit code: got %d, want 0 (%s)", out.ExitCode, out.SandboxError)
	}
	r := sandboxtest.DecodeReport(t, out.Result)
	if r.UID != RunnerUID || r.GID != RunnerGID {
		t.Errorf("uid:gid: got %d:%d, want %d:%d", r.UID, r.GID, RunnerUID, RunnerGID)
	}
	if !strings.Contains(r.ProcVersion, "gvisor") {
		t.Errorf("/proc/version: got %q, want a gVisor kernel", r.ProcVersion)
	}
	if r.Cwd != sandboxtest.RunnerWorkDir {
		t.Errorf("cwd: got %q, want %q", r.Cwd, sandboxtest.RunnerWorkDir)
	}
	if !slices.Equal(r.Interfaces, []string{"lo"}) {
		t.Errorf("interfaces: got %q, want only lo", r.Interfaces)
	}
	for path, wantOK := range map[string]bool{
		sandboxtest.RunnerPath + ".new": false,
		"/etc-new":                      false,
		dirs.PayloadFile():              false,
		"/tmp/x":                        true,
		dirs.Scratch + "/x":             true,
		dirs.Cache + "/x":               true,
		dirs.Artifacts + "/x":           true,
	} {
		errText, ok := r.WriteErrors[path]
		if !ok {
			t.Errorf("write %s: not attempted", path)
			continue
		}
		if gotOK := errText == ""; gotOK != wantOK {
			t.Errorf("write %s: got error %q, want writable=%v", path, errText, wantOK)
		}
	}
	if status := r.Reads["/proc/self/status"]; !strings.Contains(status, "CapEff:\t0000000000000000") {
		t.Errorf("capabilities: want none effective, got status:\n%s", status)
	}
	// The shared root filesystem on the host is untouched.
	if _, err := os.Stat(filepath.Join(f.RootFS, "etc-new")); err == nil {
		t.Errorf("the runner wrote into the host's root filesystem")
	}
}

func TestNoNetwork(t *testing.T) {
	d, f := newTestDriver(t)
	// A listener on the host's own non-loopback address: reachable from any
	// host process, and it must not be from the sandbox.
	addr := hostAddr(t)
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err != nil {
		t.Fatalf("host cannot reach its own listener: %v", err)
	} else {
		c.Close()
	}
	out := run(t, d, f.Spec(t, sandboxtest.Payload{Dial: ln.Addr().String()}))
	r := sandboxtest.DecodeReport(t, out.Result)
	if r.DialOK || r.DialError == "" {
		t.Errorf("dial %s from the sandbox: got ok=%v err=%q, want a failure", ln.Addr(), r.DialOK, r.DialError)
	}
}

// hostAddr is a non-loopback IPv4 address of this host, or 127.0.0.1.
func hostAddr(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	return "127.0.0.1" // the sandbox's loopback is its own
}

func TestNetworkRefusedWithoutEgress(t *testing.T) {
	d, f := newTestDriver(t)
	spec := f.Spec(t, sandboxtest.Payload{})
	spec.Network = true
	if _, err := d.Run(context.Background(), spec); err == nil {
		t.Fatalf("Run with Network and no Egress: got no error, want ErrNoEgress")
	}
}

func TestOOMKilled(t *testing.T) {
	d, f := newTestDriver(t)
	spec := f.Spec(t, sandboxtest.Payload{AllocMB: 1024, Stdout: "allocating\n"})
	spec.MemoryMB = 256
	out := run(t, d, spec)
	if out.ExitCode != sandbox.ExitSIGKILL || !out.OOMKilled || out.TimedOut || out.Killed {
		t.Errorf("got exit %d oom=%v timed_out=%v killed=%v, want 137 and only oom",
			out.ExitCode, out.OOMKilled, out.TimedOut, out.Killed)
	}
}

// TestLimitsApplied checks the sandbox cgroup while a runner sleeps; how
// the kernel enforces CPU quota is not timed here.
func TestLimitsApplied(t *testing.T) {
	d, f := newTestDriver(t)
	spec := f.Spec(t, sandboxtest.Payload{Stdout: "up\n", SleepMS: 60_000})
	spec.CPU, spec.MemoryMB, spec.PidsLimit = 0.5, 300, 20
	spec.Timeout = 30 * time.Second
	up := make(chan struct{})
	spec.Stdout = &closeOnWrite{ch: up}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan map[string]string, 1)
	go func() {
		defer cancel()
		select {
		case <-up:
		case <-time.After(30 * time.Second):
		}
		got <- readLimits(d.cgroupPath(spec.AttemptID))
	}()
	out, err := d.Run(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Killed {
		t.Errorf("the runner was not stopped by the test's cancel: %+v", out)
	}
	limits := <-got
	want := map[string]string{
		"memory": strconv.Itoa(300 << 20),
		"cpu":    "50000/100000",
		"pids":   strconv.Itoa(20 + DefaultPidsOverhead),
	}
	for k, v := range want {
		if limits[k] != v {
			t.Errorf("%s limit: got %q, want %q (all: %v)", k, limits[k], v, limits)
		}
	}
}

// readLimits reads memory, cpu and pids limits from cgroup v1 or v2.
func readLimits(cgPath string) map[string]string {
	out := map[string]string{}
	mounts, err := cgroupMounts()
	if err != nil {
		return out
	}
	read := func(m cgroupMount, file string) string {
		b, err := os.ReadFile(filepath.Join(m.hostPath(cgPath), file))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	for _, m := range mounts {
		if v := read(m, "memory.limit_in_bytes"); v != "" {
			out["memory"] = v
		}
		if v := read(m, "memory.max"); v != "" {
			out["memory"] = v
		}
		if q, p := read(m, "cpu.cfs_quota_us"), read(m, "cpu.cfs_period_us"); q != "" {
			out["cpu"] = q + "/" + p
		}
		if v := read(m, "cpu.max"); v != "" {
			out["cpu"] = strings.ReplaceAll(v, " ", "/")
		}
		if v := read(m, "pids.max"); v != "" {
			out["pids"] = v
		}
	}
	return out
}

type closeOnWrite struct {
	ch     chan struct{}
	closed bool
}

func (w *closeOnWrite) Write(p []byte) (int, error) {
	if !w.closed {
		w.closed = true
		close(w.ch)
	}
	return len(p), nil
}

func TestRunscErrorIsReported(t *testing.T) {
	d, f := newTestDriver(t)
	spec := f.Spec(t, sandboxtest.Payload{})
	spec.Args = []string{"/no/such/runner"}
	var stderr testlog.Buffer
	spec.Stderr = &stderr
	out := run(t, d, spec)
	if out.ExitCode != 128 || !strings.Contains(out.SandboxError, "/no/such/runner") || out.OOMKilled {
		t.Errorf("got exit %d oom=%v sandbox error %q, want 128 and an error naming the path", out.ExitCode, out.OOMKilled, out.SandboxError)
	}
	if !strings.Contains(stderr.String(), "/no/such/runner") {
		t.Errorf("stderr: got %q, want runsc's error for the user", stderr.String())
	}
}

// TestCleanupRemovesLeftovers leaves a created (never started) container
// and an empty cgroup behind, as a crashed agent would, and expects Cleanup
// to remove both, and the cgroup parent itself.
func TestCleanupRemovesLeftovers(t *testing.T) {
	d, f := newTestDriver(t)
	spec := f.Spec(t, sandboxtest.Payload{})
	host, err := sandbox.Prepare(&spec, &sandbox.Owner{UID: RunnerUID, GID: RunnerGID}, sandbox.ContainerDirs())
	if err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(spec.WorkDir, "bundle")
	if err := writeBundle(bundle, bundleParams{Spec: &spec, Host: host, CgroupsPath: d.cgroupPath(spec.AttemptID), NoFile: 1024}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Not d.runsc.exec: the sandbox that create leaves running would hold
	// its output pipes open.
	create := exec.CommandContext(ctx, d.cfg.RunscPath, d.runsc.args("none", "create", "--bundle", bundle, spec.AttemptID)...)
	if err := create.Run(); err != nil {
		t.Fatalf("runsc create: %v", err)
	}
	t.Cleanup(func() { d.runsc.forceDelete(context.Background(), spec.AttemptID) }) // if the test fails early
	stray := "/" + d.cfg.CgroupParent + "/stray"
	mounts, err := cgroupMounts()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mounts {
		if fi, err := os.Stat(m.dir); err == nil && fi.IsDir() && strings.HasSuffix(m.dir, "/memory") {
			if err := os.MkdirAll(m.hostPath(stray), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	cs, err := d.runsc.list(ctx)
	if err != nil || len(cs) != 1 {
		t.Fatalf("before Cleanup: got containers %v (%v), want the created one", cs, err)
	}
	if !d.hasState(spec.AttemptID) {
		t.Fatalf("hasState(%s) = false for a created container; state dir names changed?", spec.AttemptID)
	}
	if err := d.Cleanup(ctx); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	for _, p := range []string{d.cgroupPath(spec.AttemptID), stray, "/" + d.cfg.CgroupParent} {
		if ok, err := cgroupExists(p); err != nil || ok {
			t.Errorf("cgroup %s: still there after Cleanup (%v)", p, err)
		}
	}
	// assertNoLeaks (at cleanup) checks runsc list.
}

// BenchmarkTrivialRun measures a whole Run (prepare, start, exit, teardown)
// of a runner that does nothing: the floor of every attempt's cost. Its
// start-to-exit span, the floor of every attempt's metered time, is the
// start-to-exit-ms metric.
func BenchmarkTrivialRun(b *testing.B) {
	d, f := newTestDriver(b)
	b.Logf("platform %s", d.cfg.Platform)
	var span time.Duration
	for b.Loop() {
		out := run(b, d, f.Spec(b, sandboxtest.Payload{NoResult: true}))
		if out.ExitCode != 0 {
			b.Fatalf("exit code %d: %s", out.ExitCode, out.SandboxError)
		}
		span += out.Duration()
	}
	b.ReportMetric(float64(span.Microseconds())/1000/float64(b.N), "start-to-exit-ms/op")
}

// A clean exit leaves runsc's teardown to runsc: the outcome comes back
// without waiting for a second runsc process, the container's state is
// already gone when Run returns, and the teardown handed to later leaves no
// container and no cgroup (assertNoLeaks waits for it). A run the driver
// had to stop is torn down before Run returns.
func TestTeardownOffTheCriticalPath(t *testing.T) {
	d, f := newTestDriver(t)
	spec := f.Spec(t, sandboxtest.Payload{Stdout: "ok"})
	out := run(t, d, spec)
	if out.ExitCode != 0 || out.Stages.Teardown != 0 || out.Stages.Sandbox <= 0 || out.Stages.Prepare <= 0 {
		t.Fatalf("clean run: exit %d, stages %+v; want 0, no teardown before the outcome, the others measured", out.ExitCode, out.Stages)
	}
	if d.hasState(spec.AttemptID) {
		t.Errorf("runsc left state for %s after a clean exit", spec.AttemptID)
	}
	d.later.Wait()
	if ok, err := cgroupExists(d.cgroupPath(spec.AttemptID)); err != nil || ok {
		t.Errorf("cgroup of a clean run still there after its teardown (%v)", err)
	}

	timedOut := f.Spec(t, sandboxtest.Payload{SleepMS: 60000})
	timedOut.Timeout = time.Second
	out = run(t, d, timedOut)
	if !out.TimedOut || out.Stages.Teardown <= 0 {
		t.Fatalf("timed-out run: timed out %v, stages %+v; want a teardown before the outcome", out.TimedOut, out.Stages)
	}
	cs, err := d.runsc.list(t.Context())
	if err != nil || len(cs) != 0 {
		t.Errorf("after a timed-out run returned: containers %v (%v), want none", cs, err)
	}
}
