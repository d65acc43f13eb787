package server

import (
	"errors"
	"path/filepath"

	"github.com/skiffhq/skiff/internal/agent"
	"github.com/skiffhq/skiff/internal/diskfree"
)

// DiskConfig bound what one task can do to its host's disk and process
// table, for the local host of `skiff server` and for `skiff host` alike
// (docs/hosting.md, "Disk and processes").
type DiskConfig struct {
	WorkDir        string
	WorkMinFree    diskfree.Watermark
	PidsLimit      int64
	MaxOutputFiles int
	MaxOutputGB    float64
	StorageQuota   bool
	ProjectCacheGB float64
	// ProjectCacheMountsGB bounds each project's cache_mounts together.
	ProjectCacheMountsGB float64
}

func (d *DiskConfig) Validate() error {
	if d.ProjectCacheGB < 0 || d.ProjectCacheMountsGB < 0 {
		return errors.New("--project-cache-gb and --project-cache-mounts-gb must not be negative")
	}
	if d.MaxOutputFiles <= 0 || d.MaxOutputGB <= 0 {
		return errors.New("--max-output-files and --max-output-gb must be positive")
	}
	if d.PidsLimit == 0 {
		return errors.New("--pids-limit must be positive, or -1 for no limit")
	}
	return nil
}

// Root is the host's work Root: --work-dir, or def.
func (d *DiskConfig) Root(def string) string {
	if d.WorkDir == "" {
		return def
	}
	return filepath.Clean(d.WorkDir)
}

// Apply sets the agent's limits from the flags; quota says whether the
// driver can take a storage quota (gvisor can, the process driver runs as
// an unprivileged development aid and cannot).
func (d *DiskConfig) Apply(cfg *agent.Config, workRoot string, quota bool) {
	cfg.PidsLimit = d.PidsLimit
	cfg.StorageQuota = d.StorageQuota && quota
	cfg.CacheBytes = GiB(d.ProjectCacheGB)
	cfg.CacheMountBytes = GiB(d.ProjectCacheMountsGB)
	cfg.MaxOutputFiles = d.MaxOutputFiles
	cfg.MaxOutputBytes = GiB(d.MaxOutputGB)
	cfg.DiskFree = &diskfree.Checker{Dir: workRoot, Min: d.WorkMinFree}
}
