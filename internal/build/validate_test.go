package build

import (
	"archive/tar"
	"bytes"
	"io"
	"path"
	"slices"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// tarEntry is one entry of a test layer.
type tarEntry struct {
	name, link string
	typ        byte
	mode       int64
}

func testLayer(t *testing.T, entries ...tarEntry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: e.mode}
		if e.typ == tar.TypeReg {
			hdr.Size = 1
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			if _, err := tw.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return layer
}

// testImage is a Debian-like layout: /bin is a symlink into /usr, python3 a
// relative symlink, one file hidden by a whiteout in the upper layer.
func testImage(t *testing.T) v1.Image {
	t.Helper()
	lower := testLayer(t,
		tarEntry{name: "usr/bin/", typ: tar.TypeDir, mode: 0o755},
		tarEntry{name: "usr/bin/python3.11", typ: tar.TypeReg, mode: 0o755},
		tarEntry{name: "usr/bin/python3", typ: tar.TypeSymlink, link: "python3.11", mode: 0o777},
		tarEntry{name: "bin", typ: tar.TypeSymlink, link: "usr/bin", mode: 0o777},
		tarEntry{name: "usr/bin/gone", typ: tar.TypeReg, mode: 0o755},
		tarEntry{name: "opt/tool/run", typ: tar.TypeReg, mode: 0o755}, // parents implied
	)
	upper := testLayer(t,
		tarEntry{name: "usr/bin/.wh.gone", typ: tar.TypeReg, mode: 0o644},
		tarEntry{name: "app/main.py", typ: tar.TypeReg, mode: 0o644},
		tarEntry{name: "app/run", typ: tar.TypeLink, link: "opt/tool/run", mode: 0o755},
		tarEntry{name: "app/dangling", typ: tar.TypeSymlink, link: "/nowhere", mode: 0o777},
		tarEntry{name: "app/loop", typ: tar.TypeSymlink, link: "loop", mode: 0o777},
		tarEntry{name: "app/escape", typ: tar.TypeSymlink, link: "../../../../usr/bin/python3", mode: 0o777},
		tarEntry{name: "app/dir", typ: tar.TypeDir, mode: 0o755},
	)
	img, err := mutate.AppendLayers(empty.Image, lower, upper)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestValidationCheck(t *testing.T) {
	t.Parallel()
	tree, err := readImageTree(testImage(t), newTreeCache(maxCachedTreeEntries))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &v1.Config{WorkingDir: "/app", Env: []string{"PATH=/usr/local/bin:/bin"}}
	tests := []struct {
		name string
		v    validation
		want []string
	}{
		{name: "executables that exist", v: validation{executables: []string{
			"/usr/bin/python3", "/bin/python3", "python3", "./run", "/opt/tool/run",
		}}},
		{name: "files that exist", v: validation{files: []string{"main.py", "/app/main.py", "/bin", "dir", "/", "../app/./main.py"}}},
		{name: "missing and unusable", v: validation{
			// /app/escape is a relative link out of the rootfs: mutate.Extract
			// drops those, so hosts would not see it either.
			executables: []string{"/usr/bin/gone", "./main.py", "./dir", "nope", "/app/dangling", "/app/loop", "/app/escape", "main.py"},
			files:       []string{"/usr/bin/gone", "/app/dangling", "/app/main.py/x"},
		}, want: []string{
			"executable /usr/bin/gone not found",
			"executable ./main.py is not executable (mode 0644)",
			"executable ./dir is not a regular file",
			"executable nope not found",
			"executable /app/dangling not found",
			"executable /app/loop not found",
			"executable /app/escape not found",
			"executable main.py not found", // no slash: looked up on PATH only
			"file /usr/bin/gone not found",
			"file /app/dangling not found",
			"file /app/main.py/x not found",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.v.check(tree, cfg)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got problems %q, want %q", got, tt.want)
			}
		})
	}
}

func TestValidationDefaultPath(t *testing.T) {
	t.Parallel()
	tree, err := readImageTree(testImage(t), newTreeCache(maxCachedTreeEntries))
	if err != nil {
		t.Fatal(err)
	}
	// No config PATH: the default one includes /usr/bin.
	if got := (validation{executables: []string{"python3"}}).check(tree, &v1.Config{}); len(got) > 0 {
		t.Errorf("got %q, want python3 found on the default PATH", got)
	}
}

// The tree must match what hosts unpack: the paths mutate.Extract yields.
func TestImageTreeMatchesExtract(t *testing.T) {
	t.Parallel()
	img := testImage(t)
	tree, err := readImageTree(img, newTreeCache(maxCachedTreeEntries))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"/": true}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for p := path.Clean("/" + hdr.Name); ; p = path.Dir(p) {
			want[p] = true
			if p == "/" {
				break
			}
		}
	}
	for p := range want {
		if _, ok := tree[p]; !ok {
			t.Errorf("mutate.Extract has %s, the tree does not", p)
		}
	}
	for p := range tree {
		if !want[p] {
			t.Errorf("the tree has %s, mutate.Extract does not", p)
		}
	}
}

func TestImageTreeOpaqueDirAndCache(t *testing.T) {
	t.Parallel()
	base := testLayer(t,
		tarEntry{name: "etc/a", typ: tar.TypeReg, mode: 0o644},
		tarEntry{name: "etc/b", typ: tar.TypeReg, mode: 0o644},
	)
	top := testLayer(t,
		tarEntry{name: "etc/", typ: tar.TypeDir, mode: 0o755},
		tarEntry{name: "etc/c", typ: tar.TypeReg, mode: 0o644}, // before the marker: still this layer's
		tarEntry{name: "etc/.wh..wh..opq", typ: tar.TypeReg, mode: 0o644},
	)
	img, err := mutate.AppendLayers(empty.Image, base, top)
	if err != nil {
		t.Fatal(err)
	}
	cache := newTreeCache(maxCachedTreeEntries)
	for _, pass := range []string{"cold", "cached"} {
		tree, err := readImageTree(img, cache)
		if err != nil {
			t.Fatal(err)
		}
		got := (validation{files: []string{"/etc/a", "/etc/b", "/etc/c"}}).check(tree, nil)
		want := []string{"file /etc/a not found", "file /etc/b not found"}
		if !slices.Equal(got, want) {
			t.Errorf("%s: got %q, want %q", pass, got, want)
		}
	}
	// A second image on the same base reuses the cached base tree.
	other, err := mutate.AppendLayers(empty.Image, base, testLayer(t, tarEntry{name: "etc/d", typ: tar.TypeReg, mode: 0o644}))
	if err != nil {
		t.Fatal(err)
	}
	tree, err := readImageTree(other, cache)
	if err != nil {
		t.Fatal(err)
	}
	if got := (validation{files: []string{"/etc/a", "/etc/b", "/etc/d"}}).check(tree, nil); len(got) > 0 {
		t.Errorf("got %q, want all found", got)
	}
}
