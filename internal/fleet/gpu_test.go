package fleet_test

import (
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/store"
)

// TestScriptedGPUs: a GPU task goes only to a host that attaches GPUs
// (protocol 6) and has as much GPU memory as it asks, its assignment says
// how many GPUs, and it pays the GPU rate only when the host reports them
// attached.
func TestScriptedGPUs(t *testing.T) {
	engines(t, func(t *testing.T, st store.Store) {
		s := newScripted(t, st)
		gpuTask := func(memMB int64) *store.Job {
			return s.submit(apiv1.JobSubmit{Requirements: &apiv1.JobRequirements{GPUCount: ptr[int64](1), GPUMemoryMB: ptr(memMB)}})
		}
		// A version-5 host says it has GPUs but would not attach them:
		// counted without, it gets no GPU task.
		old := s.hostV(2, 8, agentproto.GPUProtocolVersion-1)
		old.capacity.GPUs = 2
		old.register()
		j1 := gpuTask(0)
		if got := old.poll(old.capacity, 0); len(got.Assignments) != 0 {
			t.Fatalf("a host that cannot attach GPUs got %+v", got.Assignments)
		}

		// A 24 GB GPU is too small for 40 GB; the 80 GB one takes both.
		small := s.host(2, 8)
		small.capacity.GPUs, small.profile = 1, agentproto.ResourceProfile{CPUCount: 8, MemoryTotalMB: 8192, GPUCount: 1, GPUMemoryMB: 24000}
		small.register()
		j2 := gpuTask(40000)
		got := small.poll(small.capacity, 0)
		if len(got.Assignments) != 1 || got.Assignments[0].JobID != j1.ID || got.Assignments[0].GPUs != 1 {
			t.Fatalf("small GPU host: got %+v, want only %s with 1 GPU", got.Assignments, j1.ID)
		}
		// Its host could not attach the GPU: billed at the rate less the GPU.
		att1 := got.Assignments[0].AttemptID
		small.report(att1, agentproto.EventStarted, nil)
		start := s.clk.Now()
		s.clk.Advance(120 * time.Second)
		small.report(att1, agentproto.EventFinished, &agentproto.Outcome{ExitCode: 0, Result: []byte(`{"ok":true}`),
			StartedAt: start, EndedAt: s.clk.Now(), GPUsAttached: 0})

		big := s.host(2, 8)
		big.capacity.GPUs, big.profile = 2, agentproto.ResourceProfile{CPUCount: 8, MemoryTotalMB: 8192, GPUCount: 2, GPUMemoryMB: 81559}
		big.register()
		got = big.poll(big.capacity, 0)
		if len(got.Assignments) != 1 || got.Assignments[0].JobID != j2.ID || got.Assignments[0].GPUs != 1 {
			t.Fatalf("80 GB host: got %+v, want %s with 1 GPU", got.Assignments, j2.ID)
		}
		att2 := got.Assignments[0].AttemptID
		big.report(att2, agentproto.EventStarted, nil)
		start = s.clk.Now()
		s.clk.Advance(120 * time.Second)
		big.report(att2, agentproto.EventFinished, &agentproto.Outcome{ExitCode: 0, Result: []byte(`{"ok":true}`),
			StartedAt: start, EndedAt: s.clk.Now(), GPUsAttached: 1})

		j1, j2 = s.job(j1), s.job(j2)
		a1, a2 := s.attempts(j1)[0], s.attempts(j2)[0]
		full := (j2.RateMicrosPerHour*120 + 3599) / 3600
		if a2.CostMicros != full {
			t.Errorf("attempt with its GPU attached: %d micros, want %d (the GPU rate)", a2.CostMicros, full)
		}
		cpuOnly := billing.RateWithoutGPUs(j1.RateMicrosPerHour, billing.DefaultRates, billing.Capacity{CPU: a1.CPU, MemoryMB: a1.MemoryMB, GPUs: 1})
		if want := (cpuOnly*120 + 3599) / 3600; a1.CostMicros != want || a1.CostMicros*10 > full {
			t.Errorf("attempt without its GPU attached: %d micros, want %d, a small part of the %d a GPU costs", a1.CostMicros, want, full)
		}
	})
}
