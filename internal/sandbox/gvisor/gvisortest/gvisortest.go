// Package gvisortest gives other packages' tests a real gVisor driver.
package gvisortest

import (
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/sandbox/gvisor"
	"github.com/skiffhq/skiff/internal/testenv"
)

// Driver returns a gVisor driver with its own state dir and cgroup parent
// (named after prefix), cleaned up when the test ends. It skips the test
// (testenv.Skip) unless it runs as root with the pinned runsc (SKIFF_RUNSC or
// gvisor.DefaultRunscPath) present.
func Driver(t testing.TB, prefix string) *gvisor.Driver {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "gvisor: needs root")
	}
	runsc := os.Getenv("SKIFF_RUNSC")
	if runsc == "" {
		runsc = gvisor.DefaultRunscPath
	}
	if _, err := os.Stat(runsc); err != nil {
		testenv.Skipf(t, "gvisor: needs runsc at %s: %v", runsc, err)
	}
	parent := prefix + "-" + strings.ToLower(rand.Text()[:10])
	d, err := gvisor.New(gvisor.Config{RunscPath: runsc, StateDir: t.TempDir(), CgroupParent: parent, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := d.Cleanup(ctx); err != nil {
			t.Errorf("Cleanup: %v", err)
		}
		// The test's cgroup parent is empty now; rmdir it where it exists.
		_ = exec.Command("sh", "-c", "rmdir /sys/fs/cgroup/"+parent+" /sys/fs/cgroup/*/"+parent+" 2>/dev/null").Run()
	})
	return d
}
