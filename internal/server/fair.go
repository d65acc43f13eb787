package server

import (
	"fmt"
	"time"

	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/project"
)

// FairConfig configure the build queue and the per-account caps that keep
// one account from starving the others (docs/security.md, fair shares).
type FairConfig struct {
	BuildWorkers     int
	BuildsPerAccount int
	BuildTimeout     time.Duration
	QueuedBuilds     int
	Projects         int
	KVKeys           int64
	KVBytes          int64
	Uploads          int
}

func (f *FairConfig) validate() error {
	switch {
	case f.BuildWorkers < 1 || f.BuildWorkers > build.MaxWorkers:
		return fmt.Errorf("--build-workers must be 1 to %d", build.MaxWorkers)
	case f.BuildsPerAccount < 0:
		return fmt.Errorf("--build-max-running-per-account must be 0 (automatic) or more")
	case f.BuildTimeout < time.Second:
		return fmt.Errorf("--build-timeout must be at least 1s")
	case f.QueuedBuilds < 0 || f.Uploads < 0 || f.Projects < 0 || f.KVKeys < 0 || f.KVBytes < 0:
		return fmt.Errorf("--build-max-queued-per-account, --push-max-concurrent-per-account, --max-projects-per-account, --kv-max-keys-per-account and --kv-max-bytes-per-account must be 0 (no cap) or more")
	}
	return nil
}

// quotas are the caps as project.Quotas, where 0 (no cap) is Unlimited.
func (f *FairConfig) quotas() project.Quotas {
	capOf := func(v int) int {
		if v == 0 {
			return project.Unlimited
		}
		return v
	}
	capOf64 := func(v int64) int64 {
		if v == 0 {
			return project.Unlimited
		}
		return v
	}
	return project.Quotas{Projects: capOf(f.Projects), QueuedBuilds: capOf(f.QueuedBuilds), KVKeys: capOf64(f.KVKeys),
		KVBytes: capOf64(f.KVBytes), Uploads: capOf(f.Uploads)}
}
