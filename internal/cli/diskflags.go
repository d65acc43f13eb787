package cli

import (
	"errors"
	"flag"
	"path/filepath"

	"github.com/skiffhq/skiff/internal/agent"
	"github.com/skiffhq/skiff/internal/diskfree"
	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/server"
)

// hostDiskFlags bound what one task can do to its host's disk and process
// table, for the local host of `skiff server` and for `skiff host` alike
// (docs/hosting.md, "Disk and processes").
type hostDiskFlags struct {
	workDir        string
	workMinFree    diskfree.Watermark
	pidsLimit      int64
	maxOutputFiles int
	maxOutputGB    float64
	storageQuota   bool
	projectCacheGB float64
	// projectCacheMountsGB bounds each project's cache_mounts together.
	projectCacheMountsGB float64
}

func (d *hostDiskFlags) register(fs *flag.FlagSet, defaultWorkDir string) {
	d.workMinFree = diskfree.DefaultWatermark
	fs.StringVar(&d.workDir, "work-dir", "", "directory for the attempts' work dirs, caches, data sources and warm sandboxes; best on a filesystem of its own, so that tasks can never fill the disk the database lives on (default: "+defaultWorkDir+") (env SKIFF_WORK_DIR)")
	fs.Var(&d.workMinFree, "work-min-free-disk", "free-disk watermark of --work-dir: under it the host takes no new work and says why in its heartbeat; bytes (2GiB), a percentage (5%) or both, the larger wins; 0: none (env SKIFF_WORK_MIN_FREE_DISK)")
	fs.Int64Var(&d.pidsLimit, "pids-limit", agent.DefaultPidsLimit, "processes and threads one task may run at once; past it fork fails with EAGAIN, so a fork bomb ends as a failed attempt (-1: no limit) (env SKIFF_PIDS_LIMIT)")
	fs.IntVar(&d.maxOutputFiles, "max-output-files", sandbox.DefaultMaxOutputFiles, "files (and directories) one attempt may leave in its artifact directory; past it its outputs are refused and the task fails (env SKIFF_MAX_OUTPUT_FILES)")
	fs.Float64Var(&d.maxOutputGB, "max-output-gb", float64(sandbox.DefaultMaxOutputBytes)/(1<<30), "GiB of files one attempt may leave in its artifact directory; past it its outputs are refused and the task fails (env SKIFF_MAX_OUTPUT_GB)")
	fs.Float64Var(&d.projectCacheGB, "project-cache-gb", 10, "GiB each project's cache directory (SKIFF_TASK_CACHE_DIR) may hold on this host, with --storage-quota: a filesystem of its own, kept between its tasks; writes past it fail with ENOSPC (0: unbounded) (env SKIFF_PROJECT_CACHE_GB)")
	fs.Float64Var(&d.projectCacheMountsGB, "project-cache-mounts-gb", 10, "GiB each project's cache_mounts (the manifest's) may hold together on this host, with --storage-quota: a filesystem of its own, kept between its tasks; writes past it fail with ENOSPC and the task fails with a storage error. --cache-mounts-gb still evicts whole caches across projects (0: unbounded) (env SKIFF_PROJECT_CACHE_MOUNTS_GB)")
	fs.BoolVar(&d.storageQuota, "storage-quota", true, "give each attempt a filesystem of its own of requirements.storage_gb for its scratch, outputs and result (a loop-mounted ext4 image; needs root and loop devices): writes past it fail with ENOSPC. false leaves them unbounded (env SKIFF_STORAGE_QUOTA)")
}

func (d *hostDiskFlags) validate() error {
	if d.projectCacheGB < 0 || d.projectCacheMountsGB < 0 {
		return errors.New("--project-cache-gb and --project-cache-mounts-gb must not be negative")
	}
	if d.maxOutputFiles <= 0 || d.maxOutputGB <= 0 {
		return errors.New("--max-output-files and --max-output-gb must be positive")
	}
	if d.pidsLimit == 0 {
		return errors.New("--pids-limit must be positive, or -1 for no limit")
	}
	return nil
}

// root is the host's work root: --work-dir, or def.
func (d *hostDiskFlags) root(def string) string {
	if d.workDir == "" {
		return def
	}
	return filepath.Clean(d.workDir)
}

// apply sets the agent's limits from the flags; quota says whether the
// driver can take a storage quota (gvisor can, the process driver runs as
// an unprivileged development aid and cannot).
func (d *hostDiskFlags) apply(cfg *agent.Config, workRoot string, quota bool) {
	cfg.PidsLimit = d.pidsLimit
	cfg.StorageQuota = d.storageQuota && quota
	cfg.CacheBytes = gib(d.projectCacheGB)
	cfg.CacheMountBytes = gib(d.projectCacheMountsGB)
	cfg.MaxOutputFiles = d.maxOutputFiles
	cfg.MaxOutputBytes = gib(d.maxOutputGB)
	cfg.DiskFree = &diskfree.Checker{Dir: workRoot, Min: d.workMinFree}
}

// hostConfig sets the local host's disk and process limits in h.
func (d *hostDiskFlags) hostConfig(h *server.HostConfig) {
	h.WorkDir = d.workDir
	h.WorkMinFree = d.workMinFree
	h.PidsLimit = d.pidsLimit
	h.MaxOutputFiles = d.maxOutputFiles
	h.MaxOutputBytes = gib(d.maxOutputGB)
	h.StorageQuota = d.storageQuota
	h.ProjectCacheBytes = gib(d.projectCacheGB)
	h.ProjectCacheMountBytes = gib(d.projectCacheMountsGB)
}
