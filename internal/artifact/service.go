package artifact

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
)

// Defaults of the limits in spec section 8.
const (
	DefaultMaxUploadBytes int64 = 2 << 30   // relay upload: 2 GiB
	DefaultQuotaBytes     int64 = 100 << 30 // 100 GiB retained per account
	DefaultGrace                = 24 * time.Hour
	// MaxFilenameBytes bounds a stored filename.
	MaxFilenameBytes = 255
	// signedURLTTL is how long a signed URL of the meta answer reads.
	signedURLTTL = 15 * time.Minute
)

// Config configures the service. Zero limits take the defaults.
type Config struct {
	Store  store.Store
	Blob   Blob
	Clock  clock.Clock
	Logger *slog.Logger
	// MaxUploadBytes bounds one relay upload (--artifact-max-upload-bytes).
	MaxUploadBytes int64
	// QuotaBytes bounds an account's retained bytes (--artifact-quota-bytes).
	QuotaBytes int64
	// Grace is how long deleted content stays before its bytes go
	// (--artifact-grace).
	Grace time.Duration
	// AllowPrivate lets external URLs reach loopback, link-local and
	// private addresses (--artifact-external-allow-private).
	AllowPrivate bool
	// Fetcher gets external artifacts' bytes (externalhttp.Fetcher over
	// HTTP); nil: external inputs cannot be fetched.
	Fetcher Fetcher
	// SpoolDir holds external artifacts fetched for a user's download
	// while they are checked and sent; "" is the system's temporary
	// directory.
	SpoolDir string
}

// Fetcher opens an external artifact's URL, refusing every address that
// refused names (a reason, "" to allow), redirects and DNS answers
// included.
type Fetcher interface {
	Fetch(ctx context.Context, rawURL string, refused func(netip.Addr) string) (io.ReadCloser, error)
}

// Service keeps artifacts: rows in the store, bytes in the blob store.
type Service struct {
	store store.Store
	blob  Blob
	clock clock.Clock
	log   *slog.Logger
	maxUp int64
	quota int64
	grace time.Duration

	allowPrivate bool
	fetcher      Fetcher
	spoolDir     string
}

