package datasrc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/netguard"
)

// permanentError is a failure that another try cannot fix (a 404, a
// digest that does not match, a refused address).
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func isPermanent(err error) bool {
	var perm *permanentError
	return errors.As(err, &perm)
}

func permanent(format string, args ...any) error {
	return &permanentError{fmt.Errorf(format, args...)}
}

// newClient is an HTTP client whose dialer checks every address it
// connects to, redirects and DNS answers included.
func newClient(allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: 30 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		if allowPrivate {
			return nil
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return err
		}
		if why := netguard.RefusedAddr(ap.Addr()); why != "" {
			return &permanentError{fmt.Errorf("refused: %s (the operator allows private sources with --data-source-allow-private)", why)}
		}
		return nil
	}}
	return &http.Client{
		Transport: &http.Transport{DialContext: dialer.DialContext, Proxy: http.ProxyFromEnvironment,
			TLSHandshakeTimeout: 30 * time.Second, ResponseHeaderTimeout: time.Minute},
		CheckRedirect: checkRedirect,
	}
}

// digestKey marks a request's context: the bytes it fetches are checked
// against a sha256 the user declared, so a redirect from https to plain
// http cannot swap them unnoticed.
type digestKey struct{}

func withDigest(ctx context.Context) context.Context {
	return context.WithValue(ctx, digestKey{}, true)
}

// checkRedirect follows at most 10 redirects to http(s). One from https to
// plain http is refused unless the download's sha256 is declared and
// checked (a network in between could otherwise answer anything), and it
// never carries a token in the clear.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("too many redirects")
	}
	if req.URL.Scheme != "https" && req.URL.Scheme != "http" {
		return permanent("redirect to scheme %q refused", req.URL.Scheme)
	}
	if req.URL.Scheme == "http" && via[0].URL.Scheme == "https" {
		if checked, _ := req.Context().Value(digestKey{}).(bool); !checked {
			return permanent("redirect from https to plain http (%s) refused: only a download whose sha256 is declared may be served over http", req.URL.Host)
		}
		req.Header.Del("Authorization")
	}
	return nil
}

// fetchURL downloads a url source to data and checks its sha256.
func (c *Cache) fetchURL(ctx context.Context, ds agentproto.DataSource, partial, data string) error {
	if ds.SHA256 != "" {
		ctx = withDigest(ctx)
	}
	// A url source declares no size: it may be as large as the cache,
	// when the cache has a cap.
	limit := int64(-1)
	if c.cfg.MaxBytes > 0 {
		limit = c.cfg.MaxBytes
	}
	if err := c.download(ctx, ds.URI, "", partial, limit); err != nil {
		return fmt.Errorf("download %s: %w", redact(ds.URI), err)
	}
	if ds.SHA256 != "" {
		got, err := fileSHA256(partial)
		if err != nil {
			return err
		}
		if got != ds.SHA256 {
			_ = os.Remove(partial)
			return permanent("download %s: sha256 is %s, the manifest says %s; fix data_sources[].sha256 or the file at the URL", redact(ds.URI), got, ds.SHA256)
		}
	}
	return os.Rename(partial, data)
}

// download fetches url into dst, trying up to Tries times with backoff
// and resuming from what an earlier try (or an earlier run of the host)
// left in dst. token, when set, goes as a bearer token. limit, unless
// negative, is the size the file may have (its declared size): a server that
// sends more is cut off there and the download fails for good.
func (c *Cache) download(ctx context.Context, url, token, dst string, limit int64) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	var err error
	for try := 1; ; try++ {
		if err = c.downloadOnce(ctx, url, token, dst, limit); err == nil {
			return nil
		}
		if isPermanent(err) || ctx.Err() != nil || try >= c.cfg.Tries {
			break
		}
		wait := c.backoff(try)
		c.log.Warn("data source download failed; retrying", "host", hostOf(url), "try", try, "wait_s", wait.Seconds(), "err", err)
		if err := sleepCtx(ctx, wait); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if isPermanent(err) {
		return err
	}
	return fmt.Errorf("%w (after %d tries)", err, c.cfg.Tries)
}

// backoff is the wait after the try-th failure: doubling from MinBackoff,
// capped at MaxBackoff, drawn from its upper half so that hosts do not
// retry in step.
func (c *Cache) backoff(try int) time.Duration {
	d := c.cfg.MinBackoff
	for i := 1; i < try && d < c.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.cfg.MaxBackoff)
	return d/2 + rand.N(d/2+1)
}

