package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/skiffhq/skiff/apiv1"
)

// BodyRate is the least pace a request body must keep (slow-loris
// uploads): every Window must bring at least MinBytesPerSecond*Window
// bytes, the first Window being the grace a client gets to start. A body
// that falls behind is cut off with 408 body_too_slow. A slow but steady
// upload of any size passes; a client that trickles a byte now and then
// to hold a connection and a handler does not.
type BodyRate struct {
	// MinBytesPerSecond is the pace; 0 turns the rule off.
	MinBytesPerSecond int64
	// Window is the span each share of the pace is measured over.
	Window time.Duration
}

// DefaultBodyRate is the rule of a server that sets none: 1 KiB/s over
// 30 s windows, so a body must bring 30 KiB every 30 s.
var DefaultBodyRate = BodyRate{MinBytesPerSecond: 1024, Window: 30 * time.Second}

// MinBodyRate applies r to the bodies of next's requests. Requests without
// a body (GET, event streams) are untouched, and a body's rule ends at its
// end: a host's lease long-poll, which waits after reading its small body,
// is not cut. The rule works through the connection's read deadline (wall
// clock, as the kernel keeps it), so that a stalled read returns instead
// of blocking a handler.
func MinBodyRate(r BodyRate, log *slog.Logger, next http.Handler) http.Handler {
	if r.MinBytesPerSecond <= 0 || r.Window <= 0 {
		return next
	}
	need := r.MinBytesPerSecond * int64(r.Window/time.Second)
	if need <= 0 {
		need = r.MinBytesPerSecond
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Body == nil || req.Body == http.NoBody || req.ContentLength == 0 {
			next.ServeHTTP(w, req)
			return
		}
		cw := &cutWriter{ResponseWriter: w}
		body := &paceReader{body: req.Body, rc: http.NewResponseController(w), w: cw, need: need, window: r.Window,
			log: log, path: req.URL.Path}
		req.Body = body
		defer body.stop()
		next.ServeHTTP(cw, req)
	})
}

// errBodyTooSlow is what a handler's body read returns once the body fell
// behind; the 408 is already written by then.
var errBodyTooSlow = errors.New("request body arrived slower than the server's minimum rate")

// paceReader checks the pace of one body.
type paceReader struct {
	body   io.ReadCloser
	rc     *http.ResponseController
	w      *cutWriter
	need   int64
	window time.Duration
	log    *slog.Logger
	path   string

	armed bool  // a deadline is set on the connection
	got   int64 // bytes in the current window
	err   error // sticky: errBodyTooSlow once cut
}

func (b *paceReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if !b.armed {
		b.arm()
	}
	n, err := b.body.Read(p)
	b.got += int64(n)
	if b.got >= b.need && err == nil {
		b.got = 0
		b.arm() // the window's share arrived: the next window starts now
	}
	switch {
	case errors.Is(err, io.EOF):
		b.stop()
	case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
		b.err = errBodyTooSlow
		b.cut()
		return n, b.err
	}
	return n, err
}

func (b *paceReader) Close() error { return b.body.Close() }

func (b *paceReader) arm() {
	if err := b.rc.SetReadDeadline(time.Now().Add(b.window)); err == nil {
		b.armed = true
	}
}

// stop clears the deadline at the body's end (and when the handler
// returns), so that nothing after the body is read under it: the server's
// own read that notices a client going away, or the next request.
func (b *paceReader) stop() {
	if b.armed {
		_ = b.rc.SetReadDeadline(time.Time{})
		b.armed = false
	}
}

// cut answers 408 with the envelope unless the handler already answered,
// and makes the handler's own answer (to the read error) go nowhere.
func (b *paceReader) cut() {
	b.armed = false // the deadline passed; the connection closes after this request
	b.log.Info("request body too slow: cut off", "path", b.path, "min_bytes_per_window", b.need,
		"window", b.window.String(), "request_id", b.w.Header().Get("X-Request-Id"))
	if b.w.wrote {
		b.w.cutOff = true
		return
	}
	h := b.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Connection", "close")
	b.w.ResponseWriter.WriteHeader(http.StatusRequestTimeout)
	_ = json.NewEncoder(b.w.ResponseWriter).Encode(apiv1.Error{Code: "body_too_slow",
		Error:             fmt.Sprintf("the request body arrived slower than %d bytes per %s", b.need, b.window),
		RecommendedAction: fmt.Sprintf("Send the body without pauses (at least %d bytes every %s), then retry.", b.need, b.window),
		RequestID:         h.Get("X-Request-Id")})
	b.w.wrote, b.w.cutOff = true, true
}

// cutWriter lets a body's cut-off answer first: once cut, what the handler
// writes is dropped.
type cutWriter struct {
	http.ResponseWriter
	wrote  bool
	cutOff bool
}

func (w *cutWriter) WriteHeader(code int) {
	if w.cutOff {
		return
	}
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *cutWriter) Write(p []byte) (int, error) {
	if w.cutOff {
		return len(p), nil
	}
	w.wrote = true
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *cutWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
