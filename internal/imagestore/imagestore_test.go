package imagestore_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/imagestore"
)

// TestPublishOnOneFetchOnAnother: controller A built an image into its
// layouts and publishes it; controller B, sharing only the blob store,
// opens the layout by digest and gets a valid image with the same digest.
// A second open reads B's copy.
func TestPublishOnOneFetchOnAnother(t *testing.T) {
	blobDir := t.TempDir()
	blob, err := artifact.NewLocal(blobDir)
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(4096, 3)
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	rootA, rootB := t.TempDir(), t.TempDir()
	p, err := layout.Write(filepath.Join(rootA, d.Hex), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	a := &imagestore.Shared{Root: rootA, Blob: blob}
	if err := a.Publish(t.Context(), d.String()); err != nil {
		t.Fatal(err)
	}
	b := &imagestore.Shared{Root: rootB, Blob: blob}
	dir, err := b.Layout(t.Context(), d.String())
	if err != nil {
		t.Fatal(err)
	}
	if dir != filepath.Join(rootB, d.Hex) {
		t.Errorf("layout at %s", dir)
	}
	got, err := layout.Path(dir).Image(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(got); err != nil {
		t.Fatalf("fetched image: %v", err)
	}
	if gd, _ := got.Digest(); gd != d {
		t.Errorf("fetched digest %s, want %s", gd, d)
	}
	// Now B has it: the blob store is not read again.
	if err := os.RemoveAll(blobDir); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Layout(t.Context(), d.String()); err != nil {
		t.Errorf("second open: %v", err)
	}
}

// TestMissingImage: an image nobody published is an error, and nothing is
// left behind.
func TestMissingImage(t *testing.T) {
	blob, err := artifact.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	s := &imagestore.Shared{Root: root, Blob: blob}
	if _, err := s.Layout(t.Context(), "sha256:0000000000000000000000000000000000000000000000000000000000000000"); err == nil {
		t.Fatal("opened an image nobody published")
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}
