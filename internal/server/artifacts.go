package server

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/artifact/externalhttp"
	"github.com/skiffhq/skiff/internal/artifact/s3blob"
	"github.com/skiffhq/skiff/internal/store"
)

// openBlob opens the blob store Artifacts.StoreURL names.
func (s *Server) openBlob(ctx context.Context) (artifact.Blob, error) {
	a := s.cfg.Artifacts
	if s.cfg.Blob != nil {
		return s.cfg.Blob, nil
	}
	switch u := a.StoreURL; {
	case u == "":
		return artifact.NewLocal(filepath.Join(s.dataDir, "artifacts"))
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
func (s *Server) sharedBlob(ctx context.Context, sub string) (artifact.Blob, error) {
	a := s.cfg.Artifacts
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

func (s *Server) artifactService(ctx context.Context) (*artifact.Service, error) {
	a := s.cfg.Artifacts
	b, err := s.openBlob(ctx)
	if err != nil {
		return nil, err
	}
	s.blob = b
	// External artifacts a user downloads are spooled on the data disk
	// (its free-disk watermark guards them), in unlinked files.
	spool := filepath.Join(s.dataDir, "artifact-spool")
	if err := os.MkdirAll(spool, 0o700); err != nil {
		return nil, fmt.Errorf("create artifact spool dir: %w", err)
	}
	return artifact.New(artifact.Config{Store: s.db, Blob: b, Clock: s.clk, Logger: s.log.With("component", "artifacts"),
		Fetcher: externalhttp.Fetcher{}, MaxUploadBytes: a.MaxUploadBytes, QuotaBytes: a.QuotaBytes, Grace: a.Grace,
		AllowPrivate: a.AllowPrivate, SpoolDir: spool}), nil
}

// artifactSweepTasks are the sweeper's batches for artifacts and jobs:
// artifacts past their grace, and terminal jobs past their retention.
func (s *Server) artifactSweepTasks() []artifact.SweepTask {
	retention := cmp.Or(s.cfg.Artifacts.JobRetention, store.DefaultJobRetention)
	return []artifact.SweepTask{
		{Name: "artifact_grace", Run: s.artifacts.SweepGrace},
		{Name: "job_retention", Run: func(ctx context.Context, batch int) (int, error) {
			return s.jobs.PurgeFinishedBefore(ctx, s.clk.Now().Add(-retention), batch)
		}},
	}
}

// expirySweepTasks purge what strangers create for free once it expired:
// wallet challenges and sessions, and unpaid quotes a day after expiry.
func (s *Server) expirySweepTasks() []artifact.SweepTask {
	return []artifact.SweepTask{
		{Name: "wallet_expiry", Run: s.auth.PurgeExpired},
		{Name: "quote_expiry", Run: func(ctx context.Context, batch int) (int, error) {
			return s.db.QuotePurgeExpired(ctx, s.clk.Now().Add(-store.ExpiredQuoteRetention), batch)
		}},
	}
}
