package cli

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os/signal"
	"syscall"
	"time"

	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/diskfree"
	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/server"
)

// serverFlags configure the controller.
type serverFlags struct {
	storeFlags
	listen       string
	drainTimeout time.Duration
	logLevel     string
	build        buildFlags
	host         hostFlags
	rates        rateFlags
	payments     paymentFlags
	streams      streamFlags
	metricsToken string
	front        frontFlags
	artifacts    artifactFlags
	dutyLease    time.Duration
	heartbeat    time.Duration
	data         dataFlags
	fair         fairFlags
	edges        edgeFlags
	disk         hostDiskFlags
	minFreeDisk  diskfree.Watermark
}

// streamFlags configure the event streams (docs/streams.md).
type streamFlags struct {
	timeout      time.Duration
	pingInterval time.Duration
	perAccount   int
}

// frontFlags configure the public endpoints' rate limits.
type frontFlags struct {
	trustedProxies string
	waitlistRate   int
	feedbackRate   int
}

// hostFlags configure the local host that runs tasks on this machine.
type hostFlags struct {
	driver          string
	allowUnisolated bool
	slots           int
	warm            int
	cpus            float64
	memoryMB        int64
	disabled        bool
	gpus            int
	gpuDriverDir    string
}

// buildFlags configure the image builder.
type buildFlags struct {
	buildah    string
	runsc      string
	isolation  string
	network    string
	cpus       float64
	memory     string
	allowBases string
}

