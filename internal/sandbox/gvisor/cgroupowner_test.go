package gvisor

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCleanupRemovesDeadOwnersCgroups: Cleanup removes the cgroup parent
// (and its empty children) of a driver whose process died, found through
// the registry, and leaves alone the parent of one still alive.
func TestCleanupRemovesDeadOwnersCgroups(t *testing.T) {
	d, _ := newTestDriver(t)
	reg := t.TempDir()
	d.cfg.CgroupRegistry = reg
	dead := "skiff-test-dead-" + strings.ToLower(rand.Text()[:10])
	live := "skiff-test-live-" + strings.ToLower(rand.Text()[:10])
	for _, p := range []string{dead, live} {
		makeCgroup(t, "/"+p+"/att_1")
		t.Cleanup(func() { _ = removeCgroup("/" + p) })
	}
	// A claim whose file is closed is what a killed process leaves: the
	// kernel dropped its lock.
	f, err := claimCgroupParent(reg, dead)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	holder, err := claimCgroupParent(reg, live)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := claimCgroupParent(reg, live); err == nil {
		t.Error("a second claim of a live parent succeeded")
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d.Cleanup(ctx); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if ok, err := cgroupExists("/" + dead); err != nil || ok {
		t.Errorf("dead owner's cgroup parent: still there after Cleanup (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(reg, dead+ownerSuffix)); !os.IsNotExist(err) {
		t.Errorf("dead owner's registry file: %v, want it removed", err)
	}
	if ok, err := cgroupExists("/" + live + "/att_1"); err != nil || !ok {
		t.Errorf("live owner's cgroup: removed by Cleanup (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(reg, d.cfg.CgroupParent+ownerSuffix)); err != nil {
		t.Errorf("the driver's own claim: %v", err)
	}
}

// makeCgroup makes cgPath in every cgroup hierarchy.
func makeCgroup(t *testing.T, cgPath string) {
	t.Helper()
	mounts, err := cgroupMounts()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mounts {
		if dir := m.hostPath(cgPath); dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
}
