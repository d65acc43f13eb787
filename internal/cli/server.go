package cli

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/skiffhq/skiff/internal/server"
)

func registerServer(e *env, f *server.Config, logLevel *string, name, synopsis string) *flag.FlagSet {
	fs := e.newFlags(name, synopsis)
	registerStore(fs, &f.StoreConfig)
	fs.StringVar(&f.Listen, "listen", f.Listen, "address to serve the API on (env SKIFF_LISTEN)")
	fs.DurationVar(&f.DrainTimeout, "drain-timeout", f.DrainTimeout, "how long shutdown waits for in-flight requests (env SKIFF_DRAIN_TIMEOUT)")
	fs.StringVar(logLevel, "log-level", "info", "debug, info, warn or error (env SKIFF_LOG_LEVEL)")
	fs.StringVar(&f.Build.Buildah, "buildah", f.Build.Buildah, "buildah that builds pushed projects: the pinned upstream build that make setup installs (Debian's 1.28 has CVE-2024-1753 open) (env SKIFF_BUILDAH)")
	fs.StringVar(&f.Build.Runsc, "runsc", f.Build.Runsc, "current gVisor runsc used for build RUN steps and tasks (env SKIFF_RUNSC)")
	fs.StringVar(&f.Build.Isolation, "build-isolation", f.Build.Isolation, "isolation of build RUN steps: oci (gVisor) or chroot (NOT a sandbox; trusted development only) (env SKIFF_BUILD_ISOLATION)")
	fs.StringVar(&f.Build.Network, "build-network", f.Build.Network, "network of build RUN steps: filtered (the public internet only: no cloud metadata, private, CGNAT, loopback or IPv6 addresses, none of the host's own; needs nft), open (everything the host can route to, metadata and private networks included), none, or host (trusted builds only) (env SKIFF_BUILD_NETWORK)")
	fs.Float64Var(&f.Build.CPUs, "build-cpus", f.Build.CPUs, "CPU cores each build RUN step may use, a cgroup quota over its whole gVisor sandbox (0: half this machine's cores, at least 1) (env SKIFF_BUILD_CPUS)")
	fs.StringVar(&f.Build.Memory, "build-memory", f.Build.Memory, "memory limit of each build RUN step (env SKIFF_BUILD_MEMORY)")
	fs.StringVar(&f.Build.AllowBases, "build-allow-base", f.Build.AllowBases, "comma-separated base images a Dockerfile may use besides scratch, e.g. 'localhost/debian:bookworm,docker.io/library/*' (env SKIFF_BUILD_ALLOW_BASE)")
	fs.StringVar(&f.Host.Driver, "host-driver", f.Host.Driver, "sandbox of the local host's tasks: gvisor, or process (NOT a sandbox; needs --host-allow-unisolated, for development only) (env SKIFF_HOST_DRIVER)")
	fs.BoolVar(&f.Host.AllowUnisolated, "host-allow-unisolated", f.Host.AllowUnisolated, "let --host-driver=process run tasks unsandboxed as the server's user (env SKIFF_HOST_ALLOW_UNISOLATED)")
	fs.IntVar(&f.Host.Slots, "host-slots", f.Host.Slots, "tasks the local host runs at once (0: one per CPU) (env SKIFF_HOST_SLOTS)")
	fs.IntVar(&f.Host.Warm, "host-warm", f.Host.Warm, "sandboxes the local host keeps booted per initialized project, for tasks of the default shape (-1: one per slot, 0: none) (env SKIFF_HOST_WARM)")
	fs.Float64Var(&f.Host.CPUs, "host-cpus", f.Host.CPUs, "CPU cores the local host lends tasks (0: all) (env SKIFF_HOST_CPUS)")
	fs.Int64Var(&f.Host.MemoryMB, "host-memory-mb", f.Host.MemoryMB, "memory in MiB the local host lends tasks (0: all) (env SKIFF_HOST_MEMORY_MB)")
	fs.IntVar(&f.Host.GPUs, "host-gpus", f.Host.GPUs, "GPUs the local host lends tasks, found with their driver at start (-1: all this machine has; see /docs/gpus) (env SKIFF_HOST_GPUS)")
	fs.StringVar(&f.Host.GPUDriverDir, "host-gpu-driver-dir", f.Host.GPUDriverDir, "directory of the NVIDIA driver's user-space files (default: found through the loader cache) (env SKIFF_HOST_GPU_DRIVER_DIR)")
	fs.BoolVar(&f.Host.Disabled, "no-local-host", f.Host.Disabled, "run no local host: tasks wait for remote hosts (env SKIFF_NO_LOCAL_HOST)")
	fs.DurationVar(&f.Streams.Timeout, "stream-timeout", f.Streams.Timeout, "life of one event stream; it then sends a timeout frame and the client reconnects (env SKIFF_STREAM_TIMEOUT)")
	fs.DurationVar(&f.Streams.PingInterval, "stream-ping-interval", f.Streams.PingInterval, "how often an idle event stream sends a ping frame (env SKIFF_STREAM_PING_INTERVAL)")
	fs.IntVar(&f.Streams.PerAccount, "stream-max-per-account", f.Streams.PerAccount, "event streams one account may hold open; one more gets 429 (env SKIFF_STREAM_MAX_PER_ACCOUNT)")
	fs.StringVar(&f.MetricsToken, "metrics-token", f.MetricsToken, "bearer token that may read GET /metrics besides admin keys and loopback requests (env SKIFF_METRICS_TOKEN)")
	fs.StringVar(&f.Front.TrustedProxies, "trusted-proxy", f.Front.TrustedProxies, "comma-separated CIDR ranges or addresses of reverse proxies whose X-Forwarded-For names the client for rate limits; from anyone else the header is ignored (env SKIFF_TRUSTED_PROXY)")
	fs.IntVar(&f.Front.WaitlistRate, "waitlist-rate", f.Front.WaitlistRate, "POST /api/v1/waitlist requests per client IP and minute; 0: unlimited (env SKIFF_WAITLIST_RATE)")
	fs.IntVar(&f.Front.FeedbackRate, "feedback-rate", f.Front.FeedbackRate, "POST /api/v1/feedback requests per client IP and minute; 0: unlimited (env SKIFF_FEEDBACK_RATE)")
	fs.DurationVar(&f.Heartbeat, "host-heartbeat", f.Heartbeat, "longest a host waits between lease requests; a host silent for three of them is lost and its attempts requeued (env SKIFF_HOST_HEARTBEAT)")
	fs.DurationVar(&f.DutyLease, "duty-lease", f.DutyLease, "with --database-url: how long a controller's hold on a singleton duty (builds, sweeps) lasts unrenewed, the longest the others wait to take it over when it dies (env SKIFF_DUTY_LEASE)")
	registerRates(fs, &f.Rates)
	registerPayments(fs, &f.Payments)
	registerArtifacts(fs, &f.Artifacts)
	registerData(fs, &f.Data)
	registerFair(fs, &f.Fair)
	registerEdges(fs, &f.Edges)
	registerDisk(fs, &f.Disk, "--data-dir/host")
	fs.Var(&f.MinFreeDisk, "min-free-disk", "free-disk watermark of --data-dir: under it the API refuses what would store more (pushes, uploads, KV writes, submissions) with 507 until space is freed; bytes (2GiB), a percentage (5%) or both, the larger wins; 0: none (env SKIFF_MIN_FREE_DISK)")
	return fs
}

