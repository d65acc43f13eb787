package cli

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"

	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/fleet"
	"github.com/skiffhq/skiff/internal/ociimage"
	"github.com/skiffhq/skiff/internal/project"
	"github.com/skiffhq/skiff/internal/sandbox"
)

// core is the controller's background work: the build queue and the local
// host.
type core struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (c *core) stop() {
	c.cancel()
	c.wg.Wait()
}

// startCore starts the builder and the local host. A builder that cannot
// start (buildah or runsc missing) does not stop the server: pushes then
// fail with a platform error that says what is missing, and the log says it
// loudly.
func startCore(ctx context.Context, log *slog.Logger, f *serverFlags, projects *project.Service, bill *billing.Service) (*core, error) {
	dataDir, err := filepath.Abs(f.dataDir)
	if err != nil {
		return nil, err
	}
	imagesDir := filepath.Join(dataDir, "images")
	var builder project.ImageBuilder
	b, err := build.New(ctx, build.Config{
		RunscPath: f.build.runsc, StorageRoot: filepath.Join(dataDir, "buildah", "storage"), ImagesDir: imagesDir,
		Isolation: f.build.isolation, Network: f.build.network, MemoryLimit: f.build.memory,
		AllowedBaseImages: splitList(f.build.allowBases),
	}, log.With("component", "builder"))
	if err != nil {
		log.Error("image builder unavailable: pushes will fail until it is fixed", "err", err)
		builder = brokenBuilder{err: err}
	} else {
		builder = imageBuilder{b: b}
	}
	host, err := fleet.NewLocal(filepath.Join(dataDir, "host"), imagesDir, &ociimage.Cache{
		Root: filepath.Join(dataDir, "host", "images"), MountPoints: sandbox.MountPoints(), Logger: log.With("component", "host"),
	})
	if err != nil {
		return nil, err
	}
	projects.SetPreparation(host, bill)

	ctx, cancel := context.WithCancel(ctx)
	c := &core{cancel: cancel}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if err := projects.RunBuilds(ctx, builder); err != nil {
			log.Error("build queue stopped", "err", err)
		}
	}()
	return c, nil
}

type brokenBuilder struct{ err error }

func (bb brokenBuilder) Build(context.Context, project.BuildRequest) (*project.BuildResult, error) {
	return nil, errors.Join(errors.New("the image builder is unavailable on this server"), bb.err)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
