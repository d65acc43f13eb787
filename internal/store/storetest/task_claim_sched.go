package storetest

// TaskClaim agrees with internal/sched: the rule in SQL is the rule in Go.

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/sched"
	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

// testTaskClaimAgreesWithSched: for every pair of a task's needs and a
// host's offer in the table, the engine's claim takes the task exactly when
// sched.Fits says it fits.
func testTaskClaimAgreesWithSched(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	offers := []sched.Offer{
		{CPU: 4, MemoryMB: 8192, GPUs: 1, Slots: 1, GPUMemoryMB: 24000, StorageGB: 50, SingleCoreScore: 1.2},
		{CPU: 0.5, MemoryMB: 1024, Slots: 1, SingleCoreScore: 1},
		{CPU: 8, MemoryMB: 65536, GPUs: 2, Slots: 1, GPUMemoryMB: 80000, SingleCoreScore: 2, GPUOnly: true},
	}
	needs := []sched.Need{
		{CPU: 1, MemoryMB: 512},
		{CPU: 0.5, MemoryMB: 1024},
		{CPU: 4, MemoryMB: 8192, GPUs: 1, GPUMemoryMB: 24000},
		{CPU: 1, MemoryMB: 512, GPUs: 1, GPUMemoryMB: 40000},
		{CPU: 1, MemoryMB: 512, GPUs: 2},
		{CPU: 1, MemoryMB: 512, StorageGB: 50},
		{CPU: 1, MemoryMB: 512, StorageGB: 51},
		{CPU: 1, MemoryMB: 512, MinSingleCoreScore: 1.2},
		{CPU: 1, MemoryMB: 512, MinSingleCoreScore: 1.5},
		{CPU: 2, MemoryMB: 2048},
	}
	for i, n := range needs {
		for j, o := range offers {
			p := tf.JobParams(t, s, &tf.JobOpts{Project: f, Tasks: 1})
			req := map[string]any{"cpu": n.CPU, "memory_mb": n.MemoryMB, "gpu_count": n.GPUs, "gpu_memory_mb": n.GPUMemoryMB,
				"storage_gb": n.StorageGB}
			if n.MinSingleCoreScore > 0 {
				req["min_single_core_score"] = n.MinSingleCoreScore
			}
			raw, _ := json.Marshal(req)
			p.Tasks[0].Requirements = raw
			p.Tasks[0].CPU, p.Tasks[0].MemoryMB, p.Tasks[0].GPUs = n.CPU, n.MemoryMB, n.GPUs
			tf.JobFrom(t, s, p)
			host := fmt.Sprintf("wkr_sched_%d_%d", i, j)
			task, _, err := s.TaskClaim(ctx(t), &store.TaskClaimParams{HostID: host, AttemptID: id.New(id.Attempt),
				FreeCPU: o.FreeCPU(), FreeMemoryMB: o.MemoryMB, FreeGPUs: o.GPUs, MinGPUs: o.MinGPUs(),
				GPUMemoryMB: o.GPUMemoryMB, StorageGB: o.StorageGB, SingleCoreScore: o.SingleCoreScore, Now: t0})
			claimed := err == nil
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("need %d, offer %d: %v", i, j, err)
			}
			if claimed && task.ID != p.Tasks[0].ID {
				t.Fatalf("need %d, offer %d: claimed %s, another case's task", i, j, task.ID)
			}
			if want := sched.Fits(n, o); claimed != want {
				t.Errorf("need %+v on offer %+v: the claim took it %v, sched.Fits says %v", n, o, claimed, want)
			}
			// The job leaves the dispatch either way, for the next case.
			mustSetStatus(t, s, p.Job.ID, store.JobCancelled, t0)
		}
	}
}
