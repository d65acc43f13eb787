package sandboxtest

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"runtime"
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
)

// RunnerWorkDir is the fixture image's WORKDIR.
const RunnerWorkDir = "/app"

// RunnerImage writes an OCI layout holding one FROM-scratch image with the
// test runner at RunnerPath (ENTRYPOINT, WORKDIR RunnerWorkDir) and returns
// the layout directory and the image manifest digest. It is what a build
// of a minimal project exports, made without buildah.
func RunnerImage(t testing.TB) (layoutDir, digest string) {
	t.Helper()
	bin, err := os.ReadFile(BuildRunner(t))
	if err != nil {
		t.Fatal(err)
	}
	layerTar := tarOf(t, []tarEntry{
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/local/", mode: 0o755, dir: true},
		{name: "usr/local/bin/", mode: 0o755, dir: true},
		{name: "usr/local/bin/runner", mode: 0o755, body: bin},
		{name: "app/", mode: 0o755, dir: true},
	})
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		t.Fatal(err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config = v1.Config{
		Entrypoint: []string{RunnerPath},
		WorkingDir: RunnerWorkDir,
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "RUNNER_IMAGE=1"},
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	layoutDir = t.TempDir()
	p, err := layout.Write(layoutDir, empty.Index)
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
	return layoutDir, h.String()
}

// RunnerRootFS unpacks RunnerImage with ociimage, as a host does, into a
// fresh cache and returns the root filesystem.
func RunnerRootFS(t testing.TB) string {
	t.Helper()
	layoutDir, digest := RunnerImage(t)
	c := &ociimage.Cache{Root: t.TempDir(), MountPoints: sandbox.MountPoints()}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	img, err := c.Unpack(ctx, layoutDir, digest)
	if err != nil {
		t.Fatalf("sandboxtest: unpack runner image: %v", err)
	}
	return img.RootFS
}

type tarEntry struct {
	name string
	mode int64
	dir  bool
	body []byte
}

func tarOf(t testing.TB, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: mtime, Typeflag: tar.TypeReg, Size: int64(len(e.body))}
		if e.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
