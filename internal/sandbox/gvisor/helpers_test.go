package gvisor

import (
	"context"
	"crypto/rand"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
	"github.com/skiffhq/skiff/internal/testenv"
)

// testGrace keeps the stop tests short.
const testGrace = time.Second

// testRunsc is the runsc the tests use: $SKIFF_RUNSC or the pinned path.
func testRunsc() string {
	if p := os.Getenv("SKIFF_RUNSC"); p != "" {
		return p
	}
	return DefaultRunscPath
}

// newTestDriver returns a driver with its own state dir and cgroup parent,
// and fixtures for it. When the test ends it checks that nothing leaked (no
// container in `runsc list`, no cgroup under the parent), then cleans up.
// It skips without root or runsc.
func newTestDriver(t testing.TB) (*Driver, sandboxtest.Fixtures) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "gvisor: needs root (runsc applies cgroup limits only as root)")
	}
	runscPath := testRunsc()
	if _, err := os.Stat(runscPath); err != nil {
		testenv.Skipf(t, "gvisor: needs runsc at %s (set SKIFF_RUNSC; setup installs it): %v", runscPath, err)
	}
	parent := "skiff-test-" + strings.ToLower(rand.Text()[:10])
	d, err := New(Config{
		RunscPath:    runscPath,
		StateDir:     t.TempDir(),
		CgroupParent: parent,
		Grace:        testGrace,
		KillWait:     5 * time.Second,
		Logger:       slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		assertNoLeaks(t, d)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := d.Cleanup(ctx); err != nil {
			t.Errorf("Cleanup: %v", err)
		}
		if err := removeCgroup("/" + parent); err != nil {
			t.Errorf("remove test cgroup parent: %v", err)
		}
	})
	return d, sandboxtest.Fixtures{RootFS: sandboxtest.RunnerRootFS(t), Grace: testGrace}
}

// assertNoLeaks fails the test if a container or an attempt cgroup is left.
func assertNoLeaks(t testing.TB, d *Driver) {
	t.Helper()
	d.later.Wait() // the teardowns Run handed off must have left nothing either
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := d.runsc.list(ctx)
	if err != nil {
		t.Errorf("runsc list: %v", err)
	}
	for _, c := range cs {
		t.Errorf("leaked container %s (%s)", c.ID, c.Status)
	}
	mounts, err := cgroupMounts()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mounts {
		dir := m.hostPath("/" + d.cfg.CgroupParent)
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() {
				t.Errorf("leaked cgroup %s/%s", dir, e.Name())
			}
		}
	}
}

// testWriter sends driver logs to the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// cgroupExists reports whether cgPath exists in any hierarchy.
func cgroupExists(cgPath string) (bool, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return false, err
	}
	for _, m := range mounts {
		dir := m.hostPath(cgPath)
		if dir == "" {
			continue
		}
		if _, err := os.Stat(dir); err == nil {
			return true, nil
		}
	}
	return false, nil
}
