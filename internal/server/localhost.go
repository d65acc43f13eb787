package server

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"runtime"

	"github.com/skiffhq/skiff/internal/agent"
	"github.com/skiffhq/skiff/internal/agent/datasrc"
	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/diskfree"
	"github.com/skiffhq/skiff/internal/fleet"
	"github.com/skiffhq/skiff/internal/gpu"
	"github.com/skiffhq/skiff/internal/job/submit"
	"github.com/skiffhq/skiff/internal/ociimage"
	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/sandbox/gvisor"
	"github.com/skiffhq/skiff/internal/sandbox/process"
	"github.com/skiffhq/skiff/internal/store"
)

// localHost is the host inside the server: its identity, the rootfs cache
// that both project preparation and its agent use, and its data sources.
type localHost struct {
	local  *fleet.Local
	images *ociimage.Cache
	data   agent.DataSources
	driver sandbox.Driver // set once the host starts; nil without one
}

// prepareLocalHost makes the local host's identity, image cache and
// data-source cache, which project preparation needs whether or not the
// host itself runs.
func (s *Server) prepareLocalHost(imagesDir string) error {
	hostLog := s.log.With("component", "host")
	s.local.images = &ociimage.Cache{
		Root: filepath.Join(s.dataDir, "host", "images"), MountPoints: sandbox.MountPoints(), Logger: hostLog,
	}
	local, err := fleet.NewLocal(filepath.Join(s.dataDir, "host"), imagesDir, s.local.images)
	if err != nil {
		return err
	}
	s.local.local = local
	// One data-source cache for the local host: init fills it, tasks read it.
	dc := s.cfg.DataSources
	dc.Root, dc.Logger = filepath.Join(s.workBase(), "data"), hostLog
	data, err := datasrc.New(dc)
	if err != nil {
		return err
	}
	s.local.data = data
	local.DataSources, local.ProjectEnv = data, projectEnv(s.db)
	return nil
}

// newLocalAgent makes the local host's agent, which reaches the controller
// at s.URL() over the same protocol as a remote host. nil, nil when the
// host is disabled or its driver cannot start (the log says why: the API
// still serves and tasks wait queued).
func (s *Server) newLocalAgent(ctx context.Context) (*agent.Agent, error) {
	h, log := s.cfg.Host, s.log
	if h.Disabled {
		return nil, nil
	}
	driver := s.cfg.Driver
	if driver == nil {
		var err error
		if driver, err = s.hostDriver(); err != nil {
			// Like the builder: the API still serves, tasks wait queued,
			// and the log says why.
			log.Error("local host unavailable: tasks wait queued until it is fixed (or run with --no-local-host)", "err", err)
			return nil, nil
		}
	}
	cctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	err := driver.Cleanup(cctx) // sandboxes an earlier run left behind
	cancel()
	if err != nil {
		log.Warn("local host: cleaning up after an earlier run", "err", err)
	}
	s.useWarm(driver)
	token := randomToken()
	s.ctrl.AllowHost(token, s.local.local.ID())
	// Measured, like a remote host's, so that a job's
	// min_single_core_score is placed on this machine by its own score.
	prof, err := agent.MeasureProfile(ctx, 0)
	if err != nil {
		log.Warn("local host: measuring this machine", "err", err)
	}
	gpus := s.localHostGPUs(ctx, &prof)
	base := s.workBase()
	cfg := agent.Config{
		Profile:    prof,
		GPU:        gpus,
		Controller: newAgentClient(s.url, token),
		Driver:     driver, Images: s.local.images,
		WorkRoot:    filepath.Join(base, "work"),
		CacheRoot:   filepath.Join(base, "cache"),
		DataSources: s.local.data, CacheMountMaxBytes: h.CacheMountsMaxBytes, ImageCacheBytes: h.ImageCacheBytes,
		// The controller's own host shares its filesystem: images by
		// path, and seeds from the controller's seeds directory only.
		LayoutsInPlace: true, SeedRoot: filepath.Join(s.dataDir, "seeds"),
		Slots:    h.Slots,
		Capacity: agentproto.Capacity{CPU: h.CPUs, MemoryMB: h.MemoryMB},
		Logger:   log.With("component", "host"),
	}
	s.applyDisk(&cfg, base, h.Driver == "" || h.Driver == "gvisor")
	a, err := agent.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("local host: %w", err)
	}
	s.local.local.SetTrim(a.TrimCaches)
	s.local.driver = driver
	return a, nil
}

