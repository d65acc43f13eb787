package cli

import (
	"flag"

	"github.com/skiffhq/skiff/internal/server"
)

func registerDisk(fs *flag.FlagSet, d *server.DiskConfig, defaultWorkDir string) {
	fs.StringVar(&d.WorkDir, "work-dir", d.WorkDir, "directory for the attempts' work dirs, caches, data sources and warm sandboxes; best on a filesystem of its own, so that tasks can never fill the disk the database lives on (default: "+defaultWorkDir+") (env SKIFF_WORK_DIR)")
	fs.Var(&d.WorkMinFree, "work-min-free-disk", "free-disk watermark of --work-dir: under it the host takes no new work and says why in its heartbeat; bytes (2GiB), a percentage (5%) or both, the larger wins; 0: none (env SKIFF_WORK_MIN_FREE_DISK)")
	fs.Int64Var(&d.PidsLimit, "pids-limit", d.PidsLimit, "processes and threads one task may run at once; past it fork fails with EAGAIN, so a fork bomb ends as a failed attempt (-1: no limit) (env SKIFF_PIDS_LIMIT)")
	fs.IntVar(&d.MaxOutputFiles, "max-output-files", d.MaxOutputFiles, "files (and directories) one attempt may leave in its artifact directory; past it its outputs are refused and the task fails (env SKIFF_MAX_OUTPUT_FILES)")
	fs.Float64Var(&d.MaxOutputGB, "max-output-gb", d.MaxOutputGB, "GiB of files one attempt may leave in its artifact directory; past it its outputs are refused and the task fails (env SKIFF_MAX_OUTPUT_GB)")
	fs.Float64Var(&d.ProjectCacheGB, "project-cache-gb", d.ProjectCacheGB, "GiB each project's cache directory (SKIFF_TASK_CACHE_DIR) may hold on this host, with --storage-quota: a filesystem of its own, kept between its tasks; writes past it fail with ENOSPC (0: unbounded) (env SKIFF_PROJECT_CACHE_GB)")
	fs.Float64Var(&d.ProjectCacheMountsGB, "project-cache-mounts-gb", d.ProjectCacheMountsGB, "GiB each project's cache_mounts (the manifest's) may hold together on this host, with --storage-quota: a filesystem of its own, kept between its tasks; writes past it fail with ENOSPC and the task fails with a storage error. --cache-mounts-gb still evicts whole caches across projects (0: unbounded) (env SKIFF_PROJECT_CACHE_MOUNTS_GB)")
	fs.BoolVar(&d.StorageQuota, "storage-quota", d.StorageQuota, "give each attempt a filesystem of its own of requirements.storage_gb for its scratch, outputs and result (a loop-mounted ext4 image; needs root and loop devices): writes past it fail with ENOSPC. false leaves them unbounded (env SKIFF_STORAGE_QUOTA)")
}
