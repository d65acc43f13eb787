package cli

import (
	"flag"
	"fmt"

	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/server"
)

func registerFair(fs *flag.FlagSet, f *server.FairConfig) {
	fs.IntVar(&f.BuildWorkers, "build-workers", f.BuildWorkers, fmt.Sprintf("builds run at once (1 to %d), handed out round-robin across accounts; each runs its own buildah under its own --build-memory and --build-cpus caps (env SKIFF_BUILD_WORKERS)", build.MaxWorkers))
	fs.IntVar(&f.BuildsPerAccount, "build-max-running-per-account", f.BuildsPerAccount, "builds of one account the queue runs at once (0: one less than --build-workers, at least 1, so a worker is left for the other accounts) (env SKIFF_BUILD_MAX_RUNNING_PER_ACCOUNT)")
	fs.DurationVar(&f.BuildTimeout, "build-timeout", f.BuildTimeout, "longest any build may run; a project's setup_timeout_s above it is cut to it (env SKIFF_BUILD_TIMEOUT)")
	fs.IntVar(&f.QueuedBuilds, "build-max-queued-per-account", f.QueuedBuilds, "pushes one account may have queued or building at once; one more answers 429 build_queue_full (0: no cap) (env SKIFF_BUILD_MAX_QUEUED_PER_ACCOUNT)")
	fs.IntVar(&f.Uploads, "push-max-concurrent-per-account", f.Uploads, "pushes one account may be uploading to this controller at once; one more answers 429 too_many_uploads before its body is read (0: no cap) (env SKIFF_PUSH_MAX_CONCURRENT_PER_ACCOUNT)")
	fs.IntVar(&f.Projects, "max-projects-per-account", f.Projects, "projects one account may own; one more answers 429 project_quota_exceeded (0: no cap) (env SKIFF_MAX_PROJECTS_PER_ACCOUNT)")
	fs.Int64Var(&f.KVKeys, "kv-max-keys-per-account", f.KVKeys, "shared-state keys one account may hold over all its projects; one more answers 429 kv_key_quota_exceeded (0: no cap) (env SKIFF_KV_MAX_KEYS_PER_ACCOUNT)")
	fs.Int64Var(&f.KVBytes, "kv-max-bytes-per-account", f.KVBytes, "bytes of shared-state values one account may hold over all its projects; a write past it answers 507 kv_storage_quota_exceeded (0: no cap) (env SKIFF_KV_MAX_BYTES_PER_ACCOUNT)")
}
