package agent

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

func TestBoundedFetch(t *testing.T) {
	send := func(b []byte) func(context.Context, io.Writer) error {
		return func(_ context.Context, w io.Writer) error {
			for len(b) > 0 {
				n := min(len(b), 100)
				if _, err := w.Write(b[:n]); err != nil {
					return err
				}
				b = b[n:]
			}
			return nil
		}
	}
	var buf bytes.Buffer
	if err := boundedFetch(t.Context(), "input a", &buf, 1000, time.Minute, time.Hour, send(make([]byte, 1000))); err != nil || buf.Len() != 1000 {
		t.Fatalf("at the declared size: %v, %d bytes", err, buf.Len())
	}
	buf.Reset()
	err := boundedFetch(t.Context(), "input a", &buf, 1000, time.Minute, time.Hour, send(make([]byte, 5000)))
	if err == nil || !strings.Contains(err.Error(), "input a sent more than its declared 1000 bytes") || buf.Len() > 1000 {
		t.Fatalf("past the declared size: %v, %d bytes kept", err, buf.Len())
	}
	buf.Reset()
	if err := boundedFetch(t.Context(), "input a", &buf, -1, time.Minute, time.Hour, send(make([]byte, 5000))); err != nil {
		t.Fatalf("no declared size: %v", err)
	}
	stall := func(ctx context.Context, w io.Writer) error {
		_, _ = w.Write([]byte("x"))
		<-ctx.Done()
		return ctx.Err()
	}
	err = boundedFetch(t.Context(), "input a", io.Discard, -1, 50*time.Millisecond, time.Hour, stall)
	if err == nil || !strings.Contains(err.Error(), "nothing received for 50ms") {
		t.Fatalf("idle: %v", err)
	}
	trickle := func(ctx context.Context, w io.Writer) error {
		for {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
				_, _ = w.Write([]byte("x"))
			}
		}
	}
	err = boundedFetch(t.Context(), "input a", io.Discard, -1, time.Second, 200*time.Millisecond, trickle)
	if err == nil || !strings.Contains(err.Error(), "was not fetched within 200ms") {
		t.Fatalf("total: %v", err)
	}
}
