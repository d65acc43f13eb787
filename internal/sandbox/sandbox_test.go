package sandbox_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/skiffhq/skiff/internal/sandbox"
)

func validSpec(t *testing.T) sandbox.Spec {
	dir := t.TempDir()
	return sandbox.Spec{
		AttemptID: "att_1", TaskID: "tsk_1", RootFS: dir, Args: []string{"/bin/runner"},
		WorkDir: filepath.Join(dir, "w"), CacheDir: filepath.Join(dir, "c"),
	}
}

func TestSpecValidate(t *testing.T) {
	t.Parallel()
	if err := func() *sandbox.Spec { s := validSpec(t); return &s }().Validate(); err != nil {
		t.Fatalf("valid spec: %v", err)
	}
	cases := map[string]func(*sandbox.Spec){
		"empty attempt id":   func(s *sandbox.Spec) { s.AttemptID = "" },
		"slash in id":        func(s *sandbox.Spec) { s.AttemptID = "a/b" },
		"leading dot id":     func(s *sandbox.Spec) { s.AttemptID = ".hidden" },
		"long id":            func(s *sandbox.Spec) { s.AttemptID = strings.Repeat("a", 129) },
		"relative rootfs":    func(s *sandbox.Spec) { s.RootFS = "rootfs" },
		"relative cache":     func(s *sandbox.Spec) { s.CacheDir = "cache" },
		"relative exe":       func(s *sandbox.Spec) { s.Args = []string{"runner"} },
		"relative cwd":       func(s *sandbox.Spec) { s.Cwd = "app" },
		"env name with =":    func(s *sandbox.Spec) { s.Env = map[string]string{"A=B": ""} },
		"env value with NUL": func(s *sandbox.Spec) { s.Env = map[string]string{"A": "\x00"} },
		"negative memory":    func(s *sandbox.Spec) { s.MemoryMB = -1 },
		"negative timeout":   func(s *sandbox.Spec) { s.Timeout = -time.Second },
	}
	for name, mutate := range cases {
		s := validSpec(t)
		mutate(&s)
		if err := s.Validate(); err == nil {
			t.Errorf("%s: got no error", name)
		}
	}
}

func TestEnvironProtocolVariablesWin(t *testing.T) {
	t.Parallel()
	s := validSpec(t)
	s.Env = map[string]string{"FOO": "bar", sandbox.EnvResult: "/forged", "PATH": "/custom"}
	env := sandbox.Environ(&s, sandbox.ContainerDirs())
	want := []string{
		"FOO=bar",
		"HOME=/run/skiff/scratch",
		"PATH=/custom",
		"SKIFF_ARTIFACT_DIR=/run/skiff/artifacts",
		"SKIFF_TASK_CACHE_DIR=/run/skiff/cache",
		"SKIFF_TASK_ID=tsk_1",
		"SKIFF_TASK_PAYLOAD=/run/skiff/payload/payload.json",
		"SKIFF_TASK_RESULT=/run/skiff/result/result.json",
		"SKIFF_TASK_SCRATCH_DIR=/run/skiff/scratch",
	}
	if !slices.Equal(env, want) {
		t.Errorf("env:\n got %q\nwant %q", env, want)
	}
}

func TestPrepare(t *testing.T) {
	t.Parallel()
	s := validSpec(t)
	s.Payload = []byte(`{"x":1}`)
	d, err := sandbox.Prepare(&s, nil, sandbox.HostDirs(&s))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(d.PayloadFile()); err != nil || string(b) != `{"x":1}` {
		t.Errorf("payload: got %q (%v)", b, err)
	}
	for _, dir := range []string{d.Result, d.Artifacts, d.Scratch, d.Cache} {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			t.Errorf("%s: not created (%v)", dir, err)
		}
	}
	if _, err := sandbox.Prepare(&s, nil, sandbox.HostDirs(&s)); err == nil {
		t.Errorf("second Prepare of the same work dir: got no error")
	}
}

func TestReadResult(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	secret := write("secret", "host secret")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name               string
		path               string
		wantData           string
		wantLarge, wantRej bool
	}{
		{"regular", write("ok", `{"a":1}`), `{"a":1}`, false, false},
		{"at the cap", write("cap", "12345678"), "12345678", false, false},
		{"over the cap", write("big", "123456789"), "", true, true},
		{"missing", filepath.Join(dir, "nope"), "", false, false},
		{"symlink", link, "", false, true},
		{"fifo", fifo, "", false, true}, // must not block
		{"directory", dir, "", false, true},
	}
	for _, c := range cases {
		got, err := sandbox.ReadResult(c.path, 8)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if string(got.Data) != c.wantData || got.TooLarge != c.wantLarge || (got.Rejected != "") != c.wantRej {
			t.Errorf("%s: got %+v, want data %q too_large=%v rejected=%v", c.name, got, c.wantData, c.wantLarge, c.wantRej)
		}
	}
}

