package cli

import (
	"flag"

	"github.com/skiffhq/skiff/internal/server"
)

func registerArtifacts(fs *flag.FlagSet, a *server.ArtifactConfig) {
	fs.Int64Var(&a.MaxUpload, "artifact-max-upload-bytes", a.MaxUpload, "largest relay artifact upload, in bytes (env SKIFF_ARTIFACT_MAX_UPLOAD_BYTES)")
	fs.Int64Var(&a.Quota, "artifact-quota-bytes", a.Quota, "artifact bytes each account may retain, each content counted once (env SKIFF_ARTIFACT_QUOTA_BYTES)")
	fs.DurationVar(&a.Grace, "artifact-grace", a.Grace, "how long a deleted artifact's bytes stay before they are removed (env SKIFF_ARTIFACT_GRACE)")
	fs.StringVar(&a.StoreURL, "artifact-store", a.StoreURL, "where artifact bytes live: empty for local disk under --data-dir/artifacts (env SKIFF_ARTIFACT_STORE)")
	fs.StringVar(&a.S3Endpoint, "s3-endpoint", a.S3Endpoint, "endpoint of the S3-compatible store of --artifact-store s3://... (env SKIFF_S3_ENDPOINT)")
	fs.StringVar(&a.S3Region, "s3-region", a.S3Region, "region of the S3-compatible store (env SKIFF_S3_REGION)")
	fs.DurationVar(&a.JobRetention, "job-retention", a.JobRetention, "how long terminal jobs are kept with their tasks, outputs and events before the sweeper purges them (env SKIFF_JOB_RETENTION)")
	fs.BoolVar(&a.AllowPrivate, "artifact-external-allow-private", a.AllowPrivate, "let external artifact URLs resolve to loopback, link-local or private addresses (env SKIFF_ARTIFACT_EXTERNAL_ALLOW_PRIVATE)")
}
