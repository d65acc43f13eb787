package job

import (
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

// ReportSlack is how much shorter than what the controller observed a
// host's report of an attempt's runtime may be and still be believed. A
// host reports "started" just before its sandbox starts and "finished" only
// after it collected the result and uploaded the outputs, so an honest
// report is somewhat shorter than the controller's view; a report shorter
// by more than this is not plausible, and the attempt is metered as if it
// ran for the controller's view less this slack.
const ReportSlack = 15 * time.Minute

// meteredRuntime is the runtime attempt a is metered for when its end o is
// received at now (the controller's clock): the runtime its host reported
// (the runner's start to its exit, on the host's clock), clamped to what
// the controller observed itself. The controller's view runs from the
// started report it received (or the assignment, when none came) to now:
// the host's report is never believed above it, nor below it by more than
// ReportSlack. trusted says whether the host's report was inside those
// bounds (a report outside them is worth a warning in the log).
func meteredRuntime(a *store.Attempt, o *Outcome, now time.Time) (runtime time.Duration, trusted bool) {
	start := a.AssignedAt
	if a.StartedAt != nil {
		start = *a.StartedAt
	}
	observed := max(0, now.Sub(start))
	lower := max(0, observed-ReportSlack)
	host := o.EndedAt.Sub(o.StartedAt)
	return min(max(host, lower), observed), host >= lower && host <= observed
}
