package httpapi_test

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
)

// smallWindowClient is an HTTP client whose connections advertise a tiny
// receive window, so that a reader that pauses fills the path to the
// server after a few hundred KiB instead of many MiB.
func smallWindowClient() *http.Client {
	d := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// A client that stops reading never holds up the others or the writers:
// once its queue (8 events here) is full the server closes its stream with
// a timeout frame of reason slow_reader naming the last event it sent, and
// a reconnect with that Last-Event-ID gets everything after it. A client
// reading beside it gets every frame meanwhile.
func testStreamSlowReader(t *testing.T, f *fixture) {
	ctx := t.Context()
	j := submitJob(t, f.member, fanOut(1))
	fast := openSSE(t, f.e.URL, f.acct.Member, streamPath(j.ID), "")
	_, from := snapshotOf(t, fast)
	slow := openSSEWith(t, smallWindowClient(), 0, f.e.URL, f.acct.Member, streamPath(j.ID), "")
	if _, slowFrom := snapshotOf(t, slow); slowFrom != from {
		t.Fatalf("snapshots at %d and %d; the job changed between them", from, slowFrom)
	}
	a := claimAttempt(t, f, j.ID)
	if err := f.e.Jobs.AttemptStarted(ctx, a, f.e.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	// Big output tails fill the slow client's path fast. The fast client
	// takes each frame before the next event commits, so that it is never
	// more than one event behind and only the slow one falls behind.
	tail := strings.Repeat("x", 64<<10) + "\n"
	var fastFrames []sseFrame
	for _, e := range eventsOf(t, f, j.ID) { // assigned, running, started
		if e.Position > from {
			fr, _ := fast.next(t)
			fastFrames = append(fastFrames, fr)
		}
	}
	progress := 0
	for f.e.Broker.Count() > 1 {
		if progress == 2000 {
			t.Fatalf("the slow stream was still open after %d progress events", progress)
		}
		progress++
		if err := f.e.Jobs.AttemptProgress(ctx, a, json.RawMessage(`{"n":`+itoa(progress)+`}`), tail); err != nil {
			t.Fatal(err)
		}
		fastFrames = append(fastFrames, fast.want(t, apiv1.FrameTask))
	}
	sent := len(fastFrames)
	o := succeed
	o.StartedAt, o.EndedAt = f.e.Clock.Now(), f.e.Clock.Now().Add(time.Second)
	if err := f.e.Jobs.AttemptFinished(ctx, a, &o, nil, ""); err != nil {
		t.Fatal(err)
	}
	fastFrames = append(fastFrames, readUntilDone(t, fast)...)
	checkFramesAreEvents(t, f, j.ID, from, fastFrames)

	// The slow client reads again: what was on its way, then the timeout
	// frame, then the end of the stream.
	var slowFrames []sseFrame
	for {
		fr, ok := slow.next(t)
		if !ok {
			t.Fatalf("slow stream ended without a timeout frame after %d frames", len(slowFrames))
		}
		if fr.Event != apiv1.FrameTimeout {
			slowFrames = append(slowFrames, fr)
			continue
		}
		var tf apiv1.TimeoutFrame
		fr.decode(t, &tf)
		last := ""
		if n := len(slowFrames); n > 0 {
			last = slowFrames[n-1].ID
		}
		if tf.Reason != apiv1.TimeoutSlowReader || tf.LastEventID == "" || tf.LastEventID != last && last != "" ||
			!strings.Contains(tf.RecommendedAction, "Last-Event-ID "+tf.LastEventID) {
			t.Fatalf("timeout frame %+v after frame %q; want reason %s naming the last frame sent", tf, last, apiv1.TimeoutSlowReader)
		}
		slow.ended(t)
		if len(slowFrames) >= sent {
			t.Fatalf("the slow client got %d of %d frames before it was closed: it was never behind", len(slowFrames), sent)
		}
		resumed := openSSE(t, f.e.URL, f.acct.Member, streamPath(j.ID), tf.LastEventID)
		slowFrames = append(slowFrames, readUntilDone(t, resumed)...)
		break
	}
	checkFramesAreEvents(t, f, j.ID, from, slowFrames)
	if n := f.e.Broker.Count(); n != 0 {
		t.Errorf("open subscriptions after every stream ended: %d", n)
	}
}
