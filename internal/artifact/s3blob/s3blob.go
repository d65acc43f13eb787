// Package s3blob keeps artifact bytes (and, with several controllers, build
// contexts and images) in an S3-compatible bucket through minio-go: the
// artifact.Blob behind --artifact-store s3://..., with signed URLs for
// downloads.
package s3blob

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/skiffhq/skiff/internal/artifact"
)

// S3Config names an S3-compatible bucket.
type S3Config struct {
	// Endpoint is host:port, or a URL whose scheme picks TLS (https) or not.
	Endpoint string
	Region   string
	Bucket   string
	Prefix   string // key prefix, without leading or trailing slash
	// AccessKey and SecretKey; both empty reads the usual AWS environment
	// variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN).
	AccessKey, SecretKey string
	// PartSize is the multipart part size of uploads of unknown length;
	// default 16 MiB. It is also what one upload holds in memory.
	PartSize uint64
}

// ParseS3URL reads --artifact-store s3://bucket/prefix.
func ParseS3URL(raw string) (bucket, prefix string, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return "", "", fmt.Errorf("artifact store %q: want s3://bucket/prefix", raw)
	}
	return u.Host, strings.Trim(u.Path, "/"), nil
}

// S3 keeps content in an S3-compatible object store: <prefix>/<sha256>,
// uploaded to <prefix>/tmp/<random> first and copied into place (server
// side) once its hash is known.
type S3 struct {
	c        *minio.Client
	bucket   string
	prefix   string
	partSize uint64
}

var _ artifact.Blob = (*S3)(nil)

// NewS3 connects to the bucket, which must exist.
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	endpoint, secure := cfg.Endpoint, true
	if u, err := url.Parse(cfg.Endpoint); err == nil && u.Host != "" {
		endpoint, secure = u.Host, u.Scheme != "http"
	}
	if endpoint == "" {
		return nil, errors.New("s3: an endpoint is required")
	}
	creds := credentials.NewEnvAWS()
	if cfg.AccessKey != "" || cfg.SecretKey != "" {
		creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, "")
	}
	c, err := minio.New(endpoint, &minio.Options{Creds: creds, Secure: secure, Region: cfg.Region})
	if err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	ok, err := c.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("s3: bucket %s: %w", cfg.Bucket, err)
	}
	if !ok {
		return nil, fmt.Errorf("s3: bucket %s does not exist", cfg.Bucket)
	}
	ps := cfg.PartSize
	if ps == 0 {
		ps = 16 << 20
	}
	return &S3{c: c, bucket: cfg.Bucket, prefix: strings.Trim(cfg.Prefix, "/"), partSize: ps}, nil
}

func (s *S3) key(rest string) string {
	if s.prefix == "" {
		return rest
	}
	return s.prefix + "/" + rest
}

// TmpPrefix is where staged uploads wait, for tests that check leftovers.
func (s *S3) TmpPrefix() string { return s.key("tmp/") }

// Client is the underlying client, for tests.
func (s *S3) Client() *minio.Client { return s.c }

// Bucket is the bucket's name.
func (s *S3) Bucket() string { return s.bucket }

func notFound(err error) bool {
	code := minio.ToErrorResponse(err).Code
	return code == "NoSuchKey" || code == "NotFound" || minio.ToErrorResponse(err).StatusCode == 404
}

func (s *S3) Stage(ctx context.Context, r io.Reader, limit int64) (artifact.Staged, error) {
	tmp := s.key("tmp/" + strings.ToLower(rand.Text()))
	h := sha256.New()
	lr := artifact.LimitReader(ctx, r, limit)
	info, err := s.c.PutObject(ctx, s.bucket, tmp, io.TeeReader(lr, h), -1,
		minio.PutObjectOptions{PartSize: s.partSize, ContentType: "application/octet-stream"})
	if err != nil {
		cctx := context.WithoutCancel(ctx)
		_ = s.c.RemoveIncompleteUpload(cctx, s.bucket, tmp)
		_ = s.c.RemoveObject(cctx, s.bucket, tmp, minio.RemoveObjectOptions{})
		// The reader's own error (a client gone, the limit) says more
		// than the client library's wrapping of it.
		if lr.Over() {
			return nil, artifact.ErrTooLarge
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	return &s3Staged{s: s, tmp: tmp, res: artifact.PutResult{SHA256: hex.EncodeToString(h.Sum(nil)), Size: info.Size}}, nil
}

type s3Staged struct {
	s    *S3
	tmp  string
	res  artifact.PutResult
	done bool
}

func (st *s3Staged) Result() artifact.PutResult { return st.res }

func (st *s3Staged) Commit(ctx context.Context) error {
	if st.done {
		return errors.New("artifact: staged content already committed or aborted")
	}
	s := st.s
	if _, err := s.c.CopyObject(ctx, minio.CopyDestOptions{Bucket: s.bucket, Object: s.key(st.res.SHA256)},
		minio.CopySrcOptions{Bucket: s.bucket, Object: st.tmp}); err != nil {
		return fmt.Errorf("s3: commit: %w", err)
	}
	st.done = true
	if err := s.c.RemoveObject(ctx, s.bucket, st.tmp, minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("s3: remove staged copy: %w", err)
	}
	return nil
}

func (st *s3Staged) Abort(ctx context.Context) error {
	if st.done {
		return nil
	}
	st.done = true
	return st.s.c.RemoveObject(ctx, st.s.bucket, st.tmp, minio.RemoveObjectOptions{})
}

func (s *S3) Open(ctx context.Context, sha string, offset, length int64) (io.ReadCloser, error) {
	if !artifact.ValidDigest(sha) {
		return nil, artifact.ErrBadDigest
	}
	info, err := s.Stat(ctx, sha)
	if err != nil {
		return nil, err
	}
	if length == 0 || offset >= info.Size {
		return io.NopCloser(strings.NewReader("")), nil
	}
	opts := minio.GetObjectOptions{}
	if offset > 0 || length > 0 {
		end := int64(0) // 0: to the end
		if length > 0 {
			end = offset + length - 1
		}
		if err := opts.SetRange(offset, end); err != nil {
			return nil, err
		}
	}
	obj, err := s.c.GetObject(ctx, s.bucket, s.key(sha), opts)
	if err != nil {
		if notFound(err) {
			return nil, artifact.ErrNotFound
		}
		return nil, err
	}
	return obj, nil
}

func (s *S3) Stat(ctx context.Context, sha string) (artifact.Info, error) {
	if !artifact.ValidDigest(sha) {
		return artifact.Info{}, artifact.ErrBadDigest
	}
	oi, err := s.c.StatObject(ctx, s.bucket, s.key(sha), minio.StatObjectOptions{})
	if err != nil {
		if notFound(err) {
			return artifact.Info{}, artifact.ErrNotFound
		}
		return artifact.Info{}, err
	}
	return artifact.Info{Size: oi.Size, ModTime: oi.LastModified.UTC()}, nil
}

func (s *S3) Delete(ctx context.Context, sha string) error {
	if !artifact.ValidDigest(sha) {
		return artifact.ErrBadDigest
	}
	err := s.c.RemoveObject(ctx, s.bucket, s.key(sha), minio.RemoveObjectOptions{})
	if err != nil && !notFound(err) {
		return err
	}
	return nil
}

func (s *S3) SignedURL(ctx context.Context, sha string, ttl time.Duration) (string, error) {
	if !artifact.ValidDigest(sha) {
		return "", artifact.ErrBadDigest
	}
	u, err := s.c.PresignedGetObject(ctx, s.bucket, s.key(sha), ttl, nil)
	if err != nil {
		return "", err
	}
	return u.String(), nil
}
