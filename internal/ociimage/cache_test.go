package ociimage_test

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/skiffhq/skiff/internal/ociimage"
	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
)

func TestUnpackRunnerImage(t *testing.T) {
	t.Parallel()
	layoutDir, digest := sandboxtest.RunnerImage(t)
	c := &ociimage.Cache{Root: filepath.Join(t.TempDir(), "images"), MountPoints: sandbox.MountPoints()}
	img, err := c.Unpack(context.Background(), layoutDir, digest)
	if err != nil {
		t.Fatalf("Unpack: %v", err)
	}
	if !img.Fresh || img.Digest != digest || img.RootFS != filepath.Join(img.Dir, "rootfs") {
		t.Errorf("image: got %+v, want a fresh unpack of %s", img, digest)
	}
	st, err := os.Stat(filepath.Join(img.RootFS, sandboxtest.RunnerPath))
	if err != nil || st.Mode() != 0o755 {
		t.Fatalf("runner: got %v (err %v), want an executable at %s", st, err, sandboxtest.RunnerPath)
	}
	for _, mp := range append(sandbox.MountPoints(), sandboxtest.RunnerWorkDir) {
		if st, err := os.Stat(filepath.Join(img.RootFS, mp)); err != nil || !st.IsDir() {
			t.Errorf("dir %s: missing in rootfs (%v)", mp, err)
		}
	}
	if st, err := os.Stat(img.RootFS); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("rootfs mode: got %v, want 0755 so a non-root runner can walk it", st.Mode())
	}
	want := ociimage.Config{Entrypoint: []string{sandboxtest.RunnerPath}, WorkingDir: sandboxtest.RunnerWorkDir,
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "RUNNER_IMAGE=1"}}
	if !slices.Equal(img.Config.Entrypoint, want.Entrypoint) || img.Config.WorkingDir != want.WorkingDir || !slices.Equal(img.Config.Env, want.Env) {
		t.Errorf("config: got %+v, want %+v", img.Config, want)
	}

	again, err := c.Unpack(context.Background(), layoutDir, digest)
	if err != nil || again.Fresh || again.RootFS != img.RootFS || !slices.Equal(again.Config.Env, want.Env) {
		t.Errorf("second Unpack: got %+v (err %v), want the cached image", again, err)
	}
	// Lookup needs no layout.
	got, ok, err := c.Lookup(digest)
	if err != nil || !ok || got.RootFS != img.RootFS {
		t.Errorf("Lookup: got %+v %v %v, want the cached image", got, ok, err)
	}
	if _, ok, err := c.Lookup("sha256:" + strings.Repeat("0", 64)); ok || err != nil {
		t.Errorf("Lookup of an absent digest: got ok=%v err=%v, want not found", ok, err)
	}
}

func TestUnpackOncePerDigest(t *testing.T) {
	t.Parallel()
	layoutDir, digest := writeLayout(t, layerOf(t, map[string]string{"a": "A", "dir/b": "B"}))
	root := filepath.Join(t.TempDir(), "images")
	const n = 8
	imgs := make([]*ociimage.Image, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		// Separate Cache values, as separate processes would have.
		c := &ociimage.Cache{Root: root}
		wg.Go(func() { imgs[i], errs[i] = c.Unpack(context.Background(), layoutDir, digest) })
	}
	wg.Wait()
	fresh := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Unpack %d: %v", i, errs[i])
		}
		if imgs[i].RootFS != imgs[0].RootFS {
			t.Errorf("Unpack %d: rootfs %s, want %s", i, imgs[i].RootFS, imgs[0].RootFS)
		}
		if imgs[i].Fresh {
			fresh++
		}
	}
	if fresh != 1 {
		t.Errorf("fresh unpacks: got %d, want 1", fresh)
	}
	if b, err := os.ReadFile(filepath.Join(imgs[0].RootFS, "dir/b")); err != nil || string(b) != "B" {
		t.Errorf("dir/b: got %q (%v), want B", b, err)
	}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temp dir left behind: %s", e.Name())
		}
	}
}

