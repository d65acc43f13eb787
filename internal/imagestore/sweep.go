package imagestore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/store"
)

// DefaultRetention is how long an image nothing refers to is kept: long
// enough for every race between a sweep and a push, a submission or a
// host's fetch, and for an operator to notice a mistake.
const DefaultRetention = 24 * time.Hour

// Sweeper deletes images nothing refers to once they have been
// unreferenced for Retention: this controller's OCI layouts under Dir and,
// on the controller that holds the image duty, the images' blobs in the
// shared blob store (those no image still kept uses) and their rows.
//
// What refers to an image is the store's ImageDigestsInUse (a project's
// published revision, an open job or attempt) and Pinned (this machine's
// warm pools). Each round writes down when it saw each image referenced,
// and when it first found a layout on disk; the grace runs from there, so
// an image is deleted only after Retention with no sweep seeing a
// reference, whatever made it unreferenced (a newer push, a job's end, a
// project's deletion).
type Sweeper struct {
	Store     store.ImageStore
	Dir       string        // this controller's layouts, <Dir>/<hex>
	Blob      artifact.Blob // the shared store's images; nil without one
	Retention time.Duration // 0: DefaultRetention
	Clock     clock.Clock
	// Pinned lists images in use on this machine that the store does not
	// know of (the local host's warm pools); nil: none.
	Pinned func() []string
	// Prune, when set, runs after a round that removed layouts, to free
	// what only they held (the builder's blob pool, whose blobs the
	// layouts hard-link).
	Prune func(ctx context.Context) (int, error)
	Log   *slog.Logger
}

// SweepResult counts what a round deleted.
type SweepResult struct {
	Layouts int // layouts removed from Dir
	Blobs   int // blobs deleted from the shared store
}

// Sweep runs one round. owner says this controller holds the image duty:
// only the owner deletes blobs and forgets images; every controller
// removes its own layouts of images past their grace.
func (s *Sweeper) Sweep(ctx context.Context, owner bool) (SweepResult, error) {
	res, err := s.sweep(ctx, owner)
	if res.Layouts > 0 && s.Prune != nil {
		if _, perr := s.Prune(ctx); perr != nil {
			err = errors.Join(err, fmt.Errorf("prune the build blob pool: %w", perr))
		}
	}
	return res, err
}

