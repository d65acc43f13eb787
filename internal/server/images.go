package server

import (
	"cmp"
	"context"
	"path/filepath"
	"time"

	"github.com/skiffhq/skiff/internal/artifact"
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
	// The artifact sweeper's loop: one task, each round a sweep (which
	// deletes what is due, however much); n counts layouts and blobs.
	loop := func(owner bool) func(ctx context.Context) {
		sweeper := &artifact.Sweeper{Interval: cmp.Or(s.cfg.Artifacts.ImageSweepInterval, time.Minute),
			MaxBatchesPerRound: 1, Logger: sw.Log, Tasks: []artifact.SweepTask{{Name: "images",
				Run: func(ctx context.Context, _ int) (int, error) {
					res, err := sw.Sweep(ctx, owner)
					return res.Layouts + res.Blobs, err
				}}}}
		return sweeper.Run
	}
	s.runDuty(dutyImages, loop(true))
	if s.duties.shared {
		s.goBG(loop(false))
	}
}
