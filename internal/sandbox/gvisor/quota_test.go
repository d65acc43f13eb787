package gvisor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/sandbox/diskquota"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
)

// quotaSpec is f's spec for p with a storage quota of mb MiB; the test's
// end unmounts the attempt's filesystem before its directory goes.
func quotaSpec(t *testing.T, f sandboxtest.Fixtures, p sandboxtest.Payload, mb int64) sandbox.Spec {
	t.Helper()
	spec := f.Spec(t, p)
	spec.StorageBytes = mb << 20
	t.Cleanup(func() {
		if err := sandbox.RemoveWorkDir(spec.WorkDir); err != nil {
			t.Errorf("remove work dir: %v", err)
		}
		assertNotMounted(t, filepath.Join(spec.WorkDir, sandbox.DiskDirName))
	})
	return spec
}

// assertNotMounted fails the test if anything is mounted at or below dir.
func assertNotMounted(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), " "+dir) {
		t.Errorf("%s is still mounted", dir)
	}
}

// allocated is the bytes the host has given the file at path: its blocks,
// not its length. It is measured on the quota's own image rather than as
// the growth of the whole filesystem, which every other test package
// running beside this one writes to as well (CI saw 91 MiB "growth" from a
// 64 MiB quota that way).
func allocated(t *testing.T, path string) int64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// A runner that writes past its storage quota gets ENOSPC inside the
// sandbox, the outcome says so, and the host's filesystem grows by at most
// the quota.
func TestGVisorStorageQuotaENOSPC(t *testing.T) {
	d, f := newTestDriver(t)
	const quotaMB = 64
	spec := quotaSpec(t, f, sandboxtest.Payload{FillMB: 200}, quotaMB)
	var stderr strings.Builder
	spec.Stderr = &stderr
	out := run(t, d, spec)
	grew := allocated(t, filepath.Join(spec.WorkDir, sandbox.DiskImageName))
	fb, fi, _ := diskquota.Free(filepath.Join(spec.WorkDir, sandbox.DiskDirName))
	t.Logf("free after: %d bytes, %d inodes; the image holds %d bytes of the host", fb, fi, grew)
	if out.ExitCode != 28 || !strings.Contains(stderr.String(), "no space left on device") {
		t.Errorf("got exit %d, stderr %q; want 28 and ENOSPC", out.ExitCode, stderr.String())
	}
	if !out.StorageExceeded {
		t.Errorf("outcome does not say storage was exceeded: %+v", out)
	}
	// The image is sparse: what the host lost is what the runner wrote,
	// bounded by the quota (plus a little filesystem metadata).
	if grew > (quotaMB+8)<<20 {
		t.Errorf("the image holds %d MiB of the host, over the %d MiB quota", grew>>20, quotaMB)
	}
}

// The same through a warm sandbox: its filesystem was made at boot.
func TestGVisorStorageQuotaWarm(t *testing.T) {
	if !WarmSupported() {
		t.Skip("warm sandboxes are x86-64 only")
	}
	d, f := newTestDriver(t)
	spec := quotaSpec(t, f, sandboxtest.Payload{FillMB: 200}, 64)
	key, _ := sandbox.KeyOf(&spec)
	d.Warm(context.Background(), key, 1)
	deadline := time.Now().Add(time.Minute)
	for d.WarmReady(key) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if d.WarmReady(key) == 0 {
		t.Fatal("no warm sandbox booted")
	}
	out := run(t, d, spec)
	if d.WarmUsed() != 1 {
		t.Errorf("the attempt did not run warm")
	}
	if out.ExitCode != 28 || !out.StorageExceeded {
		t.Errorf("got exit %d storage_exceeded=%v, want 28 and true", out.ExitCode, out.StorageExceeded)
	}
	d.DropWarm(key.CacheDir)
	d.warm.wg.Wait()
}

