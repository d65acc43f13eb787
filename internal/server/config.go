package server

import (
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/diskfree"
	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/project"
	"github.com/skiffhq/skiff/internal/sandbox"
)

// Config is everything a controller is built from: what `skiff server`'s
// flags set (each field's flag and its meaning are in `skiff server
// --help` and docs/hosting.md), plus the seams where tests put their own
// parts. The zero value of a seam is the production part.
type Config struct {
	// StoreConfig opens the store: SQLite under DataDir, or PostgreSQL at
	// DatabaseURL. DataDir also holds images, artifacts and the local host.
	StoreConfig
	// Listen is the API's address; ":0" picks a free port (see Addr).
	Listen string
	// DrainTimeout bounds how long Shutdown waits for requests in flight.
	DrainTimeout time.Duration
	Build        BuildConfig
	Host         LocalHostConfig
	Rates        RateConfig
	Payments     PaymentConfig
	Streams      StreamConfig
	// MetricsToken may read GET /metrics besides admin keys and loopback.
	MetricsToken string
	Front        FrontConfig
	Artifacts    ArtifactConfig
	// DutyLease is how long a controller's hold on a singleton duty lasts
	// unrenewed (PostgreSQL only).
	DutyLease time.Duration
	// Heartbeat is the longest a host waits between requests for work.
	Heartbeat   time.Duration
	Data        DataConfig
	Fair        FairConfig
	Edges       EdgeConfig
	Disk        DiskConfig
	MinFreeDisk diskfree.Watermark

	// Version is the build's version, shown by /version and the logs.
	Version string
	// HostBinary is the skiff binary GET /skiff-host serves to hosts that
	// install themselves ("" serves none).
	HostBinary string

	// Seams. Logger: the JSON log (nil: discard). Clock: time (nil: the
	// system's). HostDriver: the local host's sandbox driver (nil: the one
	// Host.Driver names). Builder: what turns pushes into images (nil:
	// buildah, as Build says).
	Logger     *slog.Logger
	Clock      clock.Clock
	HostDriver sandbox.Driver
	Builder    project.ImageBuilder
}

// StreamConfig configures the event streams (docs/streams.md).
type StreamConfig struct {
	Timeout      time.Duration
	PingInterval time.Duration
	PerAccount   int
}

// FrontConfig configures the public endpoints' rate limits.
type FrontConfig struct {
	TrustedProxies string
	WaitlistRate   int
	FeedbackRate   int
}

// LocalHostConfig configures the local host that runs tasks on this machine.
type LocalHostConfig struct {
	Driver          string
	AllowUnisolated bool
	Slots           int
	Warm            int
	CPUs            float64
	MemoryMB        int64
	Disabled        bool
	GPUs            int
	GPUDriverDir    string
}

// BuildConfig configures the image builder.
type BuildConfig struct {
	Buildah    string
	Runsc      string
	Isolation  string
	Network    string
	CPUs       float64
	Memory     string
	AllowBases string
}

// validate checks what can be checked before anything is opened, and
// returns the trusted proxies parsed. Each error names the flag.
func (c *Config) validate() ([]netip.Prefix, error) {
	if _, err := c.Rates.validate(); err != nil {
		return nil, err
	}
	if err := c.Data.Validate(); err != nil {
		return nil, err
	}
	if err := c.Fair.validate(); err != nil {
		return nil, err
	}
	if err := c.Disk.Validate(); err != nil {
		return nil, err
	}
	proxies, err := httpapi.TrustedProxies([]string{c.Front.TrustedProxies})
	if err != nil {
		return nil, fmt.Errorf("--trusted-proxy: %w", err)
	}
	if c.Front.WaitlistRate < 0 || c.Front.FeedbackRate < 0 {
		return nil, fmt.Errorf("--waitlist-rate and --feedback-rate must be 0 (unlimited) or more")
	}
	if err := c.Edges.validate(); err != nil {
		return nil, err
	}
	if c.DutyLease < time.Second || c.Heartbeat < time.Second {
		return nil, fmt.Errorf("--duty-lease and --host-heartbeat must be at least 1s")
	}
	if c.Streams.Timeout <= 0 || c.Streams.PingInterval <= 0 || c.Streams.PerAccount <= 0 {
		return nil, fmt.Errorf("--stream-timeout, --stream-ping-interval and --stream-max-per-account must be positive")
	}
	return proxies, nil
}
