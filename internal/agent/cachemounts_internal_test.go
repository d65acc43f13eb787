package agent

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/sandbox/diskquota"
	"github.com/skiffhq/skiff/internal/testenv"
)

func fillCache(t *testing.T, dir string, bytes int, used time.Time) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "blob"), []byte(strings.Repeat("x", bytes)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dir, used, used); err != nil {
		t.Fatal(err)
	}
}

// Past the cap, whole caches no attempt holds go, least recently used
// first; a held cache stays whatever its age.
func TestCacheMountsEvictLeastRecentlyUsed(t *testing.T) {
	c := &cacheMounts{root: t.TempDir(), maxBytes: 2500, log: slog.New(slog.DiscardHandler), inUse: map[string]int{}}
	old, _ := c.dir(context.Background(), "prj_a", 0, "oldest")
	held, _ := c.dir(context.Background(), "prj_a", 0, "held")
	mid, _ := c.dir(context.Background(), "prj_b", 0, "middle")
	now, _ := c.dir(context.Background(), "prj_b", 0, "newest")
	base := time.Now().Add(-time.Hour)
	fillCache(t, held, 1000, base)
	fillCache(t, old, 1000, base.Add(time.Minute))
	fillCache(t, mid, 1000, base.Add(2*time.Minute))
	fillCache(t, now, 1000, base.Add(3*time.Minute))
	release := c.hold(held)
	c.evict()
	for dir, want := range map[string]bool{held: true, old: false, mid: false, now: true} {
		if _, err := os.Stat(dir); (err == nil) != want {
			t.Errorf("%s: exists=%v, want %v", filepath.Base(dir), err == nil, want)
		}
	}
	release()
}

// A newer epoch (invalidate) removes the project's older caches once no
// attempt holds them; other projects keep theirs.
func TestCacheMountsNewEpochDropsOld(t *testing.T) {
	c := &cacheMounts{root: t.TempDir(), log: slog.New(slog.DiscardHandler), inUse: map[string]int{}}
	a0, _ := c.dir(context.Background(), "prj_a", 0, "k")
	b0, _ := c.dir(context.Background(), "prj_b", 0, "k")
	fillCache(t, a0, 10, time.Now())
	fillCache(t, b0, 10, time.Now())
	release := c.hold(a0)
	if _, err := c.dir(context.Background(), "prj_a", 1, "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a0); err != nil {
		t.Errorf("held epoch 0 cache: %v, want it kept while held", err)
	}
	release()
	a1, _ := c.dir(context.Background(), "prj_a", 1, "k")
	if _, err := os.Stat(a0); !os.IsNotExist(err) {
		t.Errorf("epoch 0 cache after release: stat %v, want it removed", err)
	}
	if _, err := os.Stat(b0); err != nil {
		t.Errorf("another project's cache: %v, want it kept", err)
	}
	if filepath.Base(filepath.Dir(a1)) != "1" {
		t.Errorf("epoch 1 dir: got %s", a1)
	}
}

// At start-up, with bounded caches, a project's plain directory without an
// image (left by a run without the quota) and an image of another size go;
// a volume of the configured size stays. Without the quota the images go.
func TestCacheMountsTidy(t *testing.T) {
	root := t.TempDir()
	image := func(name string, size int64) string {
		p := filepath.Join(root, name+".img")
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, size); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(root, name), 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := filepath.Join(root, "prj_plain", "0", "k")
	fillCache(t, plain, 10, time.Now())
	kept := image("prj_kept", 16<<20)
	resized := image("prj_resized", 32<<20)
	c := &cacheMounts{root: root, volumeBytes: 16 << 20, log: slog.New(slog.DiscardHandler), inUse: map[string]int{}}
	c.tidy()
	for p, want := range map[string]bool{filepath.Join(root, "prj_plain"): false, kept: true, filepath.Join(root, "prj_kept"): true,
		resized: false, filepath.Join(root, "prj_resized"): false} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("bounded: %s exists=%v, want %v", filepath.Base(p), err == nil, want)
		}
	}
	c.volumeBytes = 0
	c.tidy()
	if _, err := os.Stat(kept); !os.IsNotExist(err) {
		t.Errorf("unbounded: the image is left (%v), want it removed", err)
	}
}

// On the projects' volumes the caches are still evicted whole, least
// recently used first, across projects, and an older epoch still goes.
func TestCacheMountsEvictOnVolumes(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, "agent: mounting cache-mount volumes needs root")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		testenv.Skipf(t, "agent: no loop devices: %v", err)
	}
	root := t.TempDir()
	c := &cacheMounts{root: root, maxBytes: 2500, volumeBytes: 16 << 20, log: slog.New(slog.DiscardHandler), inUse: map[string]int{}}
	t.Cleanup(func() { _, _ = diskquota.Reap(root) })
	ctx := context.Background()
	old, _ := c.dir(ctx, "prj_a", 0, "oldest")
	mid, _ := c.dir(ctx, "prj_b", 0, "middle")
	now, err := c.dir(ctx, "prj_b", 0, "newest")
	if err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-time.Hour)
	fillCache(t, old, 1000, base)
	fillCache(t, mid, 1000, base.Add(time.Minute))
	fillCache(t, now, 1000, base.Add(2*time.Minute))
	for _, p := range []string{"prj_a", "prj_b"} {
		if mounted, err := isMountPoint(filepath.Join(root, p)); err != nil || !mounted {
			t.Fatalf("%s: mounted %v (%v), want its own volume", p, mounted, err)
		}
	}
	c.evict()
	for dir, want := range map[string]bool{old: false, mid: true, now: true} {
		if _, err := os.Stat(dir); (err == nil) != want {
			t.Errorf("%s: exists=%v, want %v", filepath.Base(dir), err == nil, want)
		}
	}
	if _, err := c.dir(ctx, "prj_b", 1, "newest"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(now); !os.IsNotExist(err) {
		t.Errorf("epoch 0 cache of prj_b after a new epoch: stat %v, want it removed", err)
	}
}

// isMountPoint reports whether dir is the root of a filesystem.
func isMountPoint(dir string) (bool, error) {
	var st, parent syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return false, err
	}
	if err := syscall.Lstat(filepath.Dir(dir), &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev, nil
}
