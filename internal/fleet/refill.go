package fleet

import (
	"slices"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

// RefillGaps measures how long a host's freed slots sat idle while work
// was queued, from the start and end times of the attempts of a job that
// ran alone on a host with slots slots (ends may be fewer: attempts still
// running or that never ended are left out of it). The
// (slots+k)-th attempt to start could only do so once k+1 attempts had
// ended, so it refills the slot freed by the k-th end (in order of ending).
// The gap is from that end to that start, both stamped by the controller
// (the end when the host's finished report is recorded, the start when its
// started report is). The result is in order of ending.
//
// It is the figure behind the refill test and `skiff bench`'s fan-out
// line: a host long-polling with a stale free capacity shows up here as
// gaps of a whole poll interval.
func RefillGaps(starts, ends []time.Time, slots int) []time.Duration {
	starts = slices.SortedFunc(slices.Values(starts), time.Time.Compare)
	ends = slices.SortedFunc(slices.Values(ends), time.Time.Compare)
	var gaps []time.Duration
	for k := 0; slots+k < len(starts) && k < len(ends); k++ {
		gaps = append(gaps, max(starts[slots+k].Sub(ends[k]), 0))
	}
	return gaps
}

// AttemptSpans are the start and end times of the attempts that have them,
// as RefillGaps takes them.
func AttemptSpans(atts []*store.Attempt) (starts, ends []time.Time) {
	for _, a := range atts {
		if a.StartedAt != nil {
			starts = append(starts, *a.StartedAt)
		}
		if a.EndedAt != nil && a.StartedAt != nil {
			ends = append(ends, *a.EndedAt)
		}
	}
	return starts, ends
}
