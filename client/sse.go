package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/skiffhq/skiff/apiv1"
)

// Frame is one server-sent event: its name (apiv1.Frame*), id (a position;
// empty for frames that are not events) and JSON data.
type Frame struct {
	Event string
	ID    string
	Data  json.RawMessage
}

// Decode decodes the frame's data into v.
func (f Frame) Decode(v any) error { return json.Unmarshal(f.Data, v) }

// Stream reads an SSE stream and reconnects when it breaks or times out,
// sending Last-Event-ID so that no frame is lost or repeated. Next returns
// io.EOF after the done frame (or when the server says the stream is over).
type Stream struct {
	c      *Client
	path   string
	query  url.Values
	lastID string
	body   io.ReadCloser
	rd     *bufio.Reader
	done   bool
	fails  int
	// Reconnects counts the reconnections, for display.
	Reconnects int
}

// StreamJob follows one job (GET /api/v1/jobs/{id}/stream) from lastEventID
// ("" for a snapshot first).
func (c *Client) StreamJob(id, lastEventID string) *Stream {
	return &Stream{c: c, path: "/api/v1/jobs/" + esc(id) + "/stream", lastID: lastEventID}
}

// WatchJobs follows several jobs (GET /api/v1/jobs/watch?ids=...).
func (c *Client) WatchJobs(ids []string, lastEventID string) *Stream {
	return &Stream{c: c, path: "/api/v1/jobs/watch", query: url.Values{"ids": {strings.Join(ids, ",")}}, lastID: lastEventID}
}

// StreamProject follows a project's jobs (GET /api/v1/projects/{name}/stream).
func (c *Client) StreamProject(name, lastEventID string) *Stream {
	return &Stream{c: c, path: "/api/v1/projects/" + esc(name) + "/stream", lastID: lastEventID}
}

// LastEventID is the id of the last frame read that had one.
func (s *Stream) LastEventID() string { return s.lastID }

// Close ends the stream.
func (s *Stream) Close() {
	if s.body != nil {
		s.body.Close()
		s.body = nil
	}
	s.done = true
}

// Next returns the next frame other than a ping, reconnecting as needed.
func (s *Stream) Next(ctx context.Context) (Frame, error) {
	for {
		if s.done {
			return Frame{}, io.EOF
		}
		if s.body == nil {
			if err := s.connect(ctx); err != nil {
				return Frame{}, err
			}
			if s.done {
				return Frame{}, io.EOF
			}
		}
		f, err := readFrame(s.rd)
		if err != nil {
			// The connection broke: reconnect after Last-Event-ID.
			s.body.Close()
			s.body = nil
			if ctx.Err() != nil {
				return Frame{}, ctx.Err()
			}
			if err := s.pause(ctx); err != nil {
				return Frame{}, err
			}
			continue
		}
		s.fails = 0
		if f.ID != "" {
			s.lastID = f.ID
		}
		switch f.Event {
		case apiv1.FramePing:
			continue
		case apiv1.FrameTimeout:
			// The stream's life is over; go on from where it stopped.
			var t apiv1.TimeoutFrame
			if f.Decode(&t) == nil && t.LastEventID != "" {
				s.lastID = t.LastEventID
			}
			s.body.Close()
			s.body = nil
			continue
		case apiv1.FrameDone:
			s.Close()
		}
		return f, nil
	}
}

// pause waits before a reconnection: at once the first time, then longer.
func (s *Stream) pause(ctx context.Context) error {
	s.fails++
	s.Reconnects++
	if s.fails > 8 {
		return errors.New("stream: gave up after 8 failed reconnections")
	}
	if s.fails == 1 {
		return nil
	}
	return s.c.sleep(ctx, min(250*time.Millisecond<<(s.fails-2), 5*time.Second))
}

func (s *Stream) connect(ctx context.Context) error {
	h := http.Header{"Accept": {"text/event-stream"}}
	if s.lastID != "" {
		h.Set("Last-Event-ID", s.lastID)
	}
	resp, err := s.c.do(ctx, &request{method: http.MethodGet, path: s.path, query: s.query, header: h})
	if err != nil {
		if e, ok := AsError(err); ok && e.Status == 0 && ctx.Err() == nil {
			return s.pause(ctx)
		}
		return err
	}
	if resp.StatusCode == http.StatusNoContent {
		// Everything was delivered before: the stream is over.
		resp.Body.Close()
		s.done = true
		return nil
	}
	s.body, s.rd = resp.Body, bufio.NewReader(resp.Body)
	return nil
}

// readFrame reads one event: lines up to a blank line (comments skipped).
func readFrame(rd *bufio.Reader) (Frame, error) {
	var f Frame
	var data []string
	seen := false
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			if err == io.EOF {
				return f, io.ErrUnexpectedEOF
			}
			return f, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			// A block without data (a retry hint) is not an event.
			if seen && data != nil {
				f.Data = json.RawMessage(strings.Join(data, "\n"))
				if f.Event == "" {
					f.Event = "message"
				}
				return f, nil
			}
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		seen = true
		switch field {
		case "event":
			f.Event = value
		case "id":
			f.ID = value
		case "data":
			data = append(data, value)
		}
	}
}

// WaitJob follows a job's stream until it ends and returns the final job.
// onFrame, when not nil, sees every frame (snapshot, task, job, event).
func (c *Client) WaitJob(ctx context.Context, id string, onFrame func(Frame)) (*apiv1.Job, error) {
	s := c.StreamJob(id, "")
	defer s.Close()
	for {
		f, err := s.Next(ctx)
		if err == io.EOF {
			return c.Job(ctx, id)
		}
		if err != nil {
			return nil, err
		}
		if onFrame != nil {
			onFrame(f)
		}
	}
}
