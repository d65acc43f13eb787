package server

import (
	"context"
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

// ArtifactConfig configure artifact storage and its limits (spec 4.7, 8).
type ArtifactConfig struct {
	MaxUpload    int64
	Quota        int64
	Grace        time.Duration
	StoreURL     string
	S3Endpoint   string
	S3Region     string
	AllowPrivate bool
	JobRetention time.Duration
}

func (a *ArtifactConfig) validate() error {
	switch {
	case a.MaxUpload <= 0:
		return fmt.Errorf("--artifact-max-upload-bytes must be positive")
	case a.Quota <= 0:
		return fmt.Errorf("--artifact-quota-bytes must be positive")
	case a.Grace <= 0:
		return fmt.Errorf("--artifact-grace must be positive")
	case a.JobRetention <= 0:
		return fmt.Errorf("--job-retention must be positive")
	}
	return nil
}

// blob opens the blob store the flags name.
func (a *ArtifactConfig) blob(ctx context.Context, dataDir string) (artifact.Blob, error) {
	switch u := a.StoreURL; {
	case u == "":
		return artifact.NewLocal(filepath.Join(dataDir, "artifacts"))
	case strings.HasPrefix(u, "s3://"):
		bucket, prefix, err := s3blob.ParseS3URL(u)
		if err != nil {
			return nil, err
		}
		if a.S3Endpoint == "" {
			return nil, fmt.Errorf("--artifact-store %s needs --s3-endpoint", u)
		}
		// Credentials come from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY
		// and AWS_SESSION_TOKEN, never from flags (they would show in ps).
		return s3blob.NewS3(ctx, s3blob.S3Config{Endpoint: a.S3Endpoint, Region: a.S3Region, Bucket: bucket, Prefix: prefix})
	default:
		return nil, fmt.Errorf("--artifact-store must be empty (local disk) or s3://bucket/prefix")
	}
}

// sharedBlob opens the area sub ("images", "pushes") of a shared blob store
// (s3://), where controllers keep the bytes each must reach: nil when
// artifacts stay on local disk, which only one controller sees.
func (a *ArtifactConfig) sharedBlob(ctx context.Context, sub string) (artifact.Blob, error) {
	if !strings.HasPrefix(a.StoreURL, "s3://") {
		return nil, nil
	}
	bucket, prefix, err := s3blob.ParseS3URL(a.StoreURL)
	if err != nil {
		return nil, err
	}
	if a.S3Endpoint == "" {
		return nil, fmt.Errorf("--artifact-store %s needs --s3-endpoint", a.StoreURL)
	}
	return s3blob.NewS3(ctx, s3blob.S3Config{Endpoint: a.S3Endpoint, Region: a.S3Region, Bucket: bucket, Prefix: path.Join(prefix, sub)})
}

func (a *ArtifactConfig) service(ctx context.Context, db store.Store, clk clock.Clock, log *slog.Logger, dataDir string) (*artifact.Service, error) {
	if err := a.validate(); err != nil {
		return nil, err
	}
	b, err := a.blob(ctx, dataDir)
	if err != nil {
		return nil, err
	}
	return artifact.New(artifact.Config{Store: db, Blob: b, Clock: clk, Logger: log, Fetcher: externalhttp.Fetcher{},
		MaxUploadBytes: a.MaxUpload, QuotaBytes: a.Quota, Grace: a.Grace, AllowPrivate: a.AllowPrivate}), nil
}

// sweepTasks are the sweeper's batches: artifacts past their grace, and
// terminal jobs past their retention.
func (a *ArtifactConfig) sweepTasks(s *artifact.Service, jobs *job.Service, clk clock.Clock) []artifact.SweepTask {
	return []artifact.SweepTask{
		{Name: "artifact_grace", Run: s.SweepGrace},
		{Name: "job_retention", Run: func(ctx context.Context, batch int) (int, error) {
			return jobs.PurgeFinishedBefore(ctx, clk.Now().Add(-a.JobRetention), batch)
		}},
	}
}
