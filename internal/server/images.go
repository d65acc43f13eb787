package server

import (
	"cmp"
	"context"
	"path/filepath"
	"time"

	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/imagestore"
	"github.com/skiffhq/skiff/internal/project"
)

// dutyImages deletes images nothing refers to from the shared blob store
// (and their rows); every controller also removes its own layouts of them.
const dutyImages = "images"

// imageRetention is the grace of an image nothing refers to.
func (s *Server) imageRetention() time.Duration {
	return cmp.Or(s.cfg.Artifacts.ImageRetention, imagestore.DefaultRetention)
}

// startImageSweeps runs the image sweep (docs/hosting.md, "Images"): as a
// singleton duty, which deletes blobs and forgets images, and, where other
// controllers share the store, also on this controller alone for its own
// layouts. builder is this controller's (nil without one): its blob pool
// is pruned after layouts go.
func (s *Server) startImageSweeps(builder project.ImageBuilder) {
	sw := &imagestore.Sweeper{Store: s.db, Dir: filepath.Join(s.dataDir, "images"), Retention: s.imageRetention(),
		Clock: s.clk, Pinned: s.local.local.WarmImages, Log: s.log.With("component", "images")}
	if pb, ok := builder.(publishingBuilder); ok {
		if b, ok := pb.ImageBuilder.(build.ProjectBuilder); ok {
			sw.Prune = b.B.PruneBlobPool
		}
	}
	if s.shared.images != nil {
		sw.Blob = s.shared.images.Blob
	}
	interval := cmp.Or(s.cfg.Artifacts.ImageSweepInterval, time.Minute)
	loop := func(owner bool) func(ctx context.Context) {
		return func(ctx context.Context) {
			t := time.NewTimer(0)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				res, err := sw.Sweep(ctx, owner)
				if err != nil && ctx.Err() == nil {
					sw.Log.Error("image sweep failed", "err", err)
				}
				if res.Layouts > 0 || res.Blobs > 0 {
					sw.Log.Info("image sweep", "layouts_removed", res.Layouts, "blobs_deleted", res.Blobs)
				}
				t.Reset(interval)
			}
		}
	}
	s.runDuty(dutyImages, loop(true))
	if s.duties.shared {
		s.goBG(loop(false))
	}
}
