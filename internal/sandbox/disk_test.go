package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/sandbox/diskquota"
	"github.com/skiffhq/skiff/internal/testenv"
)

// A failed runner whose writable bounded mount is full is told apart: the
// outcome names the mount. A succeeded runner, a full mount not marked
// bounded and a read-only one are not.
func TestMarkStorageNamesAFullBoundedMount(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, "sandbox: mounting a volume needs root")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		testenv.Skipf(t, "sandbox: no loop devices: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "prj_1")
	if err := sandbox.EnsureVolume(context.Background(), dir, 32<<20); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = diskquota.Remove(dir+diskquota.ImageSuffix, dir) })
	cache := filepath.Join(dir, "0", "deps")
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	// As a runner would: 1 MiB writes until one fails.
	f, err := os.Create(filepath.Join(cache, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := []byte(strings.Repeat("x", 1<<20))
	for i := 0; err == nil; i++ {
		if i == 64 {
			t.Fatal("64 MiB fitted in a 32 MiB volume")
		}
		_, err = f.Write(chunk)
	}
	f.Close()
	for _, tc := range []struct {
		name  string
		exit  int
		mount sandbox.Mount
		want  string
	}{
		{"failed, bounded", 28, sandbox.Mount{Source: cache, Destination: "/cache/deps", Bounded: true}, "/cache/deps"},
		{"succeeded", 0, sandbox.Mount{Source: cache, Destination: "/cache/deps", Bounded: true}, ""},
		{"not bounded", 28, sandbox.Mount{Source: cache, Destination: "/cache/deps"}, ""},
		{"read-only", 28, sandbox.Mount{Source: cache, Destination: "/cache/deps", Bounded: true, ReadOnly: true}, ""},
	} {
		o := sandbox.Outcome{ExitCode: tc.exit}
		sandbox.MarkStorage(&o, &sandbox.Spec{WorkDir: t.TempDir(), Mounts: []sandbox.Mount{tc.mount}})
		if o.FullMount != tc.want || o.StorageExceeded {
			t.Errorf("%s: full mount %q storage exceeded %v; want %q and false", tc.name, o.FullMount, o.StorageExceeded, tc.want)
		}
	}
}
