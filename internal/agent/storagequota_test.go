package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/agent"
	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/sandbox/diskquota"
	"github.com/skiffhq/skiff/internal/sandbox/gvisor/gvisortest"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
)

// mountedBelow reports whether anything is mounted below dir.
func mountedBelow(t *testing.T, dir string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(b), " "+dir+"/")
}

// With a storage quota, an attempt that writes past its storage_gb ends
// with a storage error; the attempt's filesystem is gone once it is
// reported; and what a crashed host left mounted in the work root is
// reaped when the agent starts. Not parallel, like TestAgentGVisor.
func TestAgentGVisorStorageQuota(t *testing.T) {
	d := gvisortest.Driver(t, "skiff-agent-quota")
	img := newImage(t)
	fc := newFakeController(t)
	var workRoot string
	startAgent(t, fc, d, img, func(c *agent.Config) {
		workRoot = c.WorkRoot
		c.StorageQuota = true
		// A crash left an attempt's filesystem mounted.
		left := filepath.Join(c.WorkRoot, "att_left")
		if err := os.MkdirAll(left, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := diskquota.Create(context.Background(), diskquota.Options{Image: filepath.Join(left, sandbox.DiskImageName),
			Mount: filepath.Join(left, sandbox.DiskDirName), Bytes: 16 << 20}); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { _, _ = diskquota.Reap(workRoot) })
	fc.waitFor("registration", func() bool { return len(fc.registers) > 0 })
	if mountedBelow(t, workRoot) {
		t.Error("the crashed attempt's filesystem is still mounted after the agent started")
	}
	if _, err := os.Stat(filepath.Join(workRoot, "att_left")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the crashed attempt's directory is left: %v", err)
	}

	asg := assignment(t, img, sandboxtest.Payload{FillMB: 1100})
	asg.StorageGB, asg.MemoryMB, asg.CPU = 1, 256, 1
	fc.assign(asg)
	o, _ := fc.finished(asg.AttemptID)
	if o.ExitCode != 28 || !strings.Contains(o.StorageError, "storage quota of 1 GiB") || !strings.Contains(o.Stderr, "no space left on device") {
		t.Errorf("outcome: exit %d storage_error %q stderr %q; want ENOSPC and the storage error", o.ExitCode, o.StorageError, o.Stderr)
	}
	// The directory goes once the report is acknowledged.
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(workRoot, asg.AttemptID)); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the attempt's directory is not removed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if mountedBelow(t, workRoot) {
		t.Error("the attempt's filesystem is still mounted after its report")
	}
}

// With a storage quota, a project's cache mounts live on a filesystem of
// their own of CacheMountBytes: a runner writing past it gets ENOSPC and
// the attempt ends with a storage error that names the cache mount, while
// what it wrote below the cap stays for the project's next attempt. A
// volume a crash left mounted is unmounted when the agent starts, and the
// project's when it stops. Not parallel, like
// TestAgentGVisor.
func TestAgentGVisorCacheMountQuota(t *testing.T) {
	d := gvisortest.Driver(t, "skiff-agent-cmquota")
	img := newImage(t)
	fc := newFakeController(t)
	var root string
	stop := runAgent(t, fc, d, img, func(c *agent.Config) {
		root = filepath.Join(filepath.Dir(c.CacheRoot), "cache-mounts")
		c.CacheMountRoot, c.StorageQuota, c.CacheMountBytes = root, true, 32<<20
		// A crash left another project's volume mounted.
		if err := sandbox.EnsureVolume(context.Background(), filepath.Join(root, "prj_left"), 32<<20); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { stop(); _, _ = diskquota.Reap(root) })
	fc.waitFor("registration", func() bool { return len(fc.registers) > 0 })
	if mountedBelow(t, root) {
		t.Error("the cache-mount volume a crash left is still mounted after the agent started")
	}
	caches := []agentproto.CacheMount{{Name: "deps", Path: "/cache/deps"}}

	asg := assignment(t, img, sandboxtest.Payload{WriteFile: []string{"/cache/deps/kept"}, FillMB: 64, FillDir: "/cache/deps"})
	asg.CacheMounts = caches
	fc.assign(asg)
	o, _ := fc.finished(asg.AttemptID)
	if o.ExitCode != 28 || !strings.Contains(o.StorageError, "cache mount /cache/deps") || !strings.Contains(o.Stderr, "no space left on device") {
		t.Errorf("filling the cache mount: exit %d storage_error %q stderr %q; want ENOSPC and a storage error naming the cache mount", o.ExitCode, o.StorageError, o.Stderr)
	}
	if info, err := os.Stat(filepath.Join(root, asg.ProjectID+diskquota.ImageSuffix)); err != nil || info.Size() != 32<<20 {
		t.Errorf("the project's cache-mount image: %v; want one of 32 MiB", err)
	}

	asg = assignment(t, img, sandboxtest.Payload{ReadFile: []string{"/cache/deps/kept"}})
	asg.CacheMounts = caches
	fc.assign(asg)
	o, _ = fc.finished(asg.AttemptID)
	if o.ExitCode != 0 || o.StorageError != "" {
		t.Fatalf("second attempt: exit %d storage_error %q stderr %q", o.ExitCode, o.StorageError, o.Stderr)
	}
	if got := sandboxtest.DecodeReport(t, o.Result).Reads["/cache/deps/kept"]; got != "x" {
		t.Errorf("second attempt read %q from the cache mount, want what the first wrote (\"x\")", got)
	}

	stop()
	if mountedBelow(t, root) {
		t.Error("the cache-mount volume is still mounted after the agent stopped")
	}
}
