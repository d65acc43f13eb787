package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/agent"
	"github.com/skiffhq/skiff/internal/agent/agenthttp"
	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/fleet"
	"github.com/skiffhq/skiff/internal/imagestore"
	"github.com/skiffhq/skiff/internal/job/submit"
	"github.com/skiffhq/skiff/internal/ociimage"
	"github.com/skiffhq/skiff/internal/project"
	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/sandbox/gvisor"
	"github.com/skiffhq/skiff/internal/sandbox/process"
)

// localHost is the host inside the server: its identity and the rootfs
// cache that both project preparation and its agent use.
type localHost struct {
	local  *fleet.Local
	images *ociimage.Cache
	data   agent.DataSources
}

// core is the controller's background work: the build queue, the
// dispatcher's sweeps and the local host.
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

// startCore starts the builder, the dispatcher's sweeps and the local host,
// which reaches the controller at controllerURL over the same protocol as a
// remote host. A builder or a local host that cannot start (buildah or
// runsc missing, not root) does not stop the server: pushes then fail with a
// platform error that says what is missing, tasks wait queued, and the log
// says it loudly.
func startCore(ctx context.Context, log *slog.Logger, f *Config, d *duties, shared *imagestore.Shared, dataDir string, projects *project.Service,
	lh localHost, ctrl *fleet.Controller, controllerURL string) (*core, error) {
	imagesDir := filepath.Join(dataDir, "images")
	builder, err := f.Builder, error(nil)
	if builder == nil {
		builder = newBuilder(ctx, f, dataDir, imagesDir, log)
	}
	if shared != nil {
		builder = publishingBuilder{ImageBuilder: builder, images: shared}
	}
	local, images := lh.local, lh.images

	var host *agent.Agent
	var driver sandbox.Driver
	if !f.Host.Disabled {
		if driver = f.HostDriver; driver == nil {
			driver, err = hostDriver(f, dataDir, log)
		}
		if err != nil {
			// Like the builder: the API still serves, tasks wait queued,
			// and the log says why.
			log.Error("local host unavailable: tasks wait queued until it is fixed (or run with --no-local-host)", "err", err)
			f.Host.Disabled = true
		}
	}
	if !f.Host.Disabled {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := driver.Cleanup(cctx) // sandboxes an earlier run left behind
		cancel()
		if err != nil {
			log.Warn("local host: cleaning up after an earlier run", "err", err)
		}
		useWarm(f, driver, local, dataDir)
		token := randomToken()
		ctrl.AllowHost(token, local.ID())
		// Measured, like a remote host's, so that a job's
		// min_single_core_score is placed on this machine by its own score.
		prof, err := agent.MeasureProfile(ctx, 0)
		if err != nil {
			log.Warn("local host: measuring this machine", "err", err)
		}
		gpus := localHostGPUs(ctx, f, dataDir, &prof, log)
		base := localWorkBase(f, dataDir)
		cfg := agent.Config{
			Profile:    prof,
			GPU:        gpus,
			Controller: &agenthttp.Client{BaseURL: controllerURL, Token: token},
			Driver:     driver, Images: images,
			WorkRoot:    filepath.Join(base, "work"),
			CacheRoot:   filepath.Join(base, "cache"),
			DataSources: lh.data, CacheMountMaxBytes: GiB(f.Data.CacheMountsGB),
			// The controller's own host shares its filesystem: images by
			// path, and seeds from the controller's seeds directory only.
			LayoutsInPlace: true, SeedRoot: filepath.Join(dataDir, "seeds"),
			Slots:    f.Host.Slots,
			Capacity: agentCapacity(f),
			Logger:   log.With("component", "host"),
		}
		f.Disk.Apply(&cfg, cfg.WorkRoot, f.Host.Driver == "gvisor")
		host, err = agent.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("local host: %w", err)
		}
	}

	hostCtx, cancelHost := context.WithCancel(context.WithoutCancel(ctx))
	ctx, cancel := context.WithCancel(ctx)
	c := &core{cancel: cancel, cancelHost: cancelHost}
	c.wg.Add(2)
	go func() {
		defer c.wg.Done()
		d.runner.Run(ctx, dutyBuilds, func(ctx context.Context) {
			if err := projects.RunBuilds(ctx, builder); err != nil && ctx.Err() == nil {
				log.Error("build queue stopped", "err", err)
			}
		})
	}()
	go func() {
		defer c.wg.Done()
		if d.presence == nil {
			_ = ctrl.Run(ctx)
			return
		}
		// Each controller forgets its own silent hosts; one at a time
		// requeues the attempts of hosts alive nowhere.
		go func() { _ = ctrl.RunHosts(ctx) }()
		d.runner.Run(ctx, dutyFleetSweep, func(ctx context.Context) { _ = ctrl.RunOrphans(ctx) })
	}()
	if host != nil {
		c.hostWG.Add(1)
		go func() {
			defer c.hostWG.Done()
			_ = host.Run(hostCtx)
			cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := driver.Cleanup(cctx); err != nil {
				log.Warn("local host: cleanup at shutdown", "err", err)
			}
		}()
	}
	return c, nil
}