// runServer is `skiff server`: its flags, parsed into a server.Config,
// and the server run until SIGTERM or SIGINT.
func runServer(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 && args[0] == "migrate" {
		return runMigrate(ctx, e, args[1:])
	}
	cfg := server.Defaults()
	var logLevel string
	fs := registerServer(e, &cfg, &logLevel, "server [flags] | server migrate [flags]",
		"Runs the controller (HTTP API, builder, scheduler, billing) and a local host that runs\n"+
			"tasks on this machine in gVisor. The embedded default keeps everything under --data-dir\n"+
			"(SQLite); --database-url switches the store to PostgreSQL. Logs are JSON on stderr.\n"+
			"SIGTERM or SIGINT: stop accepting, finish in-flight requests, close the store, exit 0.\n\n"+
			"'skiff server migrate' applies the database migrations and exits.")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	log, err := newLogger(e, logLevel)
	if err != nil {
		return err
	}
	cfg.Logger, cfg.Version, cfg.HostBinary = log, Version, selfPath()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	srv, err := server.New(ctx, cfg)
	if err != nil {
		return err
	}
	return srv.Run(ctx)
}

func runMigrate(ctx context.Context, e *env, args []string) error {
	sf := server.Defaults().StoreConfig
	fs := e.newFlags("server migrate [flags]", "Applies the embedded database migrations and exits.")
	registerStore(fs, &sf)
	if err := e.parse(fs, args); err != nil {
		return err
	}
	db, err := sf.Open(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "migrated %s store\n", db.Engine())
	return db.Close()
}

func newLogger(e *env, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewJSONHandler(e.stderr, &slog.HandlerOptions{Level: l})), nil
}
