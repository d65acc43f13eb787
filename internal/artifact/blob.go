// Package artifact owns files that jobs move in and out: the blob stores
// that hold their bytes (content addressed by sha256), and the service that
// keeps the rows that say who owns them and who refers to them.
package artifact

import (
	"context"
	"errors"
	"io"
	"regexp"
	"time"
)

// Blob stores immutable content under its sha256 (lower-case hex). Every
// implementation passes the suite in artifact/blobtest.
type Blob interface {
	// Put streams r to storage while hashing it and stores the content
	// under its sha256. At most limit bytes are read: more fails with
	// ErrTooLarge. Whenever Put fails (r fails, the limit is passed, ctx
	// ends) nothing of r is left behind. Storing content already present
	// succeeds and refreshes its modification time, so that a sweeper
	// that deletes unreferenced content by age never takes what was just
	// put.
	Put(ctx context.Context, r io.Reader, limit int64) (PutResult, error)
	// Open reads length bytes of the content from offset (length < 0: to
	// the end). ErrNotFound when the content is absent.
	Open(ctx context.Context, sha256 string, offset, length int64) (io.ReadCloser, error)
	// Stat reports the size and modification time; ErrNotFound when absent.
	Stat(ctx context.Context, sha256 string) (Info, error)
	// Delete removes the content; deleting absent content is not an error.
	Delete(ctx context.Context, sha256 string) error
	// SignedURL returns a URL that reads the content without credentials
	// for ttl, or ErrNoSignedURL when the store cannot make one.
	SignedURL(ctx context.Context, sha256 string, ttl time.Duration) (string, error)
}

// PutResult is what Put stored.
type PutResult struct {
	SHA256 string
	Size   int64
}

// Info describes stored content.
type Info struct {
	Size    int64
	ModTime time.Time
}

var (
	// ErrNotFound: no content under that sha256.
	ErrNotFound = errors.New("artifact: blob not found")
	// ErrTooLarge: the body passed Put's limit.
	ErrTooLarge = errors.New("artifact: blob over the size limit")
	// ErrNoSignedURL: the store cannot sign URLs (local disk).
	ErrNoSignedURL = errors.New("artifact: blob store makes no signed URLs")
	// ErrBadDigest: a sha256 argument is not 64 lower-case hex digits.
	ErrBadDigest = errors.New("artifact: malformed sha256")
)

var digestRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ValidDigest reports whether s is a lower-case hex sha256.
func ValidDigest(s string) bool { return digestRE.MatchString(s) }

// limitReader reads at most n bytes of r and fails with ErrTooLarge as soon
// as a byte past n arrives, so the writer never stores more than n.
type limitReader struct {
	r io.Reader
	n int64 // bytes still allowed
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n < 0 {
		return 0, ErrTooLarge
	}
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if l.n < 0 {
		return 0, ErrTooLarge
	}
	return n, err
}

// ctxReader fails the read once ctx is done, so a Put whose caller gave up
// stops at the next chunk.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