// hostDriver is the local host's sandbox driver: gVisor unless the operator
// explicitly chose the unisolated development driver.
func (s *Server) hostDriver() (sandbox.Driver, error) {
	h, log := s.cfg.Host, s.log.With("component", "host")
	switch h.Driver {
	case "", "gvisor":
		return gvisor.New(gvisor.Config{RunscPath: s.runsc(), StateDir: filepath.Join(s.dataDir, "host", "runsc"),
			WarmDir:      filepath.Join(s.workBase(), "warm"),
			CgroupParent: "skiff-" + CgroupSuffix(s.dataDir), Logger: log})
	case "process":
		return process.New(process.Config{AllowUnisolated: h.AllowUnisolated, Logger: log})
	}
	return nil, fmt.Errorf("unknown --host-driver %q: gvisor or process", h.Driver)
}

// CgroupSuffix names a host's cgroup after its data dir, so that two
// servers or hosts on one machine never clean up each other's sandboxes.
func CgroupSuffix(dataDir string) string {
	h := fnv.New32a()
	h.Write([]byte(dataDir))
	return fmt.Sprintf("%08x", h.Sum32())
}

// useWarm lets the local host keep warm sandboxes of the projects it
// prepares, where its driver can (gVisor on x86-64).
func (s *Server) useWarm(driver sandbox.Driver) {
	w, ok := driver.(sandbox.Warmer)
	if !ok || !gvisor.WarmSupported() {
		return
	}
	h := s.cfg.Host
	n := h.Warm
	if n < 0 {
		n = h.Slots
		if n <= 0 {
			n = runtime.NumCPU()
		}
	}
	warm := fleet.WarmConfig{Warmer: w, CacheRoot: filepath.Join(s.workBase(), "cache"), Size: n,
		CPU: submit.DefaultCPU, MemoryMB: submit.DefaultMemoryMB, PidsLimit: max(h.PidsLimit, 0)}
	if h.StorageQuota {
		// The default shape's storage: made at boot, off the start path.
		warm.StorageBytes = submit.DefaultStorageGB << 30
		warm.CacheBytes = h.ProjectCacheBytes
	}
	s.local.local.UseWarm(warm)
}

// applyDisk sets the agent's disk and process limits; quota says whether
// the driver can take a storage quota (gvisor can, the process driver runs
// as an unprivileged development aid and cannot).
func (s *Server) applyDisk(cfg *agent.Config, workRoot string, quota bool) {
	h := s.cfg.Host
	cfg.PidsLimit = h.PidsLimit
	cfg.StorageQuota = h.StorageQuota && quota
	cfg.CacheBytes = h.ProjectCacheBytes
	cfg.CacheMountBytes = h.ProjectCacheMountBytes
	cfg.MaxOutputFiles = h.MaxOutputFiles
	cfg.MaxOutputBytes = h.MaxOutputBytes
	cfg.DiskFree = &diskfree.Checker{Dir: workRoot, Min: h.WorkMinFree}
}

// localHostGPUs is what the local host lends (Host.GPUs): like a remote
// host's, except that a failure only leaves it without GPUs, said loudly
// in the log, as a builder or host that cannot start does.
func (s *Server) localHostGPUs(ctx context.Context, prof *agentproto.ResourceProfile) *gpu.Host {
	h, log := s.cfg.Host, s.log
	if h.GPUs == 0 {
		return nil
	}
	g, err := gpu.DiscoverLent(ctx, s.runsc(), h.GPUDriverDir, filepath.Join(s.dataDir, "host", "gpu-driver"), h.GPUs)
	if err != nil {
		log.Error("local host: no GPUs lent: GPU tasks wait for a host that has them", "err", err)
		return nil
	}
	if g.MemoryMB > 0 {
		prof.GPUMemoryMB = g.MemoryMB
	}
	log.Info("local host: gpus found", "gpus", len(g.GPUs), "driver_version", g.DriverVersion, "gpu_memory_mb", g.MemoryMB)
	return g
}

// workBase is where the local host keeps what tasks write or make it
// fetch (work dirs, caches, data sources, warm sandboxes): Host.WorkDir,
// or the data dir's host/ when none is given.
func (s *Server) workBase() string {
	if s.cfg.Host.WorkDir == "" {
		return filepath.Join(s.dataDir, "host")
	}
	return filepath.Clean(s.cfg.Host.WorkDir)
}

// projectEnv reads a project's env from the store, for the tenant's own hub
// token when the local host prepares a revision's data sources.
func projectEnv(db store.Store) func(ctx context.Context, projectID string) (map[string]string, error) {
	return func(ctx context.Context, projectID string) (map[string]string, error) {
		p, err := db.ProjectGetByID(ctx, projectID)
		if err != nil || len(p.Env) == 0 {
			return nil, err
		}
		var env map[string]string
		if err := json.Unmarshal(p.Env, &env); err != nil {
			return nil, fmt.Errorf("project %s env: %w", projectID, err)
		}
		return env, nil
	}
}
