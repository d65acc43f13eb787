package job

import (
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

// TestMeteredRuntime: the runtime billed is what the host reported, never
// more than the controller saw between the started and finished reports,
// and never less than that minus ReportSlack.
func TestMeteredRuntime(t *testing.T) {
	assigned := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	started := assigned.Add(20 * time.Second)                // the started report, on the controller's clock
	hostStart := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) // the host's clock is its own
	cases := []struct {
		name     string
		started  *time.Time
		host     time.Duration // what the host says the runner ran
		received time.Duration // finished report, after the started report
		want     time.Duration
		trusted  bool
	}{
		{"the host's report within what was observed", &started, 90 * time.Second, 95 * time.Second, 90 * time.Second, true},
		{"a host claiming more than was observed", &started, 7 * 24 * time.Hour, 2 * time.Minute, 2 * time.Minute, false},
		{"a host claiming far less than was observed", &started, time.Second, 3 * time.Hour, 3*time.Hour - ReportSlack, false},
		{"a short run reported late but within the slack", &started, time.Second, ReportSlack, time.Second, true},
		{"a negative report", &started, -time.Hour, 30 * time.Second, 0, false},
		{"no started report: observed from the assignment", nil, time.Hour, 10 * time.Minute, 10*time.Minute + 20*time.Second, false},
		{"a finished report before the started one (clocks of two controllers)", &started, 5 * time.Second, -time.Second, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := &store.Attempt{AssignedAt: assigned, StartedAt: c.started}
			o := &Outcome{StartedAt: hostStart, EndedAt: hostStart.Add(c.host)}
			got, trusted := meteredRuntime(a, o, started.Add(c.received))
			if got != c.want || trusted != c.trusted {
				t.Errorf("got %s (trusted %v), want %s (trusted %v)", got, trusted, c.want, c.trusted)
			}
		})
	}
}
