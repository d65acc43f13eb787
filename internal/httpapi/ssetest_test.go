package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// sseFrame is one server-sent event as a client reads it.
type sseFrame struct {
	ID, Event string
	HasID     bool
	Data      string
}

func (f sseFrame) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(f.Data), v); err != nil {
		t.Fatalf("%s frame data %q: %v", f.Event, f.Data, err)
	}
}

// sseClient reads one stream over a real HTTP connection.
type sseClient struct {
	Status int
	Header http.Header
	frames chan sseFrame
	cancel context.CancelFunc
}

// openSSE sends GET path with token and optional Last-Event-ID.
func openSSE(t *testing.T, base, token, path, lastEventID string) *sseClient {
	t.Helper()
	return openSSEWith(t, http.DefaultClient, 4096, base, token, path, lastEventID)
}

// openSSEWith is openSSE through client, with room for buffer frames
// read ahead: with none, the client reads the connection only as fast as
// the test takes frames.
func openSSEWith(t *testing.T, client *http.Client, buffer int, base, token, path, lastEventID string) *sseClient {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET %s: %v", path, err)
	}
	c := &sseClient{Status: resp.StatusCode, Header: resp.Header, frames: make(chan sseFrame, buffer), cancel: cancel}
	t.Cleanup(c.Close)
	go func() {
		defer resp.Body.Close()
		defer close(c.frames)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		var f sseFrame
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if f.Event != "" || len(data) > 0 {
					f.Data = strings.Join(data, "\n")
					c.frames <- f
				}
				f, data = sseFrame{}, nil
			case strings.HasPrefix(line, ":"), strings.HasPrefix(line, "retry:"):
			case strings.HasPrefix(line, "id: "):
				f.ID, f.HasID = strings.TrimPrefix(line, "id: "), true
			case strings.HasPrefix(line, "event: "):
				f.Event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: "))
			}
		}
	}()
	return c
}

func (c *sseClient) Close() { c.cancel() }

// streamWait bounds how long a test waits for a frame before it fails: a
// guard against a hang, not a timing assertion.
const streamWait = 30 * time.Second

// next returns the next frame other than ping; ok is false when the
// stream ended.
func (c *sseClient) next(t *testing.T) (sseFrame, bool) {
	t.Helper()
	for {
		select {
		case f, ok := <-c.frames:
			if !ok {
				return sseFrame{}, false
			}
			if f.Event == "ping" {
				continue
			}
			return f, true
		case <-time.After(streamWait):
			t.Fatalf("no frame within %s", streamWait)
		}
	}
}

// want returns the next frame, which must be named event.
func (c *sseClient) want(t *testing.T, event string) sseFrame {
	t.Helper()
	f, ok := c.next(t)
	if !ok {
		t.Fatalf("stream ended; want a %s frame", event)
	}
	if f.Event != event {
		t.Fatalf("got a %s frame (%s), want %s", f.Event, f.Data, event)
	}
	return f
}

// ended fails unless the stream closes with no further frame.
func (c *sseClient) ended(t *testing.T) {
	t.Helper()
	if f, ok := c.next(t); ok {
		t.Fatalf("got a %s frame (%s), want the stream closed", f.Event, f.Data)
	}
}

// rawNext returns the next frame, pings included.
func (c *sseClient) rawNext(t *testing.T) sseFrame {
	t.Helper()
	select {
	case f, ok := <-c.frames:
		if !ok {
			t.Fatal("stream ended")
		}
		return f
	case <-time.After(streamWait):
		t.Fatalf("no frame within %s", streamWait)
	}
	return sseFrame{}
}
