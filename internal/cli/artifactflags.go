package cli

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/artifact/externalhttp"
	"github.com/skiffhq/skiff/internal/artifact/s3blob"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/job"
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
}

func (a *artifactFlags) register(fs *flag.FlagSet) {
	fs.Int64Var(&a.maxUpload, "artifact-max-upload-bytes", artifact.DefaultMaxUploadBytes, "largest relay artifact upload, in bytes (env SKIFF_ARTIFACT_MAX_UPLOAD_BYTES)")
	fs.Int64Var(&a.quota, "artifact-quota-bytes", artifact.DefaultQuotaBytes, "artifact bytes each account may retain, each content counted once (env SKIFF_ARTIFACT_QUOTA_BYTES)")
	fs.DurationVar(&a.grace, "artifact-grace", artifact.DefaultGrace, "how long a deleted artifact's bytes stay before they are removed (env SKIFF_ARTIFACT_GRACE)")
	fs.StringVar(&a.storeURL, "artifact-store", "", "where artifact bytes live: empty for local disk under --data-dir/artifacts (env SKIFF_ARTIFACT_STORE)")
	fs.StringVar(&a.s3Endpoint, "s3-endpoint", "", "endpoint of the S3-compatible store of --artifact-store s3://... (env SKIFF_S3_ENDPOINT)")
	fs.StringVar(&a.s3Region, "s3-region", "us-east-1", "region of the S3-compatible store (env SKIFF_S3_REGION)")
	fs.DurationVar(&a.jobRetention, "job-retention", store.DefaultJobRetention, "how long terminal jobs are kept with their tasks, outputs and events before the sweeper purges them (env SKIFF_JOB_RETENTION)")
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
	}
	return nil
}

// blob opens the blob store the flags name.
func (a *artifactFlags) blob(ctx context.Context, dataDir string) (artifact.Blob, error) {
	switch u := a.storeURL; {
	case u == "":
		return artifact.NewLocal(filepath.Join(dataDir, "artifacts"))
	case strings.HasPrefix(u, "s3://"):
		bucket, prefix, err := s3blob.ParseS3URL(u)
		if err != nil {
			return nil, err
		}
		if a.s3Endpoint == "" {
			return nil, fmt.Errorf("--artifact-store %s needs --s3-endpoint", u)
		}
		// Credentials come from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY
		// and AWS_SESSION_TOKEN, never from flags (they would show in ps).
		return s3blob.NewS3(ctx, s3blob.S3Config{Endpoint: a.s3Endpoint, Region: a.s3Region, Bucket: bucket, Prefix: prefix})
	default:
		return nil, fmt.Errorf("--artifact-store must be empty (local disk) or s3://bucket/prefix")
	}
}

// sharedBlob opens the area sub ("images", "pushes") of a shared blob store
// (s3://), where controllers keep the bytes each must reach: nil when
// artifacts stay on local disk, which only one controller sees.
func (a *artifactFlags) sharedBlob(ctx context.Context, sub string) (artifact.Blob, error) {
	if !strings.HasPrefix(a.storeURL, "s3://") {
		return nil, nil
	}
	bucket, prefix, err := s3blob.ParseS3URL(a.storeURL)
	if err != nil {
		return nil, err
	}
	if a.s3Endpoint == "" {
		return nil, fmt.Errorf("--artifact-store %s needs --s3-endpoint", a.storeURL)
	}
	return s3blob.NewS3(ctx, s3blob.S3Config{Endpoint: a.s3Endpoint, Region: a.s3Region, Bucket: bucket, Prefix: path.Join(prefix, sub)})
}

func (a *artifactFlags) service(ctx context.Context, db store.Store, clk clock.Clock, log *slog.Logger, dataDir string) (*artifact.Service, error) {
	if err := a.validate(); err != nil {
		return nil, err
	}
	b, err := a.blob(ctx, dataDir)
	if err != nil {
		return nil, err
	}
	return artifact.New(artifact.Config{Store: db, Blob: b, Clock: clk, Logger: log, Fetcher: externalhttp.Fetcher{},
		MaxUploadBytes: a.maxUpload, QuotaBytes: a.quota, Grace: a.grace, AllowPrivate: a.allowPrivate}), nil
}

// sweepTasks are the sweeper's batches: artifacts past their grace, and
// terminal jobs past their retention.
func (a *artifactFlags) sweepTasks(s *artifact.Service, jobs *job.Service, clk clock.Clock) []artifact.SweepTask {
	return []artifact.SweepTask{
		{Name: "artifact_grace", Run: s.SweepGrace},
		{Name: "job_retention", Run: func(ctx context.Context, batch int) (int, error) {
			return jobs.PurgeFinishedBefore(ctx, clk.Now().Add(-a.jobRetention), batch)
		}},
	}
}
