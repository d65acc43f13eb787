package server

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"path/filepath"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/agent/agenthttp"
	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/project"
)

// cleanupTimeout bounds the local host's sandbox cleanup at start and stop.
const cleanupTimeout = time.Minute

// core is the controller's background work that Run starts: the build
// queue, the fleet's sweeps and the local host.
type core struct {
	cancelHost context.CancelFunc // the local host stops first
	cancel     context.CancelFunc
	hostWG     sync.WaitGroup
	wg         sync.WaitGroup
	once       sync.Once
}

func (c *core) stop() {
	c.once.Do(func() {
		c.cancelHost()
		c.hostWG.Wait()
		c.cancel()
		c.wg.Wait()
	})
}

// startCore starts the builder, the fleet's sweeps and the local host. A
// builder or a local host that cannot start (buildah or runsc missing, not
// root) does not stop the server: pushes then fail with a platform error
// that says what is missing, tasks wait queued, and the log says it
// loudly.
func (s *Server) startCore(ctx context.Context) (*core, error) {
	log, d, ctrl := s.log, s.duties, s.ctrl
	builder := s.builder(ctx)
	s.startImageSweeps(builder)
	host, err := s.newLocalAgent(ctx)
	if err != nil {
		return nil, err
	}
	hostCtx, cancelHost := context.WithCancel(context.WithoutCancel(ctx))
	ctx, cancel := context.WithCancel(ctx)
	c := &core{cancel: cancel, cancelHost: cancelHost}
	if builder != nil {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			d.runner.Run(ctx, dutyBuilds, func(ctx context.Context) {
				if err := s.projects.RunBuilds(ctx, builder); err != nil && ctx.Err() == nil {
					log.Error("build queue stopped", "err", err)
				}
			})
		}()
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if d.presence == nil {
			_ = ctrl.Run(ctx)
			return
		}
		// Each controller forgets its own silent hosts; one at a time
		// requeues the attempts of hosts alive nowhere.
		var hosts sync.WaitGroup
		hosts.Go(func() { _ = ctrl.RunHosts(ctx) })
		d.runner.Run(ctx, dutyFleetSweep, func(ctx context.Context) { _ = ctrl.RunOrphans(ctx) })
		hosts.Wait()
	}()
	if host != nil {
		driver := s.local.driver
		c.hostWG.Add(1)
		go func() {
			defer c.hostWG.Done()
			_ = host.Run(hostCtx)
			cctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
			defer cancel()
			if err := driver.Cleanup(cctx); err != nil {
				log.Warn("local host: cleanup at shutdown", "err", err)
			}
		}()
	}
	return c, nil
}

// builder is what runs the build queue: buildah with RUN steps in gVisor,
// publishing to the shared store when there is one; nil with
// Build.Disabled.
func (s *Server) builder(ctx context.Context) project.ImageBuilder {
	if s.cfg.Build.Disabled {
		return nil
	}
	builder := s.cfg.Builder
	if builder == nil {
		builder = s.buildah(ctx)
	}
	return publishingBuilder{ImageBuilder: builder, images: s.shared.images, db: s.db, clk: s.clk}
}

// buildah is the production builder, or one that fails every build with
// the reason buildah could not start.
func (s *Server) buildah(ctx context.Context) project.ImageBuilder {
	bc, log := s.cfg.Build, s.log
	b, err := build.New(ctx, build.Config{
		BuildahPath: cmp.Or(bc.Buildah, build.DefaultBuildahPath), RunscPath: s.runsc(),
		StorageRoot: filepath.Join(s.dataDir, "buildah", "storage"), ImagesDir: filepath.Join(s.dataDir, "images"),
		Isolation: cmp.Or(bc.Isolation, build.IsolationOCI), Network: cmp.Or(bc.Network, build.NetworkFiltered),
		MemoryLimit: cmp.Or(bc.Memory, "2g"), CPUs: bc.CPUs,
		Workers:           s.cfg.Fair.BuildWorkers, // one buildah per queue worker
		AllowedBaseImages: bc.AllowedBaseImages,
	}, log.With("component", "builder"))
	if err != nil {
		log.Error("image builder unavailable: pushes will fail until it is fixed", "err", err)
		return brokenBuilder{err: err}
	}
	return build.ProjectBuilder{B: b}
}

// runsc is the gVisor runsc of build RUN steps and the local host's tasks.
func (s *Server) runsc() string { return cmp.Or(s.cfg.Build.Runsc, build.DefaultRunscPath) }

type brokenBuilder struct{ err error }

func (bb brokenBuilder) Build(context.Context, project.BuildRequest) (*project.BuildResult, error) {
	return nil, errors.Join(errors.New("the image builder is unavailable on this server"), bb.err)
}

// newAgentClient is the local host's client of the agent protocol.
func newAgentClient(baseURL, token string) *agenthttp.Client {
	return &agenthttp.Client{BaseURL: baseURL, Token: token}
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "hst_" + hex.EncodeToString(b)
}
