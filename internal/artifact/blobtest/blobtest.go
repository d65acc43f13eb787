// Package blobtest is the conformance suite every artifact.Blob passes.
package blobtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/artifact"
)

// Harness opens a fresh, empty store for one test. Leftovers, when set,
// lists whatever the store keeps besides committed content (temporary
// files, pending uploads), so the suite can check failed puts leave none.
type Harness struct {
	Open      func(t *testing.T) artifact.Blob
	Leftovers func(t *testing.T, b artifact.Blob) []string
	// SignsURLs: SignedURL must return a URL that a plain GET reads.
	SignsURLs bool
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// failingReader yields data then fails, as a client that hangs up does.
type failingReader struct {
	r   io.Reader
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	ctx := context.Background()
	noLeftovers := func(t *testing.T, b artifact.Blob) {
		t.Helper()
		if h.Leftovers == nil {
			return
		}
		if l := h.Leftovers(t, b); len(l) > 0 {
			t.Errorf("got leftovers %v after a failed put, want none", l)
		}
	}
	readAll := func(t *testing.T, b artifact.Blob, sha string, off, n int64) []byte {
		t.Helper()
		rc, err := b.Open(ctx, sha, off, n)
		if err != nil {
			t.Fatalf("open %s [%d,+%d): %v", sha, off, n, err)
		}
		defer rc.Close()
		got, err := io.ReadAll(rc)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		return got
	}

	t.Run("put_get_roundtrip", func(t *testing.T) {
		b := h.Open(t)
		data := bytes.Repeat([]byte("skiff artifact\n"), 70001) // > 1 MiB, several chunks
		res, err := artifact.Put(ctx, b, bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("put: %v", err)
		}
		if res.SHA256 != digest(data) || res.Size != int64(len(data)) {
			t.Fatalf("got %+v, want sha %s size %d", res, digest(data), len(data))
		}
		if got := readAll(t, b, res.SHA256, 0, -1); !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes that differ from the %d put", len(got), len(data))
		}
		info, err := b.Stat(ctx, res.SHA256)
		if err != nil || info.Size != int64(len(data)) {
			t.Fatalf("stat: got %+v, %v; want size %d", info, err, len(data))
		}
	})
	t.Run("ranges", func(t *testing.T) {
		b := h.Open(t)
		data := []byte("0123456789abcdef")
		res, err := artifact.Put(ctx, b, bytes.NewReader(data), 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			off, n int64
			want   string
		}{{0, 4, "0123"}, {10, -1, "abcdef"}, {15, 1, "f"}, {3, 5, "34567"}} {
			if got := string(readAll(t, b, res.SHA256, c.off, c.n)); got != c.want {
				t.Errorf("range %d,+%d: got %q, want %q", c.off, c.n, got, c.want)
			}
		}
	})
	t.Run("empty_content", func(t *testing.T) {
		b := h.Open(t)
		res, err := artifact.Put(ctx, b, strings.NewReader(""), 10)
		if err != nil {
			t.Fatal(err)
		}
		if res.Size != 0 || res.SHA256 != digest(nil) {
			t.Fatalf("got %+v, want the empty digest", res)
		}
		if got := readAll(t, b, res.SHA256, 0, -1); len(got) != 0 {
			t.Fatalf("got %d bytes, want 0", len(got))
		}
	})
	t.Run("same_content_twice_is_one_blob", func(t *testing.T) {
		b := h.Open(t)
		data := []byte("twice")
		r1, err := artifact.Put(ctx, b, bytes.NewReader(data), 10)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := artifact.Put(ctx, b, bytes.NewReader(data), 10)
		if err != nil {
			t.Fatal(err)
		}
		if r1 != r2 {
			t.Fatalf("got %+v then %+v, want the same", r1, r2)
		}
		if err := b.Delete(ctx, r1.SHA256); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Stat(ctx, r1.SHA256); !errors.Is(err, artifact.ErrNotFound) {
			t.Fatalf("stat after delete: got %v, want ErrNotFound", err)
		}
	})
	t.Run("over_limit_leaves_nothing", func(t *testing.T) {
		b := h.Open(t)
		data := bytes.Repeat([]byte("x"), 1<<20+1)
		_, err := artifact.Put(ctx, b, bytes.NewReader(data), 1<<20)
		if !errors.Is(err, artifact.ErrTooLarge) {
			t.Fatalf("got %v, want ErrTooLarge", err)
		}
		if _, err := b.Stat(ctx, digest(data)); !errors.Is(err, artifact.ErrNotFound) {
			t.Errorf("stat: got %v, want ErrNotFound", err)
		}
		if _, err := b.Stat(ctx, digest(data[:1<<20])); !errors.Is(err, artifact.ErrNotFound) {
			t.Errorf("stat of the prefix: got %v, want ErrNotFound", err)
		}
		noLeftovers(t, b)
		// Exactly at the limit is fine.
		if _, err := artifact.Put(ctx, b, bytes.NewReader(data[:1<<20]), 1<<20); err != nil {
			t.Fatalf("put at the limit: %v", err)
		}
	})
	t.Run("failed_reader_leaves_nothing", func(t *testing.T) {
		b := h.Open(t)
		data := bytes.Repeat([]byte("y"), 300000)
		boom := errors.New("client went away")
		_, err := artifact.Put(ctx, b, &failingReader{r: bytes.NewReader(data), err: boom}, 1<<30)
		if !errors.Is(err, boom) {
			t.Fatalf("got %v, want the reader's error", err)
		}
		if _, err := b.Stat(ctx, digest(data)); !errors.Is(err, artifact.ErrNotFound) {
			t.Errorf("stat: got %v, want ErrNotFound", err)
		}
		noLeftovers(t, b)
	})
	t.Run("cancelled_context_leaves_nothing", func(t *testing.T) {
		b := h.Open(t)
		cctx, cancel := context.WithCancel(ctx)
		pr, pw := io.Pipe()
		go func() {
			_, _ = pw.Write(bytes.Repeat([]byte("z"), 64<<10))
			cancel()
			_, _ = pw.Write(bytes.Repeat([]byte("z"), 64<<10))
			pw.Close()
		}()
		if _, err := artifact.Put(cctx, b, pr, 1<<30); err == nil {
			t.Fatal("put with a cancelled context succeeded, want an error")
		}
		pr.Close()
		noLeftovers(t, b)
	})
	t.Run("abort_leaves_nothing", func(t *testing.T) {
		b := h.Open(t)
		data := []byte("staged then refused")
		st, err := b.Stage(ctx, bytes.NewReader(data), 100)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Result(); got.SHA256 != digest(data) || got.Size != int64(len(data)) {
			t.Fatalf("staged: got %+v, want sha %s size %d", got, digest(data), len(data))
		}
		if _, err := b.Stat(ctx, digest(data)); !errors.Is(err, artifact.ErrNotFound) {
			t.Errorf("stat before commit: got %v, want ErrNotFound", err)
		}
		if err := st.Abort(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Stat(ctx, digest(data)); !errors.Is(err, artifact.ErrNotFound) {
			t.Errorf("stat after abort: got %v, want ErrNotFound", err)
		}
		noLeftovers(t, b)
	})
	t.Run("absent_and_malformed", func(t *testing.T) {
		b := h.Open(t)
		absent := digest([]byte("never stored"))
		if _, err := b.Open(ctx, absent, 0, -1); !errors.Is(err, artifact.ErrNotFound) {
			t.Errorf("open absent: got %v, want ErrNotFound", err)
		}
		if _, err := b.Stat(ctx, absent); !errors.Is(err, artifact.ErrNotFound) {
			t.Errorf("stat absent: got %v, want ErrNotFound", err)
		}
		if err := b.Delete(ctx, absent); err != nil {
			t.Errorf("delete absent: got %v, want nil", err)
		}
		for _, bad := range []string{"", "../../etc/passwd", strings.Repeat("A", 64), strings.Repeat("a", 63)} {
			if _, err := b.Open(ctx, bad, 0, -1); !errors.Is(err, artifact.ErrBadDigest) {
				t.Errorf("open %q: got %v, want ErrBadDigest", bad, err)
			}
			if err := b.Delete(ctx, bad); !errors.Is(err, artifact.ErrBadDigest) {
				t.Errorf("delete %q: got %v, want ErrBadDigest", bad, err)
			}
		}
	})
	t.Run("commit_restores_deleted_content", func(t *testing.T) {
		// A sweeper may delete content between a row's insert and the
		// commit that follows it; the commit must put it back.
		b := h.Open(t)
		data := []byte("held by a new row")
		if _, err := artifact.Put(ctx, b, bytes.NewReader(data), 100); err != nil {
			t.Fatal(err)
		}
		st, err := b.Stage(ctx, bytes.NewReader(data), 100)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Delete(ctx, digest(data)); err != nil {
			t.Fatal(err)
		}
		if err := st.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, b, digest(data), 0, -1); !bytes.Equal(got, data) {
			t.Fatalf("got %q, want %q", got, data)
		}
		noLeftovers(t, b)
	})
	t.Run("signed_url", func(t *testing.T) {
		b := h.Open(t)
		res, err := artifact.Put(ctx, b, strings.NewReader("signed"), 10)
		if err != nil {
			t.Fatal(err)
		}
		u, err := b.SignedURL(ctx, res.SHA256, time.Minute)
		if !h.SignsURLs {
			if !errors.Is(err, artifact.ErrNoSignedURL) {
				t.Fatalf("got %q, %v; want ErrNoSignedURL", u, err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(got) != "signed" {
			t.Fatalf("GET signed URL: got %d %q, want 200 \"signed\"", resp.StatusCode, got)
		}
	})
}
