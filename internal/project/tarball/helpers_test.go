package tarball

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// entry describes one archive member for a test tarball.
type entry struct {
	name   string
	typ    byte
	body   string
	link   string
	mode   int64
	format tar.Format
	mtime  time.Time
	uid    int
}

func reg(name, body string) entry {
	return entry{name: name, typ: tar.TypeReg, body: body, mode: 0o644}
}
func exe(name, body string) entry {
	return entry{name: name, typ: tar.TypeReg, body: body, mode: 0o755}
}
func dir(name string) entry { return entry{name: name, typ: tar.TypeDir, mode: 0o755} }
func sym(name, target string) entry {
	return entry{name: name, typ: tar.TypeSymlink, link: target, mode: 0o777}
}
func hard(name, target string) entry {
	return entry{name: name, typ: tar.TypeLink, link: target, mode: 0o644}
}

// tarBytes writes entries as an uncompressed tar stream.
func tarBytes(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{
			Name:     e.name,
			Typeflag: e.typ,
			Linkname: e.link,
			Mode:     e.mode,
			Size:     int64(len(e.body)),
			ModTime:  e.mtime,
			Uid:      e.uid,
			Format:   e.format,
		}
		if e.typ != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatalf("write header %q: %v", e.name, err)
		}
		if e.typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatalf("write body %q: %v", e.name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatalf("close tar: %v", err)
	}
	return buf.Bytes()
}

// gz compresses data at the given level.
func gz(t testing.TB, data []byte, level int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, level)
	if err != nil {
		t.Fatalf("gzip writer: %v", err)
	}
	if _, err := zw.Write(data); err != nil {
		t.Fatalf("gzip write: %v", err)
	}
	if err := zw.Close(); err != nil {
		t.Fatalf("gzip close: %v", err)
	}
	return buf.Bytes()
}

// tgz is the usual test input: a gzip-compressed tar of entries.
func tgz(t testing.TB, entries ...entry) []byte {
	t.Helper()
	return gz(t, tarBytes(t, entries...), gzip.DefaultCompression)
}

// fixture is a fresh extraction destination with an untouched sibling
// directory next to it, so tests can prove nothing leaked out of dst.
type fixture struct {
	base    string // parent of dst and outside
	dst     string
	outside string
}

func setup(t testing.TB) fixture {
	t.Helper()
	base := t.TempDir()
	f := fixture{base: base, dst: filepath.Join(base, "dst"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{f.dst, f.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatalf("mkdir: %v", err)
		}
	}
	return f
}

func (f fixture) extract(t testing.TB, data []byte, lim Limits) (*Tree, error) {
	t.Helper()
	return Extract(context.Background(), bytes.NewReader(data), f.dst, lim)
}

// assertOutsideUntouched fails the test if anything appeared next to dst.
func (f fixture) assertOutsideUntouched(t testing.TB) {
	t.Helper()
	names, err := os.ReadDir(f.base)
	if err != nil {
		t.Fatalf("read base: %v", err)
	}
	for _, n := range names {
		if n.Name() != "dst" && n.Name() != "outside" {
			t.Errorf("extraction created %q next to dst", n.Name())
		}
	}
	inside, err := os.ReadDir(f.outside)
	if err != nil {
		t.Fatalf("read outside: %v", err)
	}
	if len(inside) != 0 {
		t.Errorf("outside directory got %d entries, want 0", len(inside))
	}
}

// asError returns err as *Error or fails the test.
func asError(t testing.TB, err error) *Error {
	t.Helper()
	var te *Error
	if !errors.As(err, &te) {
		t.Fatalf("got error %v (%T), want *tarball.Error", err, err)
	}
	return te
}

func hasProblem(e *Error, path, substr string) bool {
	for _, p := range e.Problems {
		if p.Path == path && strings.Contains(p.Message, substr) {
			return true
		}
	}
	return false
}
