package build

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// DefaultLogTailBytes is the size of the log tail a push record keeps.
const DefaultLogTailBytes = 16 << 10

// TailWriter keeps the last Max bytes written to it, so a build log of any
// length can be summarised in a bounded log_tail. It is safe for concurrent
// use and never fails a write.
type TailWriter struct {
	mu        sync.Mutex
	max       int
	buf       []byte
	truncated bool
}

// NewTailWriter returns a TailWriter that keeps the last max bytes
// (DefaultLogTailBytes when max <= 0).
func NewTailWriter(max int) *TailWriter {
	if max <= 0 {
		max = DefaultLogTailBytes
	}
	return &TailWriter{max: max, buf: make([]byte, 0, max)}
}

func (w *TailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	if len(p) >= w.max {
		w.truncated = w.truncated || len(w.buf) > 0 || len(p) > w.max
		w.buf = append(w.buf[:0], p[len(p)-w.max:]...)
		return n, nil
	}
	if over := len(w.buf) + len(p) - w.max; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
		w.truncated = true
	}
	w.buf = append(w.buf, p...)
	return n, nil
}

// String returns the tail as valid UTF-8. When older output was dropped, the
// partial first line is dropped too, so the tail starts at a line.
func (w *TailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.buf
	if w.truncated {
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// safeWriter passes writes on to w but never reports a failure: a log reader
// that went away must not stall buildah, whose output pipe would fill up if
// os/exec stopped copying it.
type safeWriter struct{ w io.Writer }

func (s safeWriter) Write(p []byte) (int, error) {
	if s.w != nil {
		_, _ = s.w.Write(p)
	}
	return len(p), nil
}
