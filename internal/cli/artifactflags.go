package cli

import (
	"flag"
	"fmt"
	"time"

	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/imagestore"
	"github.com/skiffhq/skiff/internal/server"
	"github.com/skiffhq/skiff/internal/store"
)

// artifactFlags configure artifact storage and its limits (spec 4.7, 8).
type artifactFlags struct {
	maxUpload    int64
	quota        int64
	grace        time.Duration
	storeURL     string
	s3Endpoint   string
	s3Region     string
	allowPrivate bool
	jobRetention time.Duration
	// The image sweep (docs/hosting.md, "Images").
	imageRetention, imageSweepInterval time.Duration
}

func (a *artifactFlags) register(fs *flag.FlagSet) {
	fs.Int64Var(&a.maxUpload, "artifact-max-upload-bytes", artifact.DefaultMaxUploadBytes, "largest relay artifact upload, in bytes (env SKIFF_ARTIFACT_MAX_UPLOAD_BYTES)")
	fs.Int64Var(&a.quota, "artifact-quota-bytes", artifact.DefaultQuotaBytes, "artifact bytes each account may retain, each content counted once (env SKIFF_ARTIFACT_QUOTA_BYTES)")
	fs.DurationVar(&a.grace, "artifact-grace", artifact.DefaultGrace, "how long a deleted artifact's bytes stay before they are removed (env SKIFF_ARTIFACT_GRACE)")
	fs.StringVar(&a.storeURL, "artifact-store", "", "where artifact bytes live: empty for local disk under --data-dir/artifacts (env SKIFF_ARTIFACT_STORE)")
	fs.StringVar(&a.s3Endpoint, "s3-endpoint", "", "endpoint of the S3-compatible store of --artifact-store s3://... (env SKIFF_S3_ENDPOINT)")
	fs.StringVar(&a.s3Region, "s3-region", "us-east-1", "region of the S3-compatible store (env SKIFF_S3_REGION)")
	fs.DurationVar(&a.jobRetention, "job-retention", store.DefaultJobRetention, "how long terminal jobs are kept with their tasks, outputs and events before the sweeper purges them (env SKIFF_JOB_RETENTION)")
	fs.DurationVar(&a.imageRetention, "image-retention", imagestore.DefaultRetention, "how long a project image that no published revision, open job or attempt, or warm pool refers to is kept before it is deleted from the shared blob store and the controllers' disks (env SKIFF_IMAGE_RETENTION)")
	fs.DurationVar(&a.imageSweepInterval, "image-sweep-interval", time.Minute, "how often the image sweep looks for images past --image-retention; keep it well under the retention (env SKIFF_IMAGE_SWEEP_INTERVAL)")
	fs.BoolVar(&a.allowPrivate, "artifact-external-allow-private", false, "let external artifact URLs resolve to loopback, link-local or private addresses (env SKIFF_ARTIFACT_EXTERNAL_ALLOW_PRIVATE)")
}

func (a *artifactFlags) validate() error {
	switch {
	case a.maxUpload <= 0:
		return fmt.Errorf("--artifact-max-upload-bytes must be positive")
	case a.quota <= 0:
		return fmt.Errorf("--artifact-quota-bytes must be positive")
	case a.grace <= 0:
		return fmt.Errorf("--artifact-grace must be positive")
	case a.jobRetention <= 0:
		return fmt.Errorf("--job-retention must be positive")
	case a.imageSweepInterval <= 0:
		return fmt.Errorf("--image-sweep-interval must be positive")
	case a.imageRetention < 2*a.imageSweepInterval:
		// A sweep sees an image in use at most once an interval: a
		// retention shorter than that could delete one still referred to.
		return fmt.Errorf("--image-retention must be at least twice --image-sweep-interval")
	}
	return nil
}

// config is the artifacts part of the server's configuration.
func (a *artifactFlags) config() server.ArtifactsConfig {
	return server.ArtifactsConfig{MaxUploadBytes: a.maxUpload, QuotaBytes: a.quota, Grace: a.grace, StoreURL: a.storeURL,
		S3Endpoint: a.s3Endpoint, S3Region: a.s3Region, AllowPrivate: a.allowPrivate, JobRetention: a.jobRetention,
		ImageRetention: a.imageRetention, ImageSweepInterval: a.imageSweepInterval}
}
