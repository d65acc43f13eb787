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
	// Stage streams r to storage while hashing it, without making it
	// readable yet. At most limit bytes are read: more fails with
	// ErrTooLarge. Whenever Stage fails (r fails, the limit is passed, ctx
	// ends) nothing of r is left behind. The caller then commits or aborts
	// the staged content, so a decision taken once the hash and size are
	// known (a quota) keeps nothing when it refuses.
	Stage(ctx context.Context, r io.Reader, limit int64) (Staged, error)
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

// Staged is content streamed by Stage and not yet committed.
type Staged interface {
	Result() PutResult
	// Commit stores the content under its sha256; committing content
	// already present succeeds. Callers write the row that holds the
	// content first and commit after, so a sweeper that deletes content no
	// row holds can never take content between the two: either it sees
	// the row, or the commit puts the content back.
	Commit(ctx context.Context) error
	// Abort discards the staged content; after Commit it does nothing.
	Abort(ctx context.Context) error
}

// Put stages and commits in one step.
func Put(ctx context.Context, b Blob, r io.Reader, limit int64) (PutResult, error) {
	st, err := b.Stage(ctx, r, limit)
	if err != nil {
		return PutResult{}, err
	}
	if err := st.Commit(ctx); err != nil {
		return PutResult{}, errors.Join(err, st.Abort(ctx))
	}
	return st.Result(), nil
}

// PutResult is the hash and size of staged content.
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

// LimitReader reads r while ctx lives, failing with ErrTooLarge past limit
// bytes: what a Blob's Stage reads its body through.
func LimitReader(ctx context.Context, r io.Reader, limit int64) *Limited {
	return &Limited{l: &limitReader{r: ctxReader{ctx, r}, n: limit}}
}

// Limited is LimitReader's reader.
type Limited struct{ l *limitReader }

func (x *Limited) Read(p []byte) (int, error) { return x.l.Read(p) }

// Over reports whether the body went past its limit.
func (x *Limited) Over() bool { return x.l.n < 0 }
