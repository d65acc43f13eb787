package server

import (
	"context"
	"fmt"

	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/imagestore"
	"github.com/skiffhq/skiff/internal/project"
	"github.com/skiffhq/skiff/internal/store"
)

// sharedBytes are what several controllers keep in the shared blob store
// (docs/scaling.md): build contexts, so that a push accepted by one builds
// on whichever holds the build duty, and images, so that any controller
// hands them to its hosts. Both nil without a shared store.
type sharedBytes struct {
	contexts project.ContextStore
	images   *imagestore.Shared
}

func (s *Server) openShared(ctx context.Context, imagesDir string) (sharedBytes, error) {
	var sb sharedBytes
	pushes, err := s.sharedBlob(ctx, "pushes")
	if err != nil {
		return sb, fmt.Errorf("shared build contexts: %w", err)
	}
	imgs, err := s.sharedBlob(ctx, "images")
	if err != nil {
		return sb, fmt.Errorf("shared images: %w", err)
	}
	if pushes == nil || imgs == nil {
		if s.cfg.DatabaseURL != "" {
			s.log.Warn("no shared blob store (--artifact-store s3://...): build contexts and images stay on the controller " +
				"that made them, so with several controllers pushes and tasks may fail on the others")
		}
		return sb, nil
	}
	sb.contexts = artifact.Files{Blob: pushes, Limit: project.MaxPushBytes}
	sb.images = &imagestore.Shared{Root: imagesDir, Blob: imgs, Log: s.log.With("component", "images"),
		Refresh: s.imageRetention() / 2, Clock: s.clk}
	return sb, nil
}

// publishingBuilder records each image it builds as referenced (so that
// the image sweep gives it a whole retention, even when the same image was
// about to be deleted) and, with a shared store, publishes it there, both
// before the push is recorded published, so no host asks for an image the
// other controllers cannot fetch.
type publishingBuilder struct {
	project.ImageBuilder
	images *imagestore.Shared // nil: no shared store
	db     store.ImageStore
	clk    clock.Clock
}

func (p publishingBuilder) Build(ctx context.Context, req project.BuildRequest) (*project.BuildResult, error) {
	res, err := p.ImageBuilder.Build(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := p.db.ImagesSeen(ctx, []string{res.ImageDigest}, nil, p.clk.Now()); err != nil {
		return nil, fmt.Errorf("record the image: %w", err)
	}
	if p.images == nil {
		return res, nil
	}
	if err := p.images.Publish(ctx, res.ImageDigest); err != nil {
		return nil, fmt.Errorf("publish image to the shared store: %w", err)
	}
	return res, nil
}
