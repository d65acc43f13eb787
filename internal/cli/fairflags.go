package cli

import (
	"flag"
	"fmt"
	"time"

	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/project"
)

// fairFlags configure the build queue and the per-account caps that keep
// one account from starving the others (docs/security.md, fair shares).
type fairFlags struct {
	buildWorkers     int
	buildsPerAccount int
	buildTimeout     time.Duration
	queuedBuilds     int
	projects         int
	kvKeys           int64
	kvBytes          int64
	uploads          int
}

func (f *fairFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.buildWorkers, "build-workers", project.DefaultBuildWorkers, fmt.Sprintf("builds run at once (1 to %d), handed out round-robin across accounts; each runs its own buildah under its own --build-memory and --build-cpus caps (env SKIFF_BUILD_WORKERS)", build.MaxWorkers))
	fs.IntVar(&f.buildsPerAccount, "build-max-running-per-account", 0, "builds of one account the queue runs at once (0: one less than --build-workers, at least 1, so a worker is left for the other accounts) (env SKIFF_BUILD_MAX_RUNNING_PER_ACCOUNT)")
	fs.DurationVar(&f.buildTimeout, "build-timeout", project.DefaultMaxBuildTime, "longest any build may run; a project's setup_timeout_s above it is cut to it (env SKIFF_BUILD_TIMEOUT)")
	fs.IntVar(&f.queuedBuilds, "build-max-queued-per-account", project.DefaultMaxQueuedBuilds, "pushes one account may have queued or building at once; one more answers 429 build_queue_full (0: no cap) (env SKIFF_BUILD_MAX_QUEUED_PER_ACCOUNT)")
	fs.IntVar(&f.uploads, "push-max-concurrent-per-account", project.DefaultMaxUploads, "pushes one account may be uploading to this controller at once; one more answers 429 too_many_uploads before its body is read (0: no cap) (env SKIFF_PUSH_MAX_CONCURRENT_PER_ACCOUNT)")
	fs.IntVar(&f.projects, "max-projects-per-account", project.DefaultMaxProjects, "projects one account may own; one more answers 429 project_quota_exceeded (0: no cap) (env SKIFF_MAX_PROJECTS_PER_ACCOUNT)")
	fs.Int64Var(&f.kvKeys, "kv-max-keys-per-account", project.DefaultMaxKVKeys, "shared-state keys one account may hold over all its projects; one more answers 429 kv_key_quota_exceeded (0: no cap) (env SKIFF_KV_MAX_KEYS_PER_ACCOUNT)")
	fs.Int64Var(&f.kvBytes, "kv-max-bytes-per-account", project.DefaultMaxKVBytes, "bytes of shared-state values one account may hold over all its projects; a write past it answers 507 kv_storage_quota_exceeded (0: no cap) (env SKIFF_KV_MAX_BYTES_PER_ACCOUNT)")
}

func (f *fairFlags) validate() error {
	switch {
	case f.buildWorkers < 1 || f.buildWorkers > build.MaxWorkers:
		return fmt.Errorf("--build-workers must be 1 to %d", build.MaxWorkers)
	case f.buildsPerAccount < 0:
		return fmt.Errorf("--build-max-running-per-account must be 0 (automatic) or more")
	case f.buildTimeout < time.Second:
		return fmt.Errorf("--build-timeout must be at least 1s")
	case f.queuedBuilds < 0 || f.uploads < 0 || f.projects < 0 || f.kvKeys < 0 || f.kvBytes < 0:
		return fmt.Errorf("--build-max-queued-per-account, --push-max-concurrent-per-account, --max-projects-per-account, --kv-max-keys-per-account and --kv-max-bytes-per-account must be 0 (no cap) or more")
	}
	return nil
}

// quotas are the caps as project.Quotas, where 0 (no cap) is Unlimited.
func (f *fairFlags) quotas() project.Quotas {
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
	return project.Quotas{Projects: capOf(f.projects), QueuedBuilds: capOf(f.queuedBuilds), KVKeys: capOf64(f.kvKeys),
		KVBytes: capOf64(f.kvBytes), Uploads: capOf(f.uploads)}
}
