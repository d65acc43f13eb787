package event_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/event"
)

// TestBrokerSlowSubscriber: the broker never waits for a subscriber. One
// that lets its buffer fill is closed with ErrSlow while the others go on,
// and a filtered subscriber gets its job's events only, in position order.
func TestBrokerSlowSubscriber(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	b := event.New(event.Config{Feed: f.store, Buffer: 2})
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	slow, err := b.Subscribe(event.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	first := f.submit(t, 1)
	mine, err := b.Subscribe(event.Filter{JobIDs: map[string]bool{first.ID: true}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		f.submit(t, 1)
	}
	if _, _, err := f.jobs.Cancel(t.Context(), f.account, first.ID, "test"); err != nil {
		t.Fatal(err)
	}
	b.Wake()
	// The slow one, unread until the broker gave up on it: its two
	// buffered events, then closed.
	for deadline := time.Now().Add(wait); slow.Err() == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slow subscriber was never closed")
		}
	}
	n := 0
	for range slow.C {
		n++
	}
	if !errors.Is(slow.Err(), event.ErrSlow) || n != 2 {
		t.Errorf("slow subscriber: %d events, err %v; want 2 and ErrSlow", n, slow.Err())
	}
	// The filtered one sees its job's events only, in order, up to the
	// cancel (its submission too when the broker had not read it yet).
	var last int64
	for {
		e, ok := <-mine.C
		if !ok || e.JobID != first.ID || e.Position <= last {
			t.Fatalf("filtered subscriber: got %+v, %v; want %s's events in order", e, ok, first.ID)
		}
		last = e.Position
		if e.Kind == "job.cancelled" {
			break
		}
	}
	if b.Count() != 1 {
		t.Errorf("open subscriptions: got %d, want 1", b.Count())
	}
	mine.Close()
	if _, ok := <-mine.C; ok || b.Count() != 0 {
		t.Errorf("after Close: channel open %v, %d subscriptions", ok, b.Count())
	}
	stop()
}
