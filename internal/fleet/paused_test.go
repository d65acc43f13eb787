package fleet_test

import (
	"context"
	"slices"
	"testing"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/store"
)

// A host whose lease request says it is paused (its work dir under the
// free-disk watermark) gets no work, and the task goes to it once it asks
// again without the pause. The task carries its storage_gb to the host.
func TestScriptedPausedHostGetsNoWork(t *testing.T) {
	engines(t, func(t *testing.T, st store.Store) {
		s := newScripted(t, st)
		h := s.host(4, 4)
		storage := int64(3)
		s.submit(apiv1.JobSubmit{Requirements: &apiv1.JobRequirements{StorageGB: &storage}})
		resp, err := h.ctl.Poll(context.Background(), &agentproto.PollRequest{HostID: h.id, Free: h.capacity,
			Running: slices.Clone(h.running), Paused: "taking no work: /w has 1 GiB free, under the watermark"})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Assignments) != 0 {
			t.Fatalf("a paused host was given %v", ids(resp.Assignments))
		}
		got := h.poll(h.capacity, 0)
		if len(got.Assignments) != 1 || got.Assignments[0].StorageGB != storage {
			t.Fatalf("after the pause the host got %+v, want the task with storage_gb %d", got.Assignments, storage)
		}
	})
}
