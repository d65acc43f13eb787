package imagestore_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/artifact/s3test"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/imagestore"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/store/storetest"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
	"github.com/skiffhq/skiff/internal/testenv"
)

// TestSweepDeletesUnreferencedImages, on both stores: two revisions of a
// project share their base layers. While a queued job runs the old one it
// stays; once the job is over and the retention has passed with no
// reference, its layout and the blobs only it used go, and the newer
// revision's image stays whole in the blob store.
func TestSweepDeletesUnreferencedImages(t *testing.T) {
	local := func(t *testing.T) artifact.Blob {
		b, err := artifact.NewLocal(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, eng := range storetest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			if eng.Skip != "" {
				testenv.Skip(t, eng.Skip)
			}
			testSweep(t, eng.Open(t), local(t))
		})
	}
	// The shared store of several controllers: S3 (a real versitygw).
	t.Run("sqlite+s3", func(t *testing.T) {
		testSweep(t, storetest.OpenSQLite(t), s3test.Start(t).Blob(t, "skiff/images"))
	})
}

func testSweep(t *testing.T, db store.Store, blob artifact.Blob) {
	ctx := t.Context()
	// The blob stores date their content by the real clock, which the
	// sweep compares with its own: the fake one starts now.
	now := time.Now().UTC()
	clk := clock.NewFake(now)
	dir := t.TempDir()
	shared := &imagestore.Shared{Root: dir, Blob: blob, Clock: clk, Refresh: 30 * time.Minute}
	base, err := random.Image(2048, 2)
	if err != nil {
		t.Fatal(err)
	}
	oldImg, oldDigest := writeImage(t, dir, base)
	newImg, newDigest := writeImage(t, dir, base)
	for _, d := range []string{oldDigest, newDigest} {
		if err := shared.Publish(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	p := tf.Project(t, db, nil)
	oldPush := publishPush(t, db, p, oldDigest, now)
	publishPush(t, db, p, newDigest, now.Add(time.Second))
	jp := tf.JobParams(t, db, &tf.JobOpts{Project: p})
	jp.Job.PushID = oldPush.ID
	job := tf.JobFrom(t, db, jp)

	sw := &imagestore.Sweeper{Store: db, Dir: dir, Blob: blob, Retention: time.Hour, Clock: clk}
	sweep := func() imagestore.SweepResult {
		t.Helper()
		res, err := sw.Sweep(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// Referenced (the queued job, the published revision): kept however
	// long it has been, by sweeps more frequent than the retention.
	for range 8 {
		if res := sweep(); res != (imagestore.SweepResult{}) {
			t.Fatalf("sweep while both are referenced: %+v", res)
		}
		clk.Advance(30 * time.Minute)
	}
	for _, img := range []v1.Image{oldImg, newImg} {
		wantBlobs(t, blob, img, true)
	}
	// The job ends: the old revision is unreferenced from the next sweep,
	// and deleted a retention after the last sweep that saw it in use.
	sweep()
	if _, err := db.JobSetStatus(ctx, &store.JobSetStatusParams{ID: job.ID, To: store.JobCancelled, Now: clk.Now()}); err != nil {
		t.Fatal(err)
	}
	if res := sweep(); res != (imagestore.SweepResult{}) {
		t.Fatalf("sweep right after the job's end: %+v", res)
	}
	clk.Advance(59 * time.Minute)
	if res := sweep(); res != (imagestore.SweepResult{}) {
		t.Fatalf("sweep within the retention: %+v", res)
	}
	clk.Advance(2 * time.Minute)
	res := sweep()
	if res.Layouts != 1 || res.Blobs != 3 { // manifest, config, its own layer: the base layers are the new one's too
		t.Errorf("sweep past the retention: %+v, want 1 layout and 3 blobs", res)
	}
	oldHex, newHex := oldDigest[len("sha256:"):], newDigest[len("sha256:"):]
	if _, err := os.Stat(filepath.Join(dir, oldHex)); !os.IsNotExist(err) {
		t.Errorf("old layout: %v, want it removed", err)
	}
	if _, err := os.Stat(filepath.Join(dir, newHex, "index.json")); err != nil {
		t.Errorf("new layout: %v", err)
	}
	wantBlobs(t, blob, newImg, true)
	if _, err := blob.Stat(ctx, oldHex); err == nil {
		t.Error("old manifest still in the blob store")
	}
	// Another controller that never had it fetches the new one whole.
	other := &imagestore.Shared{Root: t.TempDir(), Blob: blob}
	if _, err := other.Layout(ctx, newDigest); err != nil {
		t.Errorf("fetch the kept image: %v", err)
	}
	rows, err := db.ImageList(ctx)
	if err != nil || len(rows) != 1 || rows[0].Digest != newDigest {
		t.Errorf("ImageList after the sweep = %v, %v; want only the new image", rows, err)
	}
}

// writeImage writes base plus a layer of its own as a layout under dir.
func writeImage(t *testing.T, dir string, base v1.Image) (v1.Image, string) {
	t.Helper()
	l, err := random.Layer(1024, types.OCILayer)
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(base, l)
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	p, err := layout.Write(filepath.Join(dir, d.Hex), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	return img, d.String()
}

// wantBlobs checks that every blob of img is (or is not) in the store.
func wantBlobs(t *testing.T, blob artifact.Blob, img v1.Image, present bool) {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	hashes := []v1.Hash{d, m.Config.Digest}
	for _, l := range m.Layers {
		hashes = append(hashes, l.Digest)
	}
	for _, h := range hashes {
		if _, err := blob.Stat(t.Context(), h.Hex); (err == nil) != present {
			t.Errorf("blob %s: present = %v, want %v", h.Hex, err == nil, present)
		}
	}
}

func publishPush(t *testing.T, db store.Store, p *store.Project, digest string, at time.Time) *store.Push {
	t.Helper()
	pu := tf.Push(t, db, &tf.PushOpts{Project: p, Now: at})
	if _, err := db.PushStart(t.Context(), pu.ID, at); err != nil {
		t.Fatal(err)
	}
	pu, err := db.PushFinish(t.Context(), &store.PushFinishParams{ID: pu.ID, Status: store.PushPublished,
		ImageRef: "img", ImageDigest: digest, Now: at})
	if err != nil {
		t.Fatal(err)
	}
	return pu
}

// TestPublishRewritesOldBlobs: a blob the store holds already is written
// again when its copy is older than Refresh (so that the sweep, which
// spares blobs younger than its retention, never deletes a layer a new
// image reuses), and left alone when it is younger.
func TestPublishRewritesOldBlobs(t *testing.T) {
	ctx := t.Context()
	blob, err := artifact.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Now().UTC())
	dir := t.TempDir()
	shared := &imagestore.Shared{Root: dir, Blob: blob, Clock: clk, Refresh: time.Hour}
	base, err := random.Image(1024, 1)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := base.Layers()
	if err != nil {
		t.Fatal(err)
	}
	shared0, _ := layers[0].Digest()
	modTime := func() time.Time {
		t.Helper()
		info, err := blob.Stat(ctx, shared0.Hex)
		if err != nil {
			t.Fatal(err)
		}
		return info.ModTime
	}
	for i, advance := range []time.Duration{0, 30 * time.Minute, 2 * time.Hour} {
		clk.Advance(advance)
		before := time.Time{}
		if i > 0 {
			before = modTime()
		}
		time.Sleep(10 * time.Millisecond) // the blob store's clock is the real one
		_, d := writeImage(t, dir, base)
		if err := shared.Publish(ctx, d); err != nil {
			t.Fatal(err)
		}
		switch after := modTime(); {
		case i == 1 && !after.Equal(before):
			t.Errorf("a shared layer younger than Refresh was written again")
		case i == 2 && !after.After(before):
			t.Errorf("a shared layer older than Refresh was not written again")
		}
	}
}