// New builds the service, filling in defaults.
func New(cfg Config) *Service {
	s := &Service{store: cfg.Store, blob: cfg.Blob, clock: cfg.Clock, log: cfg.Logger,
		maxUp: cfg.MaxUploadBytes, quota: cfg.QuotaBytes, grace: cfg.Grace, allowPrivate: cfg.AllowPrivate,
		fetcher: cfg.Fetcher, spoolDir: cfg.SpoolDir}
	if s.maxUp <= 0 {
		s.maxUp = DefaultMaxUploadBytes
	}
	if s.quota <= 0 {
		s.quota = DefaultQuotaBytes
	}
	if s.grace <= 0 {
		s.grace = DefaultGrace
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.spoolDir == "" {
		s.spoolDir = os.TempDir()
	}
	return s
}

// MaxUploadBytes is the relay upload limit.
func (s *Service) MaxUploadBytes() int64 { return s.maxUp }

// Grace is the time between a deletion and the removal of the bytes.
func (s *Service) Grace() time.Duration { return s.grace }

// CleanFilename turns a client's filename into a plain name: the last
// element of any path (either slash), without control characters, at most
// MaxFilenameBytes. "", ".", ".." and "/" become "".
func CleanFilename(name string) string {
	name = strings.ReplaceAll(name, `\`, "/")
	name = path.Base(strings.TrimRight(name, "/"))
	if name == "." || name == ".." || name == "/" {
		return ""
	}
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, name)
	for len(name) > MaxFilenameBytes {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	return strings.TrimSpace(name)
}

// UploadParams is one relay upload.
type UploadParams struct {
	AccountID string
	Filename  string // as the client sent it; cleaned here
	JobID     string // optional producing job, which must be the account's
	TaskID    string
	Kind      store.ArtifactKind // "" = upload
	Body      io.Reader
	// ContentLength is the declared size, -1 when unknown.
	ContentLength int64
}

func tooLarge(limit int64) *fault.Error {
	return fault.New(fault.KindTooLarge, "artifact_too_large",
		fmt.Sprintf("Upload at most %d bytes per artifact; split larger data into several artifacts.", limit),
		"the upload is over the %d-byte limit", limit).With("limit_bytes", limit)
}

// Upload streams the body to the blob store while hashing it, then, under
// the account's lock, checks the quota (content the account already holds
// costs nothing) and records the artifact. Whenever it fails nothing is
// kept: no row, no bytes, no quota.
func (s *Service) Upload(ctx context.Context, p *UploadParams) (*store.Artifact, error) {
	if p.ContentLength > s.maxUp {
		return nil, tooLarge(s.maxUp)
	}
	if p.JobID != "" {
		if _, err := s.store.JobGet(ctx, p.AccountID, p.JobID); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, fault.Invalid("artifact_job_not_found", "Name a job of your own account in X-Artifact-Job-Id, or leave the header out.",
					"job %q named in X-Artifact-Job-Id is not a job of this account", p.JobID).With("header", "X-Artifact-Job-Id")
			}
			return nil, err
		}
	}
	st, err := s.blob.Stage(ctx, p.Body, s.maxUp)
	if err != nil {
		switch {
		case errors.Is(err, ErrTooLarge):
			return nil, tooLarge(s.maxUp)
		case ctx.Err() != nil:
			return nil, fault.New(fault.KindBadRequest, "upload_incomplete", "Send the whole body again.",
				"the upload was interrupted").With("cause", ctx.Err().Error())
		}
		var fe *fault.Error
		if errors.As(err, &fe) {
			return nil, err
		}
		return nil, &fault.Error{Kind: fault.KindBadRequest, Code: "upload_incomplete",
			Action:  "Send the whole body again, with a Content-Length that matches it.",
			Message: "the upload body could not be read to its end", Cause: err}
	}
	abort := func() {
		if err := st.Abort(context.WithoutCancel(ctx)); err != nil {
			s.log.Warn("abort staged artifact", "err", err)
		}
	}
	res := st.Result()
	if p.ContentLength >= 0 && res.Size != p.ContentLength {
		abort()
		return nil, fault.New(fault.KindBadRequest, "upload_incomplete", "Send the whole body again, with a Content-Length that matches it.",
			"the body has %d bytes, its Content-Length says %d", res.Size, p.ContentLength)
	}
	now := s.clock.Now()
	var a *store.Artifact
	err = s.store.InTx(ctx, func(q store.Querier) error {
		if err := q.AccountLock(ctx, p.AccountID); err != nil {
			return err
		}
		counted, err := q.ArtifactContentCounted(ctx, p.AccountID, res.SHA256)
		if err != nil {
			return err
		}
		used, err := q.ArtifactQuotaUsed(ctx, p.AccountID)
		if err != nil {
			return err
		}
		if !counted && used+res.Size > s.quota {
			return fault.New(fault.KindQuotaExceeded, "artifact_quota_exceeded",
				"Delete artifacts you no longer need (DELETE /api/v1/artifacts/{id}), then upload again.",
				"storing %d more bytes would pass the account's artifact quota (%d of %d bytes used)", res.Size, used, s.quota).
				With("limit_bytes", s.quota).With("used_bytes", used).With("remaining_bytes", max(0, s.quota-used)).
				With("size", res.Size)
		}
		a, err = q.ArtifactCreate(ctx, &store.ArtifactCreateParams{ID: id.New(id.Artifact), AccountID: p.AccountID,
			SHA256: res.SHA256, SizeBytes: res.Size, Filename: CleanFilename(p.Filename), Source: store.ArtifactLocal,
			JobID: p.JobID, TaskID: p.TaskID, Kind: p.Kind, Now: now})
		return err
	})
	if err != nil {
		abort()
		return nil, err
	}
	// The row exists, so the sweeper will not delete this content; commit
	// puts it in place even if a sweep of an older row just removed it.
	if err := st.Commit(context.WithoutCancel(ctx)); err != nil {
		abort()
		if herr := s.store.ArtifactHide(context.WithoutCancel(ctx), p.AccountID, a.ID, now); herr != nil {
			s.log.Error("hide artifact whose bytes failed to commit", "artifact_id", a.ID, "err", herr)
		}
		return nil, fmt.Errorf("commit artifact bytes: %w", err)
	}
	return a, nil
}

// Quota is an account's retained bytes.
type Quota struct{ Limit, Used, Remaining int64 }

// QuotaOf reports the account's quota.
func (s *Service) QuotaOf(ctx context.Context, accountID string) (Quota, error) {
	used, err := s.store.ArtifactQuotaUsed(ctx, accountID)
	if err != nil {
		return Quota{}, err
	}
	return Quota{Limit: s.quota, Used: used, Remaining: max(0, s.quota-used)}, nil
}

// List pages the account's artifacts.
func (s *Service) List(ctx context.Context, accountID string, limit, offset int) ([]*store.Artifact, int, Quota, error) {
	as, total, err := s.store.ArtifactList(ctx, &store.ArtifactListParams{AccountID: accountID, Limit: limit, Offset: offset})
	if err != nil {
		return nil, 0, Quota{}, err
	}
	q, err := s.QuotaOf(ctx, accountID)
	return as, total, q, err
}

// Get finds a visible artifact of the account: its upload, or an output of
// one of its jobs. Anything else is not found.
func (s *Service) Get(ctx context.Context, accountID, artifactID string) (*store.Artifact, error) {
	a, err := s.store.ArtifactGet(ctx, accountID, artifactID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.NotFound("artifact", artifactID)
	}
	return a, err
}

// Open reads a local artifact's bytes from offset (length < 0: to the end).
func (s *Service) Open(ctx context.Context, a *store.Artifact, offset, length int64) (io.ReadCloser, error) {
	if a.Source != store.ArtifactLocal {
		return nil, fault.Conflict("artifact_external", "Read an external artifact from its url.",
			"artifact %s is external; its bytes are not kept here", a.ID).With("url", a.URL)
	}
	rc, err := s.blob.Open(ctx, a.SHA256, offset, length)
	if err != nil {
		return nil, fmt.Errorf("open artifact %s: %w", a.ID, err)
	}
	return rc, nil
}

// SignedURL returns a URL that reads the bytes straight from the object
// store, or "" when the blob store cannot make one.
func (s *Service) SignedURL(ctx context.Context, a *store.Artifact) (string, time.Time, error) {
	if a.Source != store.ArtifactLocal {
		return "", time.Time{}, nil
	}
	u, err := s.blob.SignedURL(ctx, a.SHA256, signedURLTTL)
	if errors.Is(err, ErrNoSignedURL) {
		return "", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, err
	}
	return u, s.clock.Now().Add(signedURLTTL), nil
}

// Delete hides an artifact at once and frees its quota; its bytes go after
// the grace (Sweep) unless other artifacts share them. An artifact that a
// job not yet terminal produces or consumes is in use (409).
func (s *Service) Delete(ctx context.Context, accountID, artifactID string) (time.Time, error) {
	now := s.clock.Now()
	err := s.store.ArtifactHide(ctx, accountID, artifactID, now)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return time.Time{}, fault.NotFound("artifact", artifactID)
	case errors.Is(err, store.ErrConflict):
		return time.Time{}, fault.Conflict("artifact_in_use",
			"Wait until the jobs that produce or consume it end, or cancel them, then delete again.",
			"artifact %s is used by a job that is not terminal", artifactID)
	case err != nil:
		return time.Time{}, err
	}
	return now.Add(s.grace), nil
}

// SweepGrace removes up to batch artifacts whose grace is over: the row,
// and the bytes when no other row holds them. It returns how many rows it
// removed.
func (s *Service) SweepGrace(ctx context.Context, batch int) (int, error) {
	due, err := s.store.ArtifactListHiddenBefore(ctx, s.clock.Now().Add(-s.grace), batch)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, a := range due {
		if err := s.store.ArtifactPurge(ctx, a.ID); err != nil {
			return n, err
		}
		n++
		if a.Source != store.ArtifactLocal {
			continue
		}
		held, err := s.store.ArtifactContentHeld(ctx, a.SHA256)
		if err != nil {
			return n, err
		}
		if !held {
			if err := s.blob.Delete(ctx, a.SHA256); err != nil {
				return n, fmt.Errorf("delete bytes of %s: %w", a.ID, err)
			}
		}
	}
	return n, nil
}

// OpenInput reads an artifact's bytes for a host: from the blob store, or,
// for an external artifact, from its URL.
func (s *Service) OpenInput(ctx context.Context, a *store.Artifact) (io.ReadCloser, error) {
	if a.Source == store.ArtifactLocal {
		return s.Open(ctx, a, 0, -1)
	}
	return s.fetchExternal(ctx, a)
}
