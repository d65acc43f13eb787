package artifact_test

import (
	"context"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/artifact/blobtest"
	"github.com/skiffhq/skiff/internal/artifact/s3blob"
	"github.com/skiffhq/skiff/internal/artifact/s3test"
)

// S3Leftovers lists staged objects and unfinished multipart uploads.
func s3Leftovers(t *testing.T, b artifact.Blob) []string {
	s := b.(*s3blob.S3)
	ctx := context.Background()
	var out []string
	for o := range s.Client().ListObjects(ctx, s.Bucket(), minio.ListObjectsOptions{Prefix: s.TmpPrefix(), Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		out = append(out, o.Key)
	}
	for u := range s.Client().ListIncompleteUploads(ctx, s.Bucket(), s.TmpPrefix(), true) {
		if u.Err != nil {
			t.Fatal(u.Err)
		}
		out = append(out, "upload:"+u.Key)
	}
	return out
}

func TestS3Blob(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	blobtest.Run(t, blobtest.Harness{
		Open:      func(t *testing.T) artifact.Blob { return srv.Blob(t, "skiff/artifacts") },
		Leftovers: s3Leftovers,
		SignsURLs: true,
	})
}

func TestParseS3URL(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{"s3://bkt/a/b/": "bkt|a/b", "s3://bkt": "bkt|", "http://x/y": "", "s3:///p": ""} {
		b, p, err := s3blob.ParseS3URL(raw)
		got := b + "|" + p
		if err != nil {
			got = ""
		}
		if got != want || (want == "") != (err != nil) || strings.Contains(got, "//") {
			t.Errorf("ParseS3URL(%q): got %q, %v; want %q", raw, got, err, want)
		}
	}
}
