package agent

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/ociimage"
)

// TestTrimCachesLeastRecentlyUsed: over the budget, the least recently used
// images and inputs go first until the caches fit, but never an image an
// attempt has pinned, however old its last use.
func TestTrimCachesLeastRecentlyUsed(t *testing.T) {
	ctx := t.Context()
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	dir := t.TempDir()
	images := &ociimage.Cache{Root: filepath.Join(dir, "images"), Clock: clk}
	inputs := &inputCache{dir: filepath.Join(dir, "inputs"), now: clk.Now}

	// An input, used first of all.
	if err := os.MkdirAll(filepath.Join(inputs.dir, "tenant"), 0o700); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(inputs.dir, "tenant", "input")
	if err := os.WriteFile(in, make([]byte, 10_000), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(in, t0, t0); err != nil {
		t.Fatal(err)
	}
	// Four images of about 50 kB, used one a minute: running (in use by an
	// attempt), old, recent, newest.
	var digests []string
	for range 4 {
		clk.Advance(time.Minute)
		img, err := random.Image(50_000, 1)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		ld := filepath.Join(t.TempDir(), "layout")
		p, err := layout.Write(ld, empty.Index)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.AppendImage(img); err != nil {
			t.Fatal(err)
		}
		if _, err := images.Unpack(ctx, ld, d.String()); err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d.String())
	}
	running, old, recent, newest := digests[0], digests[1], digests[2], digests[3]
	release := images.Pin(running)
	defer release()

	// Looked at without Lookup, which would count as a use.
	kept := func(d string) bool {
		_, err := os.Stat(filepath.Join(images.Root, d[len("sha256:"):], "rootfs"))
		return err == nil
	}
	// 4 x 50 kB and 10 kB over a 160 kB budget: the input goes, then the
	// oldest image no attempt uses.
	a := &Agent{cfg: Config{Images: images, ImageCacheBytes: 160_000}, inputs: inputs, log: slog.New(slog.DiscardHandler)}
	a.trimCaches(ctx)
	for d, want := range map[string]bool{running: true, old: false, recent: true, newest: true} {
		if kept(d) != want {
			t.Errorf("image %s kept = %v, want %v", d, kept(d), want)
		}
	}
	if _, err := os.Stat(in); !os.IsNotExist(err) {
		t.Errorf("the least recently used input: %v, want it removed", err)
	}
	// A budget below the pinned image alone: every other image goes, the
	// pinned one stays.
	a.cfg.ImageCacheBytes = 10_000
	a.trimCaches(ctx)
	if !kept(running) {
		t.Error("the running attempt's image was removed")
	}
	if kept(recent) || kept(newest) {
		t.Error("unpinned images stayed over the budget")
	}
}