// downloadOnce makes one request, appending to dst from its current size
// when the server honours the range, starting over otherwise.
func (c *Cache) downloadOnce(ctx context.Context, url, token, dst string, limit int64) error {
	var offset int64
	if info, err := os.Stat(dst); err == nil {
		offset = info.Size()
	}
	if limit >= 0 && offset > limit {
		_ = os.Remove(dst) // not a prefix of anything this size
		offset = 0
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return permanent("%v", err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if offset > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(offset, 10)+"-")
	}
	// A server that stops sending without closing would hold the task
	// forever: the answer and then each read must come within
	// IdleTimeout.
	idle := time.AfterFunc(c.cfg.IdleTimeout, func() {
		cancel(fmt.Errorf("%s sent nothing for %s", hostOf(url), c.cfg.IdleTimeout))
	})
	defer idle.Stop()
	resp, err := c.client.Do(req)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return cause
		}
		return err
	}
	defer resp.Body.Close()
	flags := os.O_WRONLY | os.O_CREATE
	switch {
	case resp.StatusCode == http.StatusPartialContent && offset > 0 && rangeStart(resp) == offset:
		flags |= os.O_APPEND
	case resp.StatusCode == http.StatusOK:
		flags |= os.O_TRUNC
		offset = 0
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		// What we hold is not a prefix the server knows: start over.
		_ = os.Remove(dst)
		return fmt.Errorf("%s answered 416 to a resume; starting over", hostOf(url))
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return fmt.Errorf("%s answered %d", hostOf(url), resp.StatusCode)
	default:
		return permanent("%s answered %d", hostOf(url), resp.StatusCode)
	}
	if c.cfg.MaxBytes > 0 && resp.ContentLength > c.cfg.MaxBytes {
		return permanent("%s is %d bytes, more than the host's data source cache (%d bytes)", hostOf(url), resp.ContentLength, c.cfg.MaxBytes)
	}
	if limit >= 0 && resp.ContentLength > limit-offset {
		return permanent("%s sends %d bytes from offset %d, more than the %d bytes declared", hostOf(url), resp.ContentLength, offset, limit)
	}
	f, err := os.OpenFile(dst, flags, 0o644)
	if err != nil {
		return err
	}
	var body io.Reader = &idleReader{r: resp.Body, t: idle, d: c.cfg.IdleTimeout}
	if limit >= 0 {
		// One byte past the declared size tells a server that sends
		// more (no Content-Length, or a lying one) from one that does not.
		body = io.LimitReader(body, limit-offset+1)
	}
	n, copyErr := io.Copy(f, body)
	if limit >= 0 && offset+n > limit {
		f.Close()
		_ = os.Remove(dst)
		return permanent("%s sent more than the %d bytes declared; the download was stopped there", hostOf(url), limit)
	}
	if err := f.Close(); err != nil && copyErr == nil {
		copyErr = err
	}
	if copyErr != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return cause
		}
		return fmt.Errorf("read from %s after %d bytes: %w", hostOf(url), offset+n, copyErr)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return fmt.Errorf("%s sent %d of %d bytes", hostOf(url), n, resp.ContentLength)
	}
	return nil
}

// idleReader pushes its timer back on every read that returns data.
type idleReader struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.t.Reset(r.d)
	}
	return n, err
}

// rangeStart is the first byte of a 206 answer's Content-Range, or -1.
func rangeStart(resp *http.Response) int64 {
	v, ok := strings.CutPrefix(resp.Header.Get("Content-Range"), "bytes ")
	if !ok {
		return -1
	}
	start, _, _ := strings.Cut(v, "-")
	n, err := strconv.ParseInt(start, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hostOf is the host of a URL, for messages and logs that must not carry
// a query string's secrets.
func hostOf(raw string) string {
	rest, ok := strings.CutPrefix(raw, "https://")
	if !ok {
		rest, _ = strings.CutPrefix(raw, "http://")
	}
	host, _, _ := strings.Cut(rest, "/")
	return host
}

// redact is a URL without its query, which may hold a signature.
func redact(raw string) string {
	u, _, _ := strings.Cut(raw, "?")
	return u
}