func (s *Sweeper) sweep(ctx context.Context, owner bool) (SweepResult, error) {
	var res SweepResult
	now := s.Clock.Now()
	cutoff := now.Add(-cmp.Or(s.Retention, DefaultRetention))
	inUse, err := s.Store.ImageDigestsInUse(ctx)
	if err != nil {
		return res, fmt.Errorf("images in use: %w", err)
	}
	if s.Pinned != nil {
		inUse = append(inUse, s.Pinned()...)
	}
	found, err := s.layouts()
	if err != nil {
		return res, err
	}
	if err := s.Store.ImagesSeen(ctx, inUse, found, now); err != nil {
		return res, fmt.Errorf("record images seen: %w", err)
	}
	rows, err := s.Store.ImageList(ctx)
	if err != nil {
		return res, fmt.Errorf("list images: %w", err)
	}
	var kept []string
	var stale []store.ImageRecord
	for _, r := range rows {
		if r.ReferencedAt.Before(cutoff) {
			stale = append(stale, r)
		} else {
			kept = append(kept, r.Digest)
		}
	}
	if len(stale) == 0 {
		return res, nil
	}
	if !owner {
		for _, r := range stale {
			if s.removeLayout(r.Digest) {
				res.Layouts++
			}
		}
		return res, nil
	}
	// The blobs of every image kept (in use, or still in its grace) stay,
	// whichever stale image also lists them: layers are shared.
	var protected map[string]bool
	if s.Blob != nil {
		if protected, err = s.blobsOfAll(ctx, kept); err != nil {
			return res, err
		}
	}
	var errs []error
	for _, r := range stale {
		n, removed, err := s.delete(ctx, r, cutoff, protected)
		res.Blobs += n
		if removed {
			res.Layouts++
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return res, errors.Join(errs...)
}

// delete forgets the stale image r, unless something referred to it since
// the rows were read, then removes its layout and its blobs that nothing
// kept uses. A blob written after cutoff is left: a publish that found it
// present reuses it (Publish rewrites blobs older than half the retention,
// so a reused blob is always younger than cutoff). When deleting fails the
// row comes back as it was, so the next round tries again.
func (s *Sweeper) delete(ctx context.Context, r store.ImageRecord, cutoff time.Time, protected map[string]bool) (int, bool, error) {
	var blobs []string
	if s.Blob != nil {
		var err error
		if blobs, err = s.blobsOf(ctx, r.Digest); err != nil {
			return 0, false, err
		}
	}
	ok, err := s.Store.ImageForget(ctx, r.Digest, cutoff)
	if err != nil || !ok {
		return 0, false, err
	}
	removed := s.removeLayout(r.Digest)
	n := 0
	for _, b := range blobs {
		if protected[b] {
			continue
		}
		info, err := s.Blob.Stat(ctx, b)
		if errors.Is(err, artifact.ErrNotFound) {
			continue
		}
		if err == nil && !info.ModTime.Before(cutoff) {
			continue
		}
		if err == nil {
			err = s.Blob.Delete(ctx, b)
		}
		if err != nil {
			if rerr := s.Store.ImagesSeen(ctx, nil, []string{r.Digest}, r.ReferencedAt); rerr != nil {
				err = errors.Join(err, rerr)
			}
			return n, removed, fmt.Errorf("delete blob %s of image %s: %w", b, r.Digest, err)
		}
		n++
	}
	if s.Log != nil {
		s.Log.Info("image deleted", "digest", r.Digest, "unreferenced_since", r.ReferencedAt, "blobs", n)
	}
	return n, removed, nil
}

// layouts lists the images with a layout under Dir.
func (s *Sweeper) layouts() ([]string, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list image layouts: %w", err)
	}
	var out []string
	for _, e := range entries {
		switch {
		case e.IsDir() && artifact.ValidDigest(e.Name()):
			out = append(out, "sha256:"+e.Name())
		case strings.HasPrefix(e.Name(), ".delete-"):
			_ = os.RemoveAll(filepath.Join(s.Dir, e.Name())) // a removal a crash cut short
		}
	}
	return out, nil
}

// removeLayout removes <Dir>/<hex>, renaming it aside first so that no
// reader ever sees half a layout, and says whether there was one.
func (s *Sweeper) removeLayout(digest string) bool {
	h, err := digestHex(digest)
	if err != nil {
		return false
	}
	dir := filepath.Join(s.Dir, h)
	trash := filepath.Join(s.Dir, ".delete-"+h+"-"+randomHex())
	if err := os.Rename(dir, trash); err != nil {
		if !errors.Is(err, fs.ErrNotExist) && s.Log != nil {
			s.Log.Warn("remove image layout", "digest", digest, "err", err)
		}
		return false
	}
	if err := os.RemoveAll(trash); err != nil && s.Log != nil {
		s.Log.Warn("remove image layout", "digest", digest, "err", err)
	}
	return true
}

// blobsOfAll is the set of blobs the images list.
func (s *Sweeper) blobsOfAll(ctx context.Context, digests []string) (map[string]bool, error) {
	set := map[string]bool{}
	for _, d := range digests {
		blobs, err := s.blobsOf(ctx, d)
		if err != nil {
			return nil, err
		}
		for _, b := range blobs {
			set[b] = true
		}
	}
	return set, nil
}

// blobsOf lists an image's blobs (manifest, config, layers) from its
// manifest, read from the local layout or else the blob store; none when
// neither has it (an image never published, or deleted already).
func (s *Sweeper) blobsOf(ctx context.Context, digest string) ([]string, error) {
	h, err := digestHex(digest)
	if err != nil {
		return nil, nil // not an image this store could hold
	}
	raw, err := s.manifest(ctx, h)
	if errors.Is(err, artifact.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("manifest of image %s: %w", digest, err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("manifest of image %s: %w", digest, err)
	}
	out := []string{h}
	for _, d := range append([]descriptor{m.Config}, m.Layers...) {
		if dh, err := digestHex(d.Digest); err == nil {
			out = append(out, dh)
		}
	}
	return out, nil
}

func (s *Sweeper) manifest(ctx context.Context, h string) ([]byte, error) {
	f, err := os.Open(filepath.Join(s.Dir, h, "blobs", "sha256", h))
	if errors.Is(err, fs.ErrNotExist) {
		if s.Blob == nil {
			return nil, artifact.ErrNotFound
		}
		r, err := s.Blob.Open(ctx, h, 0, maxManifestBytes)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return io.ReadAll(r)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxManifestBytes))
}
