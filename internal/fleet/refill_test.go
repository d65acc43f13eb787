package fleet_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/fleet"
	"github.com/skiffhq/skiff/internal/store"
)

// TestFreedSlotsRefillAtOnce runs a fan-out of more trivial tasks than the
// host has slots through a real gVisor host whose long poll is 10 s, and
// checks from the attempts' times that no freed slot sat idle for a second
// while tasks were queued. A host told only at its next lease that it has
// room (the free capacity of its outstanding long poll being stale) would
// show gaps of a whole lease interval here: 8-10 s.
func TestFreedSlotsRefillAtOnce(t *testing.T) {
	engines(t, func(t *testing.T, st store.Store) {
		testFreedSlotsRefill(t, harnessOptions{store: st, heartbeat: 10 * time.Second})
	})
}

func testFreedSlotsRefill(t *testing.T, opts harnessOptions) {
	const slots, tasks = 2, 40
	// Generous against noisy machines; the stall this guards against is
	// a whole lease interval.
	const idleBound = time.Second

	h := newHarness(t, opts)
	h.host(slots)
	items := make([]json.RawMessage, tasks)
	for i := range items {
		items[i] = json.RawMessage(fmt.Sprintf(`{"i":%d,"echo":["i"]}`, i))
	}
	j := h.wait(h.submit(apiv1.JobSubmit{Payload: json.RawMessage(`{}`), FanOut: &apiv1.JobFanOut{Items: items}}), 3*time.Minute)
	if j.Status != store.JobCompleted {
		t.Fatalf("status %s (%s), want completed", j.Status, j.Error)
	}
	_, atts := h.tasks(j)
	if len(atts) != tasks {
		t.Fatalf("%d attempts, want one per task (%d)", len(atts), tasks)
	}
	starts, ends := fleet.AttemptSpans(atts)
	gaps := fleet.RefillGaps(starts, ends, slots)
	if len(gaps) != tasks-slots {
		t.Fatalf("%d refills, want %d", len(gaps), tasks-slots)
	}
	for k, g := range gaps {
		if g > idleBound {
			t.Errorf("refill %d: a freed slot sat idle %s with tasks queued (bound %s)", k, g, idleBound)
		}
	}
	sorted := slices.Sorted(slices.Values(gaps))
	t.Logf("refill gaps over %d refills: p50 %s, max %s", len(gaps), sorted[len(sorted)/2], sorted[len(sorted)-1])
}

func TestRefillGaps(t *testing.T) {
	at := func(ms ...int) []time.Time {
		var ts []time.Time
		for _, m := range ms {
			ts = append(ts, time.Unix(0, 0).Add(time.Duration(m)*time.Millisecond))
		}
		return ts
	}
	// Two slots: starts at 0 and 1; ends at 100 and 150 are refilled at
	// 105 and 1150 (a stalled slot); the last two ends refill nothing.
	gaps := fleet.RefillGaps(at(0, 1, 1150, 105), at(100, 150, 1200, 1300), 2)
	want := []time.Duration{5 * time.Millisecond, 1000 * time.Millisecond}
	if !slices.Equal(gaps, want) {
		t.Fatalf("gaps %v, want %v", gaps, want)
	}
	if g := fleet.RefillGaps(at(0, 1), at(5, 6), 2); len(g) != 0 {
		t.Fatalf("no refill: got %v", g)
	}
}
