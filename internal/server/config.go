package server

import (
	"github.com/skiffhq/skiff/internal/artifact"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/skiffhq/skiff/internal/agent/datasrc"
	"github.com/skiffhq/skiff/internal/auth"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/diskfree"
	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/payment"
	"github.com/skiffhq/skiff/internal/project"
	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/store"
)

// Config is everything `skiff server`'s flags set, grouped as the flags
// are (`skiff server --help` lists them). Values are already validated
// by whoever parsed them; New fills zero values with the flags' defaults
// where a zero would not be a sensible setting of its own.
type Config struct {
	// Store: DataDir (required) holds the SQLite database (without DatabaseURL), the
	// images, builds, artifacts and the local host's files. DatabaseURL
	// switches the store to PostgreSQL and turns on duty sharing with
	// the other controllers on it.
	DataDir     string
	DatabaseURL string
	// DB, when set, is the store to use instead of opening one from
	// DataDir or DatabaseURL (tests open a fresh one per test); the
	// Server does not close it. DatabaseURL still says whether duties are
	// shared and where notifications are listened for.
	DB store.Store

	// Listen is the API's address ("": 127.0.0.1:0). Listener, when set,
	// is used instead (a restarted test server takes over an address).
	Listen   string
	Listener net.Listener
	// DrainTimeout is how long shutdown waits for in-flight requests
	// (0: 20s).
	DrainTimeout time.Duration
	Logger       *slog.Logger // nil: discard
	Version      string       // reported by /healthz and the console
	// HostBinary is the binary served to the host installer ("": none).
	HostBinary string

	Build     BuildConfig
	Host      HostConfig
	Fair      FairConfig
	Rates     RatesConfig
	Payments  PaymentsConfig
	Streams   StreamsConfig
	Front     FrontConfig
	Edges     EdgesConfig
	Artifacts ArtifactsConfig
	// DataSources configures the local host's data-source cache; its Root
	// and Logger are filled in.
	DataSources datasrc.Config
	// MetricsToken may read GET /metrics besides admin keys and loopback.
	MetricsToken string
	// DutyLease is how long a controller's hold on a singleton duty lasts
	// unrenewed on PostgreSQL (0: 10s).
	DutyLease time.Duration
	// Heartbeat is the longest a host waits between lease requests (0: 10s).
	Heartbeat time.Duration
	// MinFreeDisk is the free-disk watermark of DataDir under which the
	// API refuses what would store more (zero: none).
	MinFreeDisk diskfree.Watermark

	// Seams: the only places a fake may replace the production part.
	Clock clock.Clock // nil: the system clock
	// Driver runs the local host's sandboxes (nil: Host.Driver names one).
	Driver sandbox.Driver
	// Builder builds pushed projects (nil: buildah as Build says). The
	// builder is the build side's sandbox: tests hold builds in it or
	// build without buildah. Images it builds are still published to the
	// shared store when there is one.
	Builder project.ImageBuilder
	// Facilitator and Chain replace the x402 facilitator's HTTP client and
	// the chain's JSON-RPC node (nil: made from Payments' URLs).
	Facilitator payment.Facilitator
	Chain       payment.Chain
	// DiskStat reads the data dir's filesystem for MinFreeDisk (nil:
	// statfs); tests fake a full disk through it.
	DiskStat diskfree.StatFunc
	// Blob, when set, holds the artifact bytes instead of the store
	// Artifacts names; like DB, an engine a test opened (the API tests run
	// over local disk and S3 alike), not a fake.
	Blob artifact.Blob
}

// BuildConfig configures the image builder (the --build-* flags).
type BuildConfig struct {
	Buildah, Runsc string // "": build.DefaultBuildahPath, build.DefaultRunscPath
	// Isolation and Network of RUN steps ("": oci and filtered).
	Isolation, Network string
	CPUs               float64 // 0: half this machine's cores
	Memory             string  // "": 2g
	AllowedBaseImages  []string
	// Disabled runs no builder at all: pushes stay queued. For tests that
	// publish revisions without a build; production always builds.
	Disabled bool
}

