package artifact

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/store"
)

// ExternalIdleTimeout is how long a download of an external artifact for
// a user waits for the next bytes from its URL: what a host's input fetch
// waits (agent.InputIdleTimeout).
const ExternalIdleTimeout = 2 * time.Minute

// Spooled is an external artifact's content, fetched whole into an
// unlinked temporary file and checked: its size and sha256 are known
// before the first byte reaches the user, so a digest that does not match
// or a body over the limit is refused with an error, never half sent.
type Spooled struct {
	f      *os.File
	Size   int64
	SHA256 string
}

// Section reads length bytes from offset.
func (s *Spooled) Section(offset, length int64) io.Reader {
	return io.NewSectionReader(s.f, offset, length)
}

// Close frees the file (its name is already gone).
func (s *Spooled) Close() error { return s.f.Close() }

func externalFailed(a *store.Artifact, format string, args ...any) *fault.Error {
	return fault.New(fault.KindBadGateway, "external_fetch_failed",
		"Check that the artifact's url answers 200 to a plain GET from the service, on a public address; register it again with a working url if it moved.",
		format, args...).With("url", a.URL)
}

// FetchExternal fetches an external artifact for a user's download, with
// the rules a host's input fetch has: the same fetcher and address checks
// (every address, redirects and DNS answers included), at most the relay
// upload limit (an external artifact may be no larger than an uploaded
// one), and its sha256 when it was registered with one. Failures are 502
// faults that say which rule the URL broke.
func (s *Service) FetchExternal(ctx context.Context, a *store.Artifact) (*Spooled, error) {
	if a.Source == store.ArtifactLocal {
		return nil, fmt.Errorf("fetch external artifact %s: it is local", a.ID)
	}
	if s.fetcher == nil {
		return nil, fault.New(fault.KindUnavailable, "external_fetch_unavailable",
			"Ask the operator: this controller cannot fetch external URLs.",
			"this controller has no fetcher for external artifacts")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(ExternalIdleTimeout, func() {
		cancel(fmt.Errorf("nothing received for %s", ExternalIdleTimeout))
	})
	defer idle.Stop()
	rc, err := s.fetcher.Fetch(ctx, a.URL, s.refusedAddr)
	if err != nil {
		return nil, externalFailed(a, "fetching external artifact %s failed: %v", a.ID, causeOf(ctx, err))
	}
	defer rc.Close()

	f, err := os.CreateTemp(s.spoolDir, "external-*")
	if err != nil {
		return nil, fmt.Errorf("spool external artifact %s: %w", a.ID, err)
	}
	// Unlinked at once: the bytes go when the file is closed, whatever
	// happens to this process.
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("spool external artifact %s: %w", a.ID, err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), LimitReader(ctx, idleReader{rc, idle}, s.maxUp))
	if err != nil {
		f.Close()
		if errors.Is(err, ErrTooLarge) {
			return nil, fault.New(fault.KindBadGateway, "external_artifact_too_large",
				fmt.Sprintf("Keep external artifacts to at most %d bytes (the upload limit), or split the data into several artifacts.", s.maxUp),
				"external artifact %s sends more than the %d-byte limit", a.ID, s.maxUp).
				With("url", a.URL).With("limit_bytes", s.maxUp)
		}
		if ctx.Err() == nil || context.Cause(ctx) != ctx.Err() {
			// The URL failed (or went idle), not the user's request.
			return nil, externalFailed(a, "fetching external artifact %s failed: %v", a.ID, causeOf(ctx, err))
		}
		return nil, fmt.Errorf("spool external artifact %s: %w", a.ID, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if a.SHA256 != "" && sum != a.SHA256 {
		f.Close()
		return nil, fault.New(fault.KindBadGateway, "external_digest_mismatch",
			"The url now serves other bytes than the sha256 registered with it: register the artifact again with the right url or sha256.",
			"external artifact %s: its url served content with sha256 %s, not the registered %s", a.ID, sum, a.SHA256).
			With("url", a.URL).With("sha256", a.SHA256).With("fetched_sha256", sum).With("fetched_size", n)
	}
	return &Spooled{f: f, Size: n, SHA256: sum}, nil
}

// causeOf prefers the reason ctx was cancelled (the idle timer's) over
// the read error it caused.
func causeOf(ctx context.Context, err error) error {
	if c := context.Cause(ctx); c != nil && c != ctx.Err() {
		return c
	}
	return err
}

// idleReader pushes the idle deadline back on every read that brings
// bytes.
type idleReader struct {
	r     io.Reader
	timer *time.Timer
}

func (x idleReader) Read(p []byte) (int, error) {
	n, err := x.r.Read(p)
	if n > 0 {
		x.timer.Reset(ExternalIdleTimeout)
	}
	return n, err
}
