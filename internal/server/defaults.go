package server

import (
	"time"

	"github.com/skiffhq/skiff/internal/agent"
	"github.com/skiffhq/skiff/internal/agent/datasrc"
	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/diskfree"
	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/payment"
	"github.com/skiffhq/skiff/internal/project"
	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/store"
)

// Defaults is the Config `skiff server` runs with when no flag is given:
// every flag's default is read from here (the help shows them), and tests
// start from it and change what they need.
func Defaults() Config {
	return Config{
		Listen:       "127.0.0.1:8080",
		DrainTimeout: 20 * time.Second,
		Heartbeat:    10 * time.Second,
		DutyLease:    10 * time.Second,
		MinFreeDisk:  diskfree.DefaultWatermark,
		StoreConfig: StoreConfig{
			DataDir: "./skiff-data",
		},
		Build: BuildConfig{
			Buildah:   build.DefaultBuildahPath,
			Runsc:     build.DefaultRunscPath,
			Isolation: build.IsolationOCI,
			Network:   build.NetworkFiltered,
			Memory:    "2g",
		},
		Host: LocalHostConfig{
			Driver: "gvisor",
			Warm:   -1,
		},
		Rates: RateConfig{
			CPUCoreHour:      USDValue(billing.DefaultRates.CPUCoreHourMicros),
			MemoryGBHour:     USDValue(billing.DefaultRates.MemoryGBHourMicros),
			GPUHour:          USDValue(billing.DefaultRates.GPUHourMicros),
			DedicatedPercent: billing.DefaultRates.DedicatedPercent,
			FeedInterval:     5 * time.Minute,
		},
		Payments: PaymentConfig{
			RatePerAddress: httpapi.DefaultAuthRatePerAddress,
			RatePerIP:      httpapi.DefaultAuthRatePerIP,
			Network:        payment.DefaultNetwork,
			Asset:          payment.DefaultAsset,
			AssetName:      payment.DefaultAssetName,
			AssetVersion:   payment.DefaultAssetVersion,
			QuoteTTL:       payment.DefaultQuoteTTL,
		},
		Streams: StreamConfig{
			Timeout:      time.Hour,
			PingInterval: 15 * time.Second,
			PerAccount:   100,
		},
		Front: FrontConfig{
			WaitlistRate: httpapi.DefaultLimits.WaitlistPerMinute,
			FeedbackRate: httpapi.DefaultLimits.FeedbackPerMinute,
		},
		Artifacts: ArtifactConfig{
			MaxUpload:    artifact.DefaultMaxUploadBytes,
			Quota:        artifact.DefaultQuotaBytes,
			Grace:        artifact.DefaultGrace,
			S3Region:     "us-east-1",
			JobRetention: store.DefaultJobRetention,
		},
		Data: DataConfig{
			HubEndpoint: datasrc.DefaultHubEndpoint,
		},
		Fair: FairConfig{
			BuildWorkers: project.DefaultBuildWorkers,
			BuildTimeout: project.DefaultMaxBuildTime,
			QueuedBuilds: project.DefaultMaxQueuedBuilds,
			Uploads:      project.DefaultMaxUploads,
			Projects:     project.DefaultMaxProjects,
			KVKeys:       project.DefaultMaxKVKeys,
			KVBytes:      project.DefaultMaxKVBytes,
		},
		Edges: EdgeConfig{
			IdleTimeout:       2 * time.Minute,
			ReadHeaderTimeout: 10 * time.Second,
			BodyMinRate:       httpapi.DefaultBodyRate.MinBytesPerSecond,
			BodyRateWindow:    httpapi.DefaultBodyRate.Window,
			MaxConns:          4096,
			MaxConnsPerClient: 256,
		},
		Disk: DiskConfig{
			WorkMinFree:          diskfree.DefaultWatermark,
			PidsLimit:            agent.DefaultPidsLimit,
			MaxOutputFiles:       sandbox.DefaultMaxOutputFiles,
			MaxOutputGB:          float64(sandbox.DefaultMaxOutputBytes) / (1 << 30),
			ProjectCacheGB:       10,
			ProjectCacheMountsGB: 10,
			StorageQuota:         true,
		},
	}
}
