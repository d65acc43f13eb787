package project

import (
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

// TestReadiness walks the readiness object through the moves of spec 3.2
// (and the ones this service adds), without a store or a builder.
func TestReadiness(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pushOf := func(id string, st store.PushStatus) *store.Push {
		pu := &store.Push{ID: id, Status: st, ContentHash: "sha256:" + id, CreatedAt: at, UpdatedAt: at}
		if st == store.PushFailed {
			pu.Error, pu.NextAction = "build failed: exit status 3", "Read log_tail, fix the Dockerfile, then push again."
		}
		return pu
	}
	v1 := pushOf("v1", store.PushPublished)
	type want struct {
		initState, phase, availability string
		canAccept, readyForJobs        bool
		issue                          bool
	}
	cases := []struct {
		name string
		in   ReadinessInput
		want want
	}{
		{"nothing pushed", ReadinessInput{},
			want{"not_initialized", "idle", "cold", false, false, false}},
		{"first build queued", ReadinessInput{Latest: pushOf("v1", store.PushQueued)},
			want{"initializing", "queued", "warming", false, false, false}},
		{"first build running", ReadinessInput{Latest: pushOf("v1", store.PushBuilding)},
			want{"initializing", "running", "warming", false, false, false}},
		{"first build failed", ReadinessInput{Latest: pushOf("v1", store.PushFailed)},
			want{"attention_required", "failed", "cold", false, false, true}},
		{"published, never prepared", ReadinessInput{Latest: v1, Published: v1},
			want{"refreshing", "refresh_pending", "cold", true, false, false}},
		{"published, preparing", ReadinessInput{Latest: v1, Published: v1,
			Runtime: RuntimeCounts{Initializing: 1, Total: 1, PendingInit: true}},
			want{"refreshing", "refreshing", "warming", true, false, false}},
		{"published, prepared", ReadinessInput{Latest: v1, Published: v1,
			Runtime: RuntimeCounts{Ready: 1, Total: 1}},
			want{"ready", "ready", "ready", true, true, false}},
		{"published, invalidated", ReadinessInput{Latest: v1, Published: v1,
			Runtime: RuntimeCounts{Stale: 1, Invalidated: 1, Total: 1}},
			want{"published", "refresh_pending", "cold", true, false, false}},
		// The hosts hold only the previous revision: a new revision that is
		// not yet prepared is refreshing (spec 3.2), not "invalidated".
		{"new revision published, hosts hold the old one", ReadinessInput{Latest: pushOf("v2", store.PushPublished), Published: pushOf("v2", store.PushPublished),
			Runtime: RuntimeCounts{Stale: 1, Total: 1}},
			want{"refreshing", "refresh_pending", "cold", true, false, false}},
		// While a new revision builds, or after its build failed, jobs run
		// on the published one, whose preparation still counts.
		{"rebuilding a prepared revision", ReadinessInput{Latest: pushOf("v2", store.PushBuilding), Published: v1,
			Runtime: RuntimeCounts{Ready: 1, Total: 1}},
			want{"refreshing", "refreshing", "ready", true, true, false}},
		{"failed after a prepared revision", ReadinessInput{Latest: pushOf("v2", store.PushFailed), Published: v1,
			Runtime: RuntimeCounts{Ready: 1, Total: 1}},
			want{"attention_required", "failed", "degraded", true, true, true}},
		{"failed after an unprepared revision", ReadinessInput{Latest: pushOf("v2", store.PushFailed), Published: v1},
			want{"attention_required", "failed", "degraded", true, false, true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.in.Name = "p"
			r := Readiness(tc.in)
			got := want{r.InitState, r.ProgressPhase, r.AvailabilityStatus, r.CanAcceptNewJobs, r.ReadyForJobs, r.LatestIssue != nil}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if r.StatusMessage == "" || r.NextAction == "" {
				t.Errorf("got status_message %q, next_action %q; want both", r.StatusMessage, r.NextAction)
			}
			if (tc.in.Published != nil) != (r.ContentHash != nil) {
				t.Errorf("got content_hash %v with published %v", r.ContentHash, tc.in.Published != nil)
			}
			if tc.want.issue && (r.LatestFailureAt == nil || *r.LatestIssue != tc.in.Latest.Error) {
				t.Errorf("got latest_issue %v, latest_failure_at %v; want the build's error and its time", r.LatestIssue, r.LatestFailureAt)
			}
		})
	}
}
