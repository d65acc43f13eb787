package tarball

import (
	"context"
	"errors"
	"io"
)

// errOverLimit is what the metered reader returns once the stream has given
// more bytes than allowed; the extractor recognises it through the reader's
// state, not by identity, because archive/tar may wrap it.
var errOverLimit = errors.New("decompressed size limit exceeded")

// meteredReader sits between the gzip decompressor and the tar reader. It
// counts the bytes really produced by decompression, so a gzip bomb is
// stopped however its headers lie; it notices cancellation between reads;
// and it remembers the first error of the decompressor itself, which is how
// a corrupt gzip stream (HTTP 400) is told apart from a gzip stream that
// holds no valid tar (HTTP 422).
type meteredReader struct {
	ctx context.Context
	r   io.Reader
	n   int64
	max int64

	overLimit bool
	srcErr    error
}

func (m *meteredReader) Read(p []byte) (int, error) {
	if err := m.ctx.Err(); err != nil {
		return 0, err
	}
	if m.overLimit {
		return 0, errOverLimit
	}
	// Allow one byte past the limit so that a stream of exactly max bytes
	// is accepted and one byte more is not.
	if room := m.max - m.n + 1; int64(len(p)) > room {
		p = p[:room]
	}
	k, err := m.r.Read(p)
	m.n += int64(k)
	if err != nil && !errors.Is(err, io.EOF) && m.srcErr == nil {
		m.srcErr = err
	}
	if m.n > m.max {
		m.overLimit = true
		return 0, errOverLimit
	}
	return k, err
}