func TestUnpackAppliesWhiteouts(t *testing.T) {
	t.Parallel()
	lower := layerOf(t, map[string]string{"keep": "k", "gone": "g", "dir/x": "x"})
	upper := layerOf(t, map[string]string{".wh.gone": "", "dir/.wh..wh..opq": "", "dir/y": "y"})
	layoutDir, digest := writeLayout(t, lower, upper)
	img, err := ociimage.Unpack(context.Background(), layoutDir, digest, t.TempDir())
	if err != nil {
		t.Fatalf("Unpack: %v", err)
	}
	var got []string
	filepath.WalkDir(img.RootFS, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(img.RootFS, p)
			got = append(got, rel)
		}
		return nil
	})
	slices.Sort(got)
	if want := []string{"dir/y", "keep"}; !slices.Equal(got, want) {
		t.Errorf("files: got %q, want %q", got, want)
	}
}

func TestUnpackVerifiesBlobs(t *testing.T) {
	t.Parallel()
	t.Run("tampered layer", func(t *testing.T) {
		t.Parallel()
		layoutDir, digest := writeLayout(t, layerOf(t, map[string]string{"a": "A"}))
		img := readImage(t, layoutDir, digest)
		layers, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		ld, err := layers[0].Digest()
		if err != nil {
			t.Fatal(err)
		}
		blob := filepath.Join(layoutDir, "blobs", "sha256", ld.Hex)
		b, err := os.ReadFile(blob)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)-1] ^= 0xff
		if err := os.WriteFile(blob, b, 0o644); err != nil {
			t.Fatal(err)
		}
		root := t.TempDir()
		if _, err := ociimage.Unpack(context.Background(), layoutDir, digest, root); err == nil {
			t.Fatalf("Unpack of a tampered layer: got no error")
		}
		if entries, _ := filepath.Glob(filepath.Join(root, "*", "rootfs")); len(entries) != 0 {
			t.Errorf("a failed unpack left %v", entries)
		}
	})
	t.Run("absent digest", func(t *testing.T) {
		t.Parallel()
		layoutDir, _ := writeLayout(t, layerOf(t, map[string]string{"a": "A"}))
		if _, err := ociimage.Unpack(context.Background(), layoutDir, "sha256:"+strings.Repeat("a", 64), t.TempDir()); err == nil {
			t.Fatalf("Unpack of a digest not in the layout: got no error")
		}
	})
	t.Run("malformed digests", func(t *testing.T) {
		t.Parallel()
		for _, d := range []string{"", "sha256:abc", "sha512:" + strings.Repeat("a", 128), "sha256:" + strings.Repeat("A", 64), "sha256:../" + strings.Repeat("a", 61)} {
			if _, err := ociimage.Unpack(context.Background(), t.TempDir(), d, t.TempDir()); err == nil {
				t.Errorf("digest %q: got no error", d)
			}
		}
	})
}

func TestUnpackHonoursContext(t *testing.T) {
	t.Parallel()
	layoutDir, digest := writeLayout(t, layerOf(t, map[string]string{"a": "A"}))
	root := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ociimage.Unpack(ctx, layoutDir, digest, root); err == nil {
		t.Fatalf("Unpack with a cancelled context: got no error")
	}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".lock") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// layerOf makes a gzip OCI layer of regular files (parents implied).
func layerOf(t *testing.T, files map[string]string) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		h := &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(files[name])), ModTime: time.Unix(1e9, 0)}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[name])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func writeLayout(t *testing.T, layers ...v1.Layer) (string, string) {
	t.Helper()
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layers...)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	h, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return dir, h.String()
}

func readImage(t *testing.T, dir, digest string) v1.Image {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := v1.NewHash(digest)
	if err != nil {
		t.Fatal(err)
	}
	img, err := p.Image(h)
	if err != nil {
		t.Fatal(err)
	}
	return img
}
