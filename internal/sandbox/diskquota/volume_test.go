package diskquota_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/skiffhq/skiff/internal/sandbox/diskquota"
	"github.com/skiffhq/skiff/internal/testenv"
)

func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "diskquota: mounting needs root")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		testenv.Skipf(t, "diskquota: no loop devices: %v", err)
	}
}

func mounted(t testing.TB, dir string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(b), " "+dir+" ")
}

// loopsOf lists the loop devices whose backing file is image.
func loopsOf(t testing.TB, image string) []string {
	t.Helper()
	var out []string
	entries, _ := os.ReadDir("/sys/block")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/sys/block", e.Name(), "loop", "backing_file"))
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), image) {
			out = append(out, e.Name())
		}
	}
	return out
}

// A write past the volume's size fails with ENOSPC, and Remove leaves no
// mount, no loop device and no image.
func TestVolumeENOSPCAndRemove(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "v.img"), filepath.Join(dir, "v")
	if err := diskquota.Create(context.Background(), diskquota.Options{Image: img, Mount: mnt, Bytes: 16 << 20, UID: 65534, GID: 65534}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = diskquota.Remove(img, mnt) })
	st, err := os.Stat(mnt)
	if err != nil {
		t.Fatal(err)
	}
	if st.Sys().(*syscall.Stat_t).Uid != 65534 {
		t.Errorf("volume root owned by %d, want 65534", st.Sys().(*syscall.Stat_t).Uid)
	}
	f, err := os.Create(filepath.Join(mnt, "big"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	var werr error
	for range 32 {
		if _, werr = f.Write(buf); werr != nil {
			break
		}
	}
	f.Close()
	if !errors.Is(werr, syscall.ENOSPC) {
		t.Fatalf("writing 32 MiB to a 16 MiB volume: got %v, want ENOSPC", werr)
	}
	if !diskquota.Full(mnt) {
		t.Error("Full: false on a volume that returned ENOSPC")
	}
	if err := diskquota.Remove(img, mnt); err != nil {
		t.Fatal(err)
	}
	if mounted(t, mnt) {
		t.Error("still mounted after Remove")
	}
	if l := loopsOf(t, img); len(l) > 0 {
		t.Errorf("loop devices left: %v", l)
	}
	if _, err := os.Stat(img); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("image left: %v", err)
	}
}

// What a crashed host left (a mounted volume, a loop device bound to an
// image and not mounted) is reaped.
func TestReapLeftovers(t *testing.T) {
	needRoot(t)
	root := t.TempDir()
	img, mnt := filepath.Join(root, "a", "disk.img"), filepath.Join(root, "a", "disk")
	if err := os.MkdirAll(filepath.Dir(img), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := diskquota.Create(context.Background(), diskquota.Options{Image: img, Mount: mnt, Bytes: 16 << 20}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = diskquota.Remove(img, mnt) })
	n, err := diskquota.Reap(root)
	if err != nil {
		t.Fatal(err)
	}
	if n < 1 || mounted(t, mnt) {
		t.Errorf("Reap removed %d, mounted after: %v", n, mounted(t, mnt))
	}
	if l := loopsOf(t, img); len(l) > 0 {
		t.Errorf("loop devices left: %v", l)
	}
	if err := os.RemoveAll(root); err != nil {
		t.Errorf("the work root cannot be removed after Reap: %v", err)
	}
}

// BenchmarkCreateRemove is what a storage quota adds to a cold attempt
// start (Create) and end (Remove).
func BenchmarkCreateRemove(b *testing.B) {
	needRoot(b)
	dir := b.TempDir()
	for i := 0; b.Loop(); i++ {
		img, mnt := filepath.Join(dir, "v.img"), filepath.Join(dir, "v")
		if err := diskquota.Create(context.Background(), diskquota.Options{Image: img, Mount: mnt, Bytes: 10 << 30}); err != nil {
			b.Fatal(err)
		}
		if err := diskquota.Remove(img, mnt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreate is the start-side cost alone.
func BenchmarkCreate(b *testing.B) {
	needRoot(b)
	dir := b.TempDir()
	i := 0
	for b.Loop() {
		i++
		img, mnt := filepath.Join(dir, "v"+string(rune('a'+i%26))+".img"), filepath.Join(dir, "v"+string(rune('a'+i%26)))
		b.StopTimer()
		_ = diskquota.Remove(img, mnt)
		b.StartTimer()
		if err := diskquota.Create(context.Background(), diskquota.Options{Image: img, Mount: mnt, Bytes: 10 << 30}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	_, _ = diskquota.Reap(dir)
}

// With Discard, what is deleted in the volume is punched out of its image:
// the host's disk gets it back instead of keeping the high-water mark.
func TestEnsureDiscardGivesBlocksBack(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	o := diskquota.Options{Image: filepath.Join(dir, "v.img"), Mount: filepath.Join(dir, "v"), Bytes: 64 << 20, Discard: true}
	if err := diskquota.Ensure(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = diskquota.Remove(o.Image, o.Mount) })
	allocated := func() int64 {
		var st syscall.Stat_t
		if err := syscall.Stat(o.Image, &st); err != nil {
			t.Fatal(err)
		}
		return st.Blocks * 512
	}
	f := filepath.Join(o.Mount, "blob")
	if err := os.WriteFile(f, []byte(strings.Repeat("x", 32<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	syscall.Sync()
	full := allocated()
	if err := os.Remove(f); err != nil {
		t.Fatal(err)
	}
	syscall.Sync()
	if after := allocated(); after > full-24<<20 {
		t.Errorf("image holds %d MiB after a 32 MiB file was deleted (%d MiB before): want the blocks given back", after>>20, full>>20)
	}
}
