package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/event"
	"github.com/skiffhq/skiff/internal/fault"
)

// StreamConfig configures the server-sent event streams (docs/streams.md):
// the engine's part (event.StreamsConfig) and the HTTP side's.
type StreamConfig struct {
	// Broker wakes streams when events commit; nil answers every stream
	// 503.
	Broker *event.Broker
	// Timeout is a stream's life; it then sends a timeout frame and ends.
	// Default (event's) 1 hour.
	Timeout time.Duration
	// PingInterval is how often an idle stream sends a ping frame. Default
	// (event's) 15 s.
	PingInterval time.Duration
	// PerAccount caps the streams one account holds open; one more gets
	// 429 with Retry-After. Default 100.
	PerAccount int
	// ReplayLimit is the most events a resume replays: a client that
	// missed more gets a fresh snapshot (resync gap_too_large). Default
	// (event's) 10,000.
	ReplayLimit int
	// WriteTimeout bounds the write of one frame: a client that does not
	// read is dropped. Default 10 s.
	WriteTimeout time.Duration
}

// fill fills in the HTTP side's defaults; the engine fills its own.
func (c *StreamConfig) fill() {
	if c.PerAccount <= 0 {
		c.PerAccount = 100
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 10 * time.Second
	}
}

// streamRetryAfter is the Retry-After of a 429 for too many streams.
const streamRetryAfter = 5

// acquireStream holds one of the account's open-stream slots.
func (s *Server) acquireStream(w http.ResponseWriter, accountID string, limit int) (func(), error) {
	release, ok := s.streamCaps.acquire(accountID, limit)
	if !ok {
		w.Header().Set("Retry-After", strconv.Itoa(streamRetryAfter))
		return nil, fault.New(fault.KindRateLimited, "too_many_streams",
			fmt.Sprintf("Close one of your open streams, or watch several jobs on one GET /api/v1/jobs/watch stream; retry after %d s.", streamRetryAfter),
			"this account already holds %d open streams, the most allowed", limit).With("limit", limit)
	}
	return release, nil
}

// lastEventID reads where a client resumes: the Last-Event-ID header (what
// EventSource sends on reconnect), or the last_event_id query parameter
// for clients that cannot set headers. ok is false when neither is sent;
// valid is false when the value is not a position (a non-negative decimal
// integer).
func lastEventID(r *http.Request) (pos int64, ok, valid bool) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("last_event_id")
	}
	if v = strings.TrimSpace(v); v == "" {
		return 0, false, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, true, false
	}
	return n, true, true
}

// sseWriter writes frames of one stream: the engine's event.Sink over an
// HTTP response.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	// held, when set, collects frames instead of writing them; Release
	// writes them (see event.Sink).
	held *strings.Builder
}

// errHead ends a HEAD request of a stream once its headers are written.
var errHead = errors.New("HEAD of a stream")

// startSSE answers 200 with an event stream and a reconnection delay of 1 s.
func startSSE(w http.ResponseWriter, r *http.Request, timeout time.Duration) (*sseWriter, error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil, errHead
	}
	s := &sseWriter{w: w, rc: http.NewResponseController(w), timeout: timeout}
	return s, s.raw("retry: 1000\n\n")
}

var _ event.Sink = (*sseWriter)(nil)

// Hold makes frames collect in memory until Release.
func (s *sseWriter) Hold() { s.held = &strings.Builder{} }

// Release writes the frames collected since Hold, in one write.
func (s *sseWriter) Release() error {
	text := s.held.String()
	s.held = nil
	if text == "" {
		return nil
	}
	return s.raw(text)
}

func (s *sseWriter) raw(text string) error {
	if s.held != nil {
		s.held.WriteString(text)
		return nil
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	if _, err := s.w.Write([]byte(text)); err != nil {
		return err
	}
	return s.rc.Flush()
}

// Frame writes one event named name; id is omitted when empty.
func (s *sseWriter) Frame(name, id string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var b strings.Builder
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	b.WriteString("event: " + name + "\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	return s.raw(b.String())
}
