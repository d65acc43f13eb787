package ociimage

import (
	"archive/tar"
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/testenv"
)

// entry is one tar entry for the tests; typ defaults to a regular file.
type entry struct {
	name     string
	typ      byte
	body     string
	link     string
	mode     int64
	uid, gid int
}

func tarBytes(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: e.mode, Uid: e.uid, Gid: e.gid,
			ModTime: time.Date(2024, 2, 3, 4, 5, 6, 0, time.UTC)}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func untarTest(t *testing.T, dest string, entries ...entry) error {
	t.Helper()
	return untar(context.Background(), bytes.NewReader(tarBytes(t, entries...)), dest,
		untarLimits{maxBytes: 1 << 20, maxEntries: 100}, slog.New(slog.DiscardHandler))
}

// TestUntarRefusesEscapes tries the known ways out of the root. Each must
// fail the unpack and leave nothing outside.
func TestUntarRefusesEscapes(t *testing.T) {
	t.Parallel()
	cases := map[string]func(outside string) []entry{
		"dotdot name": func(string) []entry {
			return []entry{{name: "../pwned", body: "x"}}
		},
		"dotdot inside name": func(string) []entry {
			return []entry{{name: "a/../../pwned", body: "x"}}
		},
		"absolute symlink then write through it": func(outside string) []entry {
			return []entry{{name: "evil", typ: tar.TypeSymlink, link: outside}, {name: "evil/pwned", body: "x"}}
		},
		"relative symlink then write through it": func(string) []entry {
			return []entry{{name: "d/", typ: tar.TypeDir, mode: 0o755}, {name: "d/evil", typ: tar.TypeSymlink, link: "../../outside"}, {name: "d/evil/pwned", body: "x"}}
		},
		"hardlink outside": func(outside string) []entry {
			return []entry{{name: "h", typ: tar.TypeLink, link: "../outside/target"}}
		},
		"hardlink through symlink": func(outside string) []entry {
			return []entry{{name: "s", typ: tar.TypeSymlink, link: outside}, {name: "h", typ: tar.TypeLink, link: "s/target"}}
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
			for _, d := range []string{root, outside} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(outside, "target"), []byte("secret"), 0o600); err != nil {
				t.Fatal(err)
			}
			err := untarTest(t, root, mk(outside)...)
			if err == nil {
				t.Errorf("untar: got no error, want the escape refused")
			} else {
				t.Logf("refused: %v", err)
			}
			entries, _ := os.ReadDir(outside)
			if len(entries) != 1 {
				t.Errorf("outside dir: got %d entries, want only the original target", len(entries))
			}
			if _, err := os.Lstat(filepath.Join(base, "pwned")); err == nil {
				t.Errorf("a file was written next to the root")
			}
		})
	}
}

func TestUntarMetadataAndTypes(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	isRoot := os.Geteuid() == 0
	if !isRoot {
		testenv.Partial(t, "not root: the owners the archive sets are not checked")
	}
	err := untarTest(t, root,
		entry{name: "./", typ: tar.TypeDir, mode: 0o755},
		entry{name: "bin/", typ: tar.TypeDir, mode: 0o755},
		entry{name: "bin/suid", body: "x", mode: 0o4755, uid: 1234, gid: 5678},
		entry{name: "bin/hard", typ: tar.TypeLink, link: "bin/suid"},
		entry{name: "bin/sh", typ: tar.TypeSymlink, link: "/bin/suid"},
		entry{name: "dev/null", typ: tar.TypeChar, mode: 0o666},
		entry{name: "fifo", typ: tar.TypeFifo, mode: 0o666},
		entry{name: "tmp/", typ: tar.TypeDir, mode: 0o1777},
		entry{name: "ro/", typ: tar.TypeDir, mode: 0o555},
		entry{name: "ro/file", body: "in a read-only dir"},
		entry{name: "implicit/parent/file", body: "parents made on the way"},
		// An absolute symlink, then a file at the same name: the file must
		// replace the link, not write through it.
		entry{name: "over", typ: tar.TypeSymlink, link: "/etc/passwd"},
		entry{name: "over", body: "replaced"},
		// A directory replaced by a file.
		entry{name: "dir2/", typ: tar.TypeDir, mode: 0o755},
		entry{name: "dir2/child", body: "c"},
		entry{name: "dir2", body: "now a file"},
	)
	if err != nil {
		t.Fatalf("untar: %v", err)
	}
	st, err := os.Stat(filepath.Join(root, "bin/suid"))
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode(); got != 0o755 {
		t.Errorf("setuid file mode: got %v, want -rwxr-xr-x (setuid dropped)", got)
	}
	if want := time.Date(2024, 2, 3, 4, 5, 6, 0, time.UTC); !st.ModTime().Equal(want) {
		t.Errorf("mtime: got %v, want %v", st.ModTime(), want)
	}
	if sys := st.Sys().(*syscall.Stat_t); isRoot && (sys.Uid != 1234 || sys.Gid != 5678) {
		t.Errorf("owner: got %d:%d, want 1234:5678", sys.Uid, sys.Gid)
	}
	hard, err := os.Stat(filepath.Join(root, "bin/hard"))
	if err != nil || !os.SameFile(st, hard) {
		t.Errorf("hard link: got %v (err %v), want the same file as bin/suid", hard, err)
	}
	if target, err := os.Readlink(filepath.Join(root, "bin/sh")); err != nil || target != "/bin/suid" {
		t.Errorf("symlink: got %q (err %v), want /bin/suid stored as is", target, err)
	}
	for _, skipped := range []string{"dev/null", "fifo"} {
		if _, err := os.Lstat(filepath.Join(root, skipped)); err == nil {
			t.Errorf("%s: got created, want special files skipped", skipped)
		}
	}
	for dir, want := range map[string]os.FileMode{"tmp": os.ModeDir | os.ModeSticky | 0o777, "ro": os.ModeDir | 0o555, ".": os.ModeDir | 0o755} {
		if st, err := os.Stat(filepath.Join(root, dir)); err != nil || st.Mode() != want {
			t.Errorf("dir %s mode: got %v (err %v), want %v", dir, st.Mode(), err, want)
		}
	}
	for file, want := range map[string]string{"ro/file": "in a read-only dir", "implicit/parent/file": "parents made on the way", "over": "replaced", "dir2": "now a file"} {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil || string(b) != want {
			t.Errorf("%s: got %q (err %v), want %q", file, b, err, want)
		}
	}
	if fi, err := os.Lstat(filepath.Join(root, "over")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("over: want a regular file that replaced the symlink")
	}
}

func TestUntarLimits(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 2<<20)
	if err := untarTest(t, t.TempDir(), entry{name: "big", body: big}); err == nil {
		t.Errorf("over maxBytes: got no error")
	}
	var many []entry
	for i := range 101 {
		many = append(many, entry{name: "f" + strings.Repeat("x", i), body: "x"})
	}
	if err := untarTest(t, t.TempDir(), many...); err == nil {
		t.Errorf("over maxEntries: got no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := untar(ctx, bytes.NewReader(tarBytes(t, entry{name: "a", body: "x"})), t.TempDir(),
		untarLimits{maxBytes: 1 << 20, maxEntries: 100}, slog.New(slog.DiscardHandler))
	if err == nil {
		t.Errorf("cancelled context: got no error")
	}
}
