package storetest

// TaskClaim's placement on what a host is rather than what it has free:
// memory per GPU, the disk it lends a task, its single-core score.

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

// testTaskClaimPlacement: a claim never hands a host a task whose
// gpu_memory_mb, storage_gb, min_single_core_score or profile (a GPU) it
// does not satisfy; bounds are inclusive, and a host that declares no
// storage share (0) is not bounded on it.
func testTaskClaimPlacement(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	p := tf.JobParams(t, s, &tf.JobOpts{Project: f, Tasks: 4})
	reqs := []string{
		`{"cpu":1,"memory_mb":512,"gpu_count":1,"gpu_memory_mb":40000,"profile":"gpu","storage_gb":10}`,
		`{"cpu":1,"memory_mb":512,"gpu_count":0,"gpu_memory_mb":0,"profile":"cpu","storage_gb":100}`,
		`{"cpu":1,"memory_mb":512,"gpu_count":0,"gpu_memory_mb":0,"profile":"cpu","storage_gb":10,"min_single_core_score":1.5}`,
		`{"cpu":1,"memory_mb":512,"gpu_count":0,"gpu_memory_mb":0,"profile":"cpu","storage_gb":10}`,
	}
	for i, r := range reqs {
		p.Tasks[i].Requirements = json.RawMessage(r)
		p.Tasks[i].CPU, p.Tasks[i].MemoryMB = 1, 512
	}
	p.Tasks[0].GPUs = 1
	tf.JobFrom(t, s, p)
	type host struct {
		gpus, gpuMemMB, storageGB int64
		score                     float64
	}
	claim := func(name string, h host) (*store.Task, error) {
		task, _, err := s.TaskClaim(ctx(t), &store.TaskClaimParams{HostID: "wkr_" + name, AttemptID: id.New(id.Attempt),
			FreeCPU: 8, FreeMemoryMB: 8192, FreeGPUs: h.gpus, GPUMemoryMB: h.gpuMemMB, StorageGB: h.storageGB,
			SingleCoreScore: h.score, Now: t0})
		return task, err
	}
	want := func(name string, h host, index int64) {
		t.Helper()
		task, err := claim(name, h)
		if err != nil || task.Index != index {
			t.Fatalf("host %s %+v claimed %+v, %v; want task %d", name, h, task, err, index)
		}
	}
	// A 24 GB GPU, 50 GB of disk, a score of 1.2: only the plain CPU task.
	small := host{gpus: 1, gpuMemMB: 24000, storageGB: 50, score: 1.2}
	want("small", small, 3)
	if task, err := claim("small", small); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the small host claimed %+v, %v; want nothing it satisfies", task, err)
	}
	// No GPU at all: never the gpu-profile task, however much memory.
	if task, err := claim("nogpu", host{gpus: 0, gpuMemMB: 80000, storageGB: 50, score: 1.2}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a host without GPUs claimed %+v, %v", task, err)
	}
	want("bigGPU", host{gpus: 1, gpuMemMB: 40000, storageGB: 50, score: 1.2}, 0) // exactly the memory asked
	want("bigDisk", host{storageGB: 100, score: 1.0}, 1)                         // exactly the disk asked
	if task, err := claim("slow", host{score: 1.49}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a host scoring 1.49 claimed %+v, %v; want the 1.5 minimum refused", task, err)
	}
	want("fast", host{score: 1.5}, 2) // exactly the minimum; no storage share bounds nothing
}