func TestCollectArtifacts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	outside := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "sub/deeper"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "b.txt"), []byte("bb"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "sub/deeper/a.bin"), []byte("a"), 0o644))
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644))
	must(os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "link")))
	must(os.Symlink(outside, filepath.Join(dir, "dirlink"))) // must not be walked into
	must(syscall.Mkfifo(filepath.Join(dir, "sub/fifo"), 0o644))
	arts, skipped, err := sandbox.CollectArtifacts(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range arts {
		got = append(got, a.Path)
		if !strings.HasPrefix(a.HostPath, dir+"/") {
			t.Errorf("%s: host path %s outside %s", a.Path, a.HostPath, dir)
		}
	}
	if want := []string{"b.txt", "sub/deeper/a.bin"}; !slices.Equal(got, want) {
		t.Errorf("artifacts: got %q, want %q", got, want)
	}
	if arts[0].Size != 2 {
		t.Errorf("b.txt size: got %d, want 2", arts[0].Size)
	}
	if want := []string{"dirlink", "link", "sub/fifo"}; !slices.Equal(skipped, want) {
		t.Errorf("skipped: got %q, want %q", skipped, want)
	}
}

func TestNewOutcomeFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		code                     int
		reason                   sandbox.StopReason
		timedOut, killed, oomKil bool
	}{
		{0, sandbox.StopNone, false, false, false},
		{137, sandbox.StopNone, false, false, true},
		{137, sandbox.StopTimeout, true, false, false},
		{137, sandbox.StopCancel, false, true, false},
		{143, sandbox.StopTimeout, true, false, false},
		{1, sandbox.StopNone, false, false, false},
	}
	for _, c := range cases {
		o := sandbox.NewOutcome(c.code, c.reason, time.Time{}, time.Time{})
		if o.TimedOut != c.timedOut || o.Killed != c.killed || o.OOMKilled != c.oomKil {
			t.Errorf("exit %d %v: got timed_out=%v killed=%v oom=%v, want %v %v %v",
				c.code, c.reason, o.TimedOut, o.Killed, o.OOMKilled, c.timedOut, c.killed, c.oomKil)
		}
	}
}

// fakeStopper records signals and exits the "runner" on the signal it is
// told to honour.
type fakeStopper struct {
	exitOn    syscall.Signal // 0: never exits, even on SIGKILL
	exited    chan struct{}
	signals   []syscall.Signal
	abandoned bool
}

func (f *fakeStopper) Signal(_ context.Context, sig syscall.Signal) error {
	f.signals = append(f.signals, sig)
	if sig == f.exitOn {
		close(f.exited)
	}
	return nil
}

func (f *fakeStopper) Abandon(context.Context) {
	f.abandoned = true
	close(f.exited)
}

func TestSupervise(t *testing.T) {
	t.Parallel()
	esc := sandbox.Escalation{Timeout: 10 * time.Second, Grace: 5 * time.Second, KillWait: 10 * time.Second, Logger: discard()}
	cases := []struct {
		name        string
		exitOn      syscall.Signal
		cancelAfter time.Duration // 0: never
		selfExit    time.Duration // 0: never
		wantReason  sandbox.StopReason
		wantSignals []syscall.Signal
		wantElapsed time.Duration
		wantAbandon bool
	}{
		{"exits on its own", 0, 0, 3 * time.Second, sandbox.StopNone, nil, 3 * time.Second, false},
		{"timeout, SIGTERM honoured", syscall.SIGTERM, 0, 0, sandbox.StopTimeout, []syscall.Signal{syscall.SIGTERM}, 10 * time.Second, false},
		{"timeout, SIGTERM ignored", syscall.SIGKILL, 0, 0, sandbox.StopTimeout, []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}, 15 * time.Second, false},
		{"timeout, unkillable", 0, 0, 0, sandbox.StopTimeout, []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}, 25 * time.Second, true},
		{"cancel", syscall.SIGTERM, 2 * time.Second, 0, sandbox.StopCancel, []syscall.Signal{syscall.SIGTERM}, 2 * time.Second, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeStopper{exitOn: c.exitOn, exited: make(chan struct{})}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if c.cancelAfter > 0 {
					time.AfterFunc(c.cancelAfter, cancel)
				}
				if c.selfExit > 0 {
					time.AfterFunc(c.selfExit, func() { close(f.exited) })
				}
				start := time.Now()
				reason := sandbox.Supervise(ctx, f.exited, esc, f)
				if reason != c.wantReason {
					t.Errorf("reason: got %v, want %v", reason, c.wantReason)
				}
				if !slices.Equal(f.signals, c.wantSignals) {
					t.Errorf("signals: got %v, want %v", f.signals, c.wantSignals)
				}
				if el := time.Since(start); el != c.wantElapsed {
					t.Errorf("elapsed: got %v, want %v", el, c.wantElapsed)
				}
				if f.abandoned != c.wantAbandon {
					t.Errorf("abandoned: got %v, want %v", f.abandoned, c.wantAbandon)
				}
			})
		})
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