// HostConfig configures the local host, which runs tasks on this machine
// through the same agent protocol as a remote host (the --host-* flags
// and the disk flags).
type HostConfig struct {
	Disabled bool   // --no-local-host: tasks wait for remote hosts
	Driver   string // gvisor ("") or process
	// AllowUnisolated lets the process driver run tasks unsandboxed.
	AllowUnisolated bool
	Slots           int // 0: one per CPU
	// Warm is how many sandboxes are kept booted per project; negative:
	// one per slot, 0: none.
	Warm     int
	CPUs     float64 // 0: all
	MemoryMB int64   // 0: all
	// GPUs lent (-1: all), with the driver's user-space files in
	// GPUDriverDir ("": found through the loader cache).
	GPUs         int
	GPUDriverDir string
	// WorkDir holds the attempts' work dirs, caches, data sources and warm
	// sandboxes ("": DataDir/host).
	WorkDir     string
	WorkMinFree diskfree.Watermark
	PidsLimit   int64 // -1: none; 0: agent.DefaultPidsLimit
	// MaxOutputFiles and MaxOutputBytes bound an attempt's artifacts (0:
	// the sandbox defaults).
	MaxOutputFiles int
	MaxOutputBytes int64
	// StorageQuota gives each attempt a filesystem of its own (gvisor only).
	StorageQuota bool
	// ProjectCacheBytes and ProjectCacheMountBytes bound each project's
	// cache directory and cache mounts with StorageQuota (0: unbounded).
	ProjectCacheBytes, ProjectCacheMountBytes int64
	// CacheMountsMaxBytes caps all cache mounts together (0: no cap).
	CacheMountsMaxBytes int64
	// ImageCacheBytes caps the local host's image and input caches
	// together, least recently used first (agent.Config.ImageCacheBytes;
	// 0: no cap).
	ImageCacheBytes int64
}

// FairConfig is the build queue's shape and the per-account caps.
type FairConfig struct {
	BuildWorkers     int           // 0: project.DefaultBuildWorkers
	BuildsPerAccount int           // 0: one less than BuildWorkers
	BuildTimeout     time.Duration // 0: project.DefaultMaxBuildTime
	Quotas           project.Quotas
}

// RatesConfig is where billing takes its market rates from.
type RatesConfig struct {
	Table billing.Rates // zero: billing.DefaultRates
	// FeedURL, when set, is polled every FeedInterval for live rates;
	// Table applies until it answers and whenever it fails.
	FeedURL      string
	FeedInterval time.Duration
}

// PaymentsConfig configures wallet sign-in and x402 payments. Config's
// PublicURL "" is the listener's http:// URL.
type PaymentsConfig struct {
	Config       payment.Config
	WalletPolicy *auth.WalletPolicy
	// AuthRatePerAddress and AuthRatePerIP limit wallet sign-in requests
	// per minute (0: httpapi's defaults).
	AuthRatePerAddress, AuthRatePerIP int
}

// StreamsConfig configures the event streams (zero values: httpapi's
// defaults).
type StreamsConfig struct {
	Timeout, PingInterval time.Duration
	PerAccount            int
	// BrokerPoll and BrokerBuffer tune the event broker (zero: its
	// defaults).
	BrokerPoll   time.Duration
	BrokerBuffer int
}

// FrontConfig configures the public endpoints' rate limits.
type FrontConfig struct {
	TrustedProxies []netip.Prefix
	Limits         *httpapi.Limits // nil: httpapi.DefaultLimits
}

// EdgesConfig bounds what a stranger may hold of the HTTP server.
type EdgesConfig struct {
	IdleTimeout       time.Duration // 0: 2m
	ReadHeaderTimeout time.Duration // 0: 10s
	BodyRate          httpapi.BodyRate
	// MaxConns and MaxConnsPerClient cap connections (0: unlimited).
	MaxConns, MaxConnsPerClient int
}

// ArtifactsConfig configures artifact storage and retention.
type ArtifactsConfig struct {
	MaxUploadBytes, QuotaBytes int64         // 0: the artifact defaults
	Grace                      time.Duration // 0: artifact.DefaultGrace
	// StoreURL is "" (local disk under DataDir/artifacts) or
	// s3://bucket/prefix at S3Endpoint in S3Region.
	StoreURL, S3Endpoint, S3Region string
	AllowPrivate                   bool
	JobRetention                   time.Duration // 0: store.DefaultJobRetention
	// ImageRetention is how long an image nothing refers to is kept
	// (0: imagestore.DefaultRetention); the image sweep runs every
	// ImageSweepInterval (0: a minute).
	ImageRetention, ImageSweepInterval time.Duration
}