// newBuilder is the buildah builder Config.Build describes, or, when it
// cannot start (buildah or runsc missing, not root), one whose every build
// fails with a platform error that says why.
func newBuilder(ctx context.Context, f *Config, dataDir, imagesDir string, log *slog.Logger) project.ImageBuilder {
	b, err := build.New(ctx, build.Config{
		BuildahPath: f.Build.Buildah, RunscPath: f.Build.Runsc, StorageRoot: filepath.Join(dataDir, "buildah", "storage"), ImagesDir: imagesDir,
		Isolation: f.Build.Isolation, Network: f.Build.Network, MemoryLimit: f.Build.Memory, CPUs: f.Build.CPUs,
		Workers:           f.Fair.BuildWorkers, // one buildah per queue worker
		AllowedBaseImages: SplitList(f.Build.AllowBases),
	}, log.With("component", "builder"))
	if err != nil {
		log.Error("image builder unavailable: pushes will fail until it is fixed", "err", err)
		return brokenBuilder{err: err}
	}
	return build.ProjectBuilder{B: b}
}

// hostDriver is the local host's sandbox driver: gVisor unless the operator
// explicitly chose the unisolated development driver.
func hostDriver(f *Config, dataDir string, log *slog.Logger) (sandbox.Driver, error) {
	switch f.Host.Driver {
	case "gvisor":
		return gvisor.New(gvisor.Config{RunscPath: f.Build.Runsc, StateDir: filepath.Join(dataDir, "host", "runsc"),
			WarmDir:      filepath.Join(localWorkBase(f, dataDir), "warm"),
			CgroupParent: "skiff-" + HostSuffix(dataDir), Logger: log.With("component", "host")})
	case "process":
		return process.New(process.Config{AllowUnisolated: f.Host.AllowUnisolated, Logger: log.With("component", "host")})
	}
	return nil, fmt.Errorf("unknown --host-driver %q: gvisor or process", f.Host.Driver)
}

// HostSuffix names the local host's cgroup after its data dir, so that two
// servers on one machine never clean up each other's sandboxes.
func HostSuffix(dataDir string) string {
	h := fnv.New32a()
	h.Write([]byte(dataDir))
	return fmt.Sprintf("%08x", h.Sum32())
}

func agentCapacity(f *Config) (c agentproto.Capacity) {
	c.CPU, c.MemoryMB = f.Host.CPUs, f.Host.MemoryMB
	return c
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "hst_" + hex.EncodeToString(b)
}

type brokenBuilder struct{ err error }

func (bb brokenBuilder) Build(context.Context, project.BuildRequest) (*project.BuildResult, error) {
	return nil, errors.Join(errors.New("the image builder is unavailable on this server"), bb.err)
}

func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// useWarm lets the local host keep warm sandboxes of the projects it
// prepares, where its driver can (gVisor on x86-64).
func useWarm(f *Config, driver sandbox.Driver, local *fleet.Local, dataDir string) {
	w, ok := driver.(sandbox.Warmer)
	if !ok || !gvisor.WarmSupported() {
		return
	}
	n := f.Host.Warm
	if n < 0 {
		n = f.Host.Slots
		if n <= 0 {
			n = runtime.NumCPU()
		}
	}
	warm := fleet.WarmConfig{Warmer: w, CacheRoot: filepath.Join(localWorkBase(f, dataDir), "cache"), Size: n,
		CPU: submit.DefaultCPU, MemoryMB: submit.DefaultMemoryMB, PidsLimit: max(f.Disk.PidsLimit, 0)}
	if f.Disk.StorageQuota {
		// The default shape's storage: made at boot, off the start path.
		warm.StorageBytes = submit.DefaultStorageGB << 30
		warm.CacheBytes = GiB(f.Disk.ProjectCacheGB)
	}
	local.UseWarm(warm)
}

// localWorkBase is where the local host keeps what tasks write or make it
// fetch (work dirs, caches, data sources, warm sandboxes): --work-dir, or
// the data dir's host/ when none is given.
func localWorkBase(f *Config, dataDir string) string {
	return f.Disk.Root(filepath.Join(dataDir, "host"))
}
