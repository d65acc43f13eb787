package ociimage_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/ociimage"
)

// TestEntriesPinAndRemove: entries report their size and last use (a
// lookup counts as a use); a pinned image is not removed, an unpinned one
// is, and is unpacked again on the next use.
func TestEntriesPinAndRemove(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	c := &ociimage.Cache{Root: filepath.Join(t.TempDir(), "images"), Clock: clk}
	dirA, a := writeLayout(t, layerOf(t, map[string]string{"a": strings.Repeat("A", 1000)}))
	dirB, b := writeLayout(t, layerOf(t, map[string]string{"b": strings.Repeat("B", 3000)}))
	if _, err := c.Unpack(ctx, dirA, a); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if _, err := c.Unpack(ctx, dirB, b); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if _, ok, err := c.Lookup(a); !ok || err != nil {
		t.Fatalf("Lookup(a) = %v, %v", ok, err)
	}
	es, err := c.Entries()
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(es, func(x, y ociimage.Entry) int { return x.Used.Compare(y.Used) })
	if len(es) != 2 || es[0].Digest != b || es[1].Digest != a || !es[1].Used.Equal(t0.Add(2*time.Minute)) ||
		es[0].Bytes < 3000 || es[1].Bytes < 1000 || es[1].Bytes >= 3000 {
		t.Fatalf("Entries = %+v; want b (3000 bytes, used at +1m) then a (1000 bytes, used at +2m)", es)
	}

	release := c.Pin(b)
	if ok, err := c.Remove(ctx, b); ok || err != nil {
		t.Errorf("Remove of a pinned image = %v, %v; want false", ok, err)
	}
	release()
	if ok, err := c.Remove(ctx, b); !ok || err != nil {
		t.Errorf("Remove once released = %v, %v; want true", ok, err)
	}
	if _, ok, _ := c.Lookup(b); ok {
		t.Error("Lookup finds the removed image")
	}
	img, err := c.Unpack(ctx, dirB, b)
	if err != nil || !img.Fresh {
		t.Errorf("Unpack after Remove = %+v, %v; want a fresh unpack", img, err)
	}
}