func (f *serverFlags) register(e *env, name, synopsis string) *flag.FlagSet {
	fs := e.newFlags(name, synopsis)
	f.storeFlags.register(fs)
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8080", "address to serve the API on (env SKIFF_LISTEN)")
	fs.DurationVar(&f.drainTimeout, "drain-timeout", 20*time.Second, "how long shutdown waits for in-flight requests (env SKIFF_DRAIN_TIMEOUT)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error (env SKIFF_LOG_LEVEL)")
	fs.StringVar(&f.build.buildah, "buildah", build.DefaultBuildahPath, "buildah that builds pushed projects: the pinned upstream build that make setup installs (Debian's 1.28 has CVE-2024-1753 open) (env SKIFF_BUILDAH)")
	fs.StringVar(&f.build.runsc, "runsc", build.DefaultRunscPath, "current gVisor runsc used for build RUN steps and tasks (env SKIFF_RUNSC)")
	fs.StringVar(&f.build.isolation, "build-isolation", build.IsolationOCI, "isolation of build RUN steps: oci (gVisor) or chroot (NOT a sandbox; trusted development only) (env SKIFF_BUILD_ISOLATION)")
	fs.StringVar(&f.build.network, "build-network", build.NetworkFiltered, "network of build RUN steps: filtered (the public internet only: no cloud metadata, private, CGNAT, loopback or IPv6 addresses, none of the host's own; needs nft), open (everything the host can route to, metadata and private networks included), none, or host (trusted builds only) (env SKIFF_BUILD_NETWORK)")
	fs.Float64Var(&f.build.cpus, "build-cpus", 0, "CPU cores each build RUN step may use, a cgroup quota over its whole gVisor sandbox (0: half this machine's cores, at least 1) (env SKIFF_BUILD_CPUS)")
	fs.StringVar(&f.build.memory, "build-memory", "2g", "memory limit of each build RUN step (env SKIFF_BUILD_MEMORY)")
	fs.StringVar(&f.build.allowBases, "build-allow-base", "", "comma-separated base images a Dockerfile may use besides scratch, e.g. 'localhost/debian:bookworm,docker.io/library/*' (env SKIFF_BUILD_ALLOW_BASE)")
	fs.StringVar(&f.host.driver, "host-driver", "gvisor", "sandbox of the local host's tasks: gvisor, or process (NOT a sandbox; needs --host-allow-unisolated, for development only) (env SKIFF_HOST_DRIVER)")
	fs.BoolVar(&f.host.allowUnisolated, "host-allow-unisolated", false, "let --host-driver=process run tasks unsandboxed as the server's user (env SKIFF_HOST_ALLOW_UNISOLATED)")
	fs.IntVar(&f.host.slots, "host-slots", 0, "tasks the local host runs at once (0: one per CPU) (env SKIFF_HOST_SLOTS)")
	fs.IntVar(&f.host.warm, "host-warm", -1, "sandboxes the local host keeps booted per initialized project, for tasks of the default shape (-1: one per slot, 0: none) (env SKIFF_HOST_WARM)")
	fs.Float64Var(&f.host.cpus, "host-cpus", 0, "CPU cores the local host lends tasks (0: all) (env SKIFF_HOST_CPUS)")
	fs.Int64Var(&f.host.memoryMB, "host-memory-mb", 0, "memory in MiB the local host lends tasks (0: all) (env SKIFF_HOST_MEMORY_MB)")
	fs.IntVar(&f.host.gpus, "host-gpus", 0, "GPUs the local host lends tasks, found with their driver at start (-1: all this machine has; see /docs/gpus) (env SKIFF_HOST_GPUS)")
	fs.StringVar(&f.host.gpuDriverDir, "host-gpu-driver-dir", "", "directory of the NVIDIA driver's user-space files (default: found through the loader cache) (env SKIFF_HOST_GPU_DRIVER_DIR)")
	fs.BoolVar(&f.host.disabled, "no-local-host", false, "run no local host: tasks wait for remote hosts (env SKIFF_NO_LOCAL_HOST)")
	fs.DurationVar(&f.streams.timeout, "stream-timeout", time.Hour, "life of one event stream; it then sends a timeout frame and the client reconnects (env SKIFF_STREAM_TIMEOUT)")
	fs.DurationVar(&f.streams.pingInterval, "stream-ping-interval", 15*time.Second, "how often an idle event stream sends a ping frame (env SKIFF_STREAM_PING_INTERVAL)")
	fs.IntVar(&f.streams.perAccount, "stream-max-per-account", 100, "event streams one account may hold open; one more gets 429 (env SKIFF_STREAM_MAX_PER_ACCOUNT)")
	fs.StringVar(&f.metricsToken, "metrics-token", "", "bearer token that may read GET /metrics besides admin keys and loopback requests (env SKIFF_METRICS_TOKEN)")
	fs.StringVar(&f.front.trustedProxies, "trusted-proxy", "", "comma-separated CIDR ranges or addresses of reverse proxies whose X-Forwarded-For names the client for rate limits; from anyone else the header is ignored (env SKIFF_TRUSTED_PROXY)")
	fs.IntVar(&f.front.waitlistRate, "waitlist-rate", httpapi.DefaultLimits.WaitlistPerMinute, "POST /api/v1/waitlist requests per client IP and minute; 0: unlimited (env SKIFF_WAITLIST_RATE)")
	fs.IntVar(&f.front.feedbackRate, "feedback-rate", httpapi.DefaultLimits.FeedbackPerMinute, "POST /api/v1/feedback requests per client IP and minute; 0: unlimited (env SKIFF_FEEDBACK_RATE)")
	fs.DurationVar(&f.heartbeat, "host-heartbeat", 10*time.Second, "longest a host waits between lease requests; a host silent for three of them is lost and its attempts requeued (env SKIFF_HOST_HEARTBEAT)")
	fs.DurationVar(&f.dutyLease, "duty-lease", 10*time.Second, "with --database-url: how long a controller's hold on a singleton duty (builds, sweeps) lasts unrenewed, the longest the others wait to take it over when it dies (env SKIFF_DUTY_LEASE)")
	f.rates.register(fs)
	f.payments.register(fs)
	f.artifacts.register(fs)
	f.data.register(fs)
	f.fair.register(fs)
	f.edges.register(fs)
	f.disk.register(fs, "--data-dir/host")
	f.minFreeDisk = diskfree.DefaultWatermark
	fs.Var(&f.minFreeDisk, "min-free-disk", "free-disk watermark of --data-dir: under it the API refuses what would store more (pushes, uploads, KV writes, submissions) with 507 until space is freed; bytes (2GiB), a percentage (5%) or both, the larger wins; 0: none (env SKIFF_MIN_FREE_DISK)")
	return fs
}

