package httpapi

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestMinBodyRate: a trickled body is cut with 408 body_too_slow, while a
// request that read its small body and then waits longer than a window
// (a host's lease long-poll) is not cut, and neither is a keep-alive
// connection's next request.
func TestMinBodyRate(t *testing.T) {
	t.Parallel()
	wait := make(chan struct{})
	srv := httptest.NewServer(MinBodyRate(BodyRate{MinBytesPerSecond: 1024, Window: time.Second}, slog.New(slog.DiscardHandler),
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, "handler saw "+err.Error(), http.StatusBadRequest) // dropped once cut
				return
			}
			if r.URL.Path == "/poll" {
				select { // a long poll: longer than a window, after the body
				case <-wait:
				case <-time.After(2500 * time.Millisecond):
				case <-r.Context().Done():
					return // the server cancelled the request
				}
			}
			fmt.Fprintf(w, "read %d", len(b))
		})))
	defer srv.Close()
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	read := func() (int, string) {
		t.Helper()
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for range 2 { // the second request rides the same connection
		fmt.Fprintf(conn, "POST /poll HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
		if status, body := read(); status != http.StatusOK || body != "read 2" {
			t.Fatalf("long poll: got %d %q, want 200", status, body)
		}
	}

	slow, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprintf(slow, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n")
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := slow.Write([]byte("x")); err != nil {
				return
			}
		}
	}()
	_ = slow.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(slow), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), `"code":"body_too_slow"`) ||
		!strings.Contains(string(b), "recommended_action") {
		t.Errorf("trickled body: got %d %s, want 408 body_too_slow", resp.StatusCode, b)
	}
}