// A runner within its quota succeeds and is not marked.
func TestGVisorStorageQuotaWithin(t *testing.T) {
	d, f := newTestDriver(t)
	spec := quotaSpec(t, f, sandboxtest.Payload{FillMB: 16, Artifacts: map[string]string{"a.txt": "hello"}}, 64)
	out := run(t, d, spec)
	if out.ExitCode != 0 || out.StorageExceeded {
		t.Fatalf("got exit %d storage_exceeded=%v, want 0 and false", out.ExitCode, out.StorageExceeded)
	}
	if len(out.Artifacts) != 1 || out.Artifacts[0].Path != "a.txt" {
		t.Errorf("artifacts: %+v", out.Artifacts)
	}
}

// A fork bomb meets the pids limit: process starts fail inside the
// sandbox, the attempt ends as a failure and nothing is left behind.
func TestGVisorForkBombEnds(t *testing.T) {
	d, f := newTestDriver(t)
	spec := f.Spec(t, sandboxtest.Payload{ForkBomb: true})
	spec.PidsLimit = 64
	spec.MemoryMB = 1024
	spec.Timeout = 40 * time.Second
	var stdout strings.Builder
	spec.Stdout = &stdout
	out := run(t, d, spec)
	if out.ExitCode != 1 || out.TimedOut {
		t.Errorf("got exit %d timed_out=%v (stdout %q), want exit 1: the limit stops the bomb", out.ExitCode, out.TimedOut, stdout.String())
	}
	if !strings.Contains(stdout.String(), "started ") || strings.Contains(stdout.String(), "no limit met") {
		t.Errorf("stdout %q: want the bomb stopped by a failed start", stdout.String())
	}
	t.Logf("bomb: %s", strings.TrimSpace(stdout.String()))
}

// More output files than the cap: the outputs are refused with a message,
// none is listed.
func TestGVisorTooManyOutputFiles(t *testing.T) {
	d, f := newTestDriver(t)
	spec := f.Spec(t, sandboxtest.Payload{ManyFiles: 50})
	spec.MaxOutputFiles = 20
	out := run(t, d, spec)
	if out.OutputRejected == "" || !strings.Contains(out.OutputRejected, "more than 20 files") {
		t.Errorf("output_rejected = %q, want the cap named", out.OutputRejected)
	}
	if len(out.Artifacts) != 0 {
		t.Errorf("%d artifacts listed past the cap", len(out.Artifacts))
	}
}

// The project's cache directory is a filesystem of its own, made by the
// first attempt and kept for the next: a write past its size fails with
// ENOSPC, and what an attempt left there is still there for the next one.
func TestGVisorProjectCacheQuota(t *testing.T) {
	d, f := newTestDriver(t)
	marker := sandbox.ContainerDirs().Cache + "/marker"
	first := f.Spec(t, sandboxtest.Payload{WriteFile: []string{marker}, FillMB: 40, FillCache: true})
	first.CacheBytes = 32 << 20
	t.Cleanup(func() {
		if err := diskquota.Remove(first.CacheDir+diskquota.ImageSuffix, first.CacheDir); err != nil {
			t.Errorf("remove cache volume: %v", err)
		}
	})
	out := run(t, d, first)
	if out.ExitCode != 28 {
		t.Errorf("filling a 32 MiB cache with 40 MiB: exit %d, want 28 (ENOSPC)", out.ExitCode)
	}
	// The next attempt finds what the first left in the cache.
	second := f.Spec(t, sandboxtest.Payload{ReadFile: []string{marker}})
	second.CacheDir, second.CacheBytes = first.CacheDir, first.CacheBytes
	out = run(t, d, second)
	if r := sandboxtest.DecodeReport(t, out.Result); r.Reads[marker] != "x" {
		t.Errorf("the next attempt read %q from the cache, want the first's \"x\"", r.Reads[marker])
	}
	if free, _, err := diskquota.Free(first.CacheDir); err != nil || free > 2<<20 {
		t.Errorf("the cache volume has %d bytes free (%v), want it still mounted and full", free, err)
	}
}
