package tarball

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
)

// bomb streams a gzip tarball from a generator instead of memory: write
// receives a tar writer and produces the archive, and produced counts the
// uncompressed bytes handed to gzip, so a test can prove Extract stopped
// early instead of decompressing everything.
type bomb struct {
	r        *io.PipeReader
	produced atomic.Int64
	done     chan struct{}
}

func newBomb(write func(tw *tar.Writer, w io.Writer) error) *bomb {
	pr, pw := io.Pipe()
	b := &bomb{r: pr, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		zw, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
		counted := &countingWriter{w: zw, n: &b.produced}
		tw := tar.NewWriter(counted)
		err := write(tw, counted)
		if err == nil {
			err = tw.Close()
		}
		if err == nil {
			err = zw.Close()
		}
		pw.CloseWithError(err)
	}()
	return b
}

// stop ends the generator; Extract stops reading before the end.
func (b *bomb) stop() {
	b.r.CloseWithError(errors.New("reader finished"))
	<-b.done
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// zeros writes n zero bytes in small chunks, stopping at the first error.
func zeros(w io.Writer, n int64) error {
	chunk := make([]byte, 64<<10)
	for n > 0 {
		k := min(n, int64(len(chunk)))
		if _, err := w.Write(chunk[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

func TestExtractGzipBomb(t *testing.T) {
	t.Parallel()
	const (
		declared = 2 << 30 // 2 GiB of zeros, about 2 MiB compressed
		limit    = 1 << 20
		// The generator may run ahead of the reader by what gzip and the
		// pipe buffer; anything near the declared size means Extract read
		// the bomb instead of stopping.
		maxProduced = 16 << 20
	)
	tests := []struct {
		name  string
		write func(tw *tar.Writer, w io.Writer) error
		path  string
		msg   string
	}{
		{
			name: "file declared at 2 GiB",
			write: func(tw *tar.Writer, _ io.Writer) error {
				if err := tw.WriteHeader(&tar.Header{Name: "zeros", Typeflag: tar.TypeReg, Mode: 0o644, Size: declared}); err != nil {
					return err
				}
				return zeros(tw, declared)
			},
			path: "zeros", msg: "files total more than 1 MiB",
		},
		{
			// The entry is refused for its path before its size is looked
			// at, so only counting the bytes the tar reader skips stops it.
			name: "refused entry with 2 GiB of data",
			write: func(tw *tar.Writer, _ io.Writer) error {
				if err := tw.WriteHeader(&tar.Header{Name: "/abs/zeros", Typeflag: tar.TypeReg, Mode: 0o644, Size: declared}); err != nil {
					return err
				}
				return zeros(tw, declared)
			},
			msg: "decompresses to more than 1 MiB",
		},
		{
			// Bytes after the tar end marker are never in any header.
			name: "2 GiB hidden after the archive",
			write: func(tw *tar.Writer, w io.Writer) error {
				if err := tw.WriteHeader(&tar.Header{Name: "a", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}); err != nil {
					return err
				}
				if _, err := tw.Write([]byte("a")); err != nil {
					return err
				}
				if err := tw.Close(); err != nil {
					return err
				}
				return zeros(w, declared)
			},
			msg: "decompresses to more than 1 MiB",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			b := newBomb(tt.write)
			_, err := Extract(context.Background(), b.r, f.dst, Limits{MaxBytes: limit})
			b.stop()
			te := asError(t, err)
			if te.Kind != KindInvalid || !hasProblem(te, tt.path, tt.msg) {
				t.Errorf("got %v %q, want an invalid error for %q containing %q", te.Kind, te.Details(), tt.path, tt.msg)
			}
			if got := b.produced.Load(); got > maxProduced {
				t.Errorf("generator produced %d bytes, want at most %d: Extract read far past the limit", got, maxProduced)
			}
			f.assertOutsideUntouched(t)
		})
	}
}

func TestMeteredReaderLimitIsExact(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		size    int
		wantErr bool
	}{{1000, false}, {1001, true}} {
		m := &meteredReader{ctx: context.Background(), r: io.LimitReader(zeroReader{}, int64(tt.size)), max: 1000}
		n, err := io.Copy(io.Discard, m)
		if gotErr := err != nil; gotErr != tt.wantErr || (gotErr && !m.overLimit) {
			t.Errorf("%d bytes with a 1000-byte limit: got n=%d err=%v, want error %v", tt.size, n, err, tt.wantErr)
		}
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