func runServer(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 && args[0] == "migrate" {
		return runMigrate(ctx, e, args[1:])
	}
	var f serverFlags
	fs := f.register(e, "server [flags] | server migrate [flags]",
		"Runs the controller (HTTP API, builder, scheduler, billing) and a local host that runs\n"+
			"tasks on this machine in gVisor. The embedded default keeps everything under --data-dir\n"+
			"(SQLite); --database-url switches the store to PostgreSQL. Logs are JSON on stderr.\n"+
			"SIGTERM or SIGINT: stop accepting, finish in-flight requests, close the store, exit 0.\n\n"+
			"'skiff server migrate' applies the database migrations and exits.")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	log, err := newLogger(e, f.logLevel)
	if err != nil {
		return err
	}
	cfg, err := f.config(log)
	if err != nil {
		return err // before anything is opened
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	srv, err := server.New(ctx, cfg)
	if err != nil {
		return err
	}
	return srv.Run(ctx)
}

// config validates the flags and turns them into the server's
// configuration; its errors name the flags.
func (f *serverFlags) config(log *slog.Logger) (server.Config, error) {
	var cfg server.Config
	rates, err := f.rates.config()
	if err != nil {
		return cfg, err
	}
	if err := f.data.validate(); err != nil {
		return cfg, err
	}
	if err := f.fair.validate(); err != nil {
		return cfg, err
	}
	if err := f.disk.validate(); err != nil {
		return cfg, err
	}
	payCfg, walletPolicy, err := f.payments.config(f.listen)
	if err != nil {
		return cfg, err
	}
	proxies, err := httpapi.TrustedProxies([]string{f.front.trustedProxies})
	if err != nil {
		return cfg, fmt.Errorf("--trusted-proxy: %w", err)
	}
	if f.front.waitlistRate < 0 || f.front.feedbackRate < 0 {
		return cfg, fmt.Errorf("--waitlist-rate and --feedback-rate must be 0 (unlimited) or more")
	}
	if err := f.edges.validate(); err != nil {
		return cfg, err
	}
	if f.dutyLease < time.Second || f.heartbeat < time.Second {
		return cfg, fmt.Errorf("--duty-lease and --host-heartbeat must be at least 1s")
	}
	if f.streams.timeout <= 0 || f.streams.pingInterval <= 0 || f.streams.perAccount <= 0 {
		return cfg, fmt.Errorf("--stream-timeout, --stream-ping-interval and --stream-max-per-account must be positive")
	}
	if err := f.artifacts.validate(); err != nil {
		return cfg, err
	}
	data, err := f.data.config(log.With("component", "host"))
	if err != nil {
		return cfg, err
	}
	host := server.HostConfig{Disabled: f.host.disabled, Driver: f.host.driver, AllowUnisolated: f.host.allowUnisolated,
		Slots: f.host.slots, Warm: f.host.warm, CPUs: f.host.cpus, MemoryMB: f.host.memoryMB,
		GPUs: f.host.gpus, GPUDriverDir: f.host.gpuDriverDir, CacheMountsMaxBytes: gib(f.data.cacheMountsGB),
		ImageCacheBytes: gib(f.data.imageCacheGB)}
	f.disk.hostConfig(&host)
	return server.Config{
		DataDir: f.dataDir, DatabaseURL: f.databaseURL,
		Listen: f.listen, DrainTimeout: f.drainTimeout, Logger: log, Version: Version, HostBinary: selfPath(),
		Build: server.BuildConfig{Buildah: f.build.buildah, Runsc: f.build.runsc, Isolation: f.build.isolation,
			Network: f.build.network, CPUs: f.build.cpus, Memory: f.build.memory, AllowedBaseImages: splitList(f.build.allowBases)},
		Host: host,
		Fair: server.FairConfig{BuildWorkers: f.fair.buildWorkers, BuildsPerAccount: f.fair.buildsPerAccount,
			BuildTimeout: f.fair.buildTimeout, Quotas: f.fair.quotas()},
		Rates: rates,
		Payments: server.PaymentsConfig{Config: payCfg, WalletPolicy: walletPolicy,
			AuthRatePerAddress: f.payments.ratePerAddress, AuthRatePerIP: f.payments.ratePerIP},
		Streams: server.StreamsConfig{Timeout: f.streams.timeout, PingInterval: f.streams.pingInterval, PerAccount: f.streams.perAccount},
		Front: server.FrontConfig{TrustedProxies: proxies, Limits: &httpapi.Limits{WaitlistPerMinute: f.front.waitlistRate,
			FeedbackPerMinute: f.front.feedbackRate, RedeemPerMinute: httpapi.DefaultLimits.RedeemPerMinute}},
		Edges:        f.edges.config(),
		Artifacts:    f.artifacts.config(),
		DataSources:  data,
		MetricsToken: f.metricsToken,
		DutyLease:    f.dutyLease,
		Heartbeat:    f.heartbeat,
		MinFreeDisk:  f.minFreeDisk,
	}, nil
}

func runMigrate(ctx context.Context, e *env, args []string) error {
	var sf storeFlags
	fs := e.newFlags("server migrate [flags]", "Applies the embedded database migrations and exits.")
	sf.register(fs)
	if err := e.parse(fs, args); err != nil {
		return err
	}
	db, err := sf.open(ctx)
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
