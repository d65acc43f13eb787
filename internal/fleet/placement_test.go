package fleet_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/enroll"
	"github.com/skiffhq/skiff/internal/store"
)

// Placement honours what a host is, as it registered: a job's
// min_single_core_score, storage_gb, gpu_memory_mb and profile reach only
// hosts whose measured profile and declared share satisfy them, and the
// attempt shows the profile it ran on.
func TestScriptedPlacementOnHostProfile(t *testing.T) {
	engines(t, func(t *testing.T, st store.Store) {
		s := newScripted(t, st)
		score, disk, gpuMem, gpuCount := 1.5, int64(100), int64(40000), int64(1)
		gpuProfile := apiv1.ProfileGPU
		needsScore := s.submit(apiv1.JobSubmit{Requirements: &apiv1.JobRequirements{MinSingleCoreScore: &score}})
		needsDisk := s.submit(apiv1.JobSubmit{Requirements: &apiv1.JobRequirements{StorageGB: &disk}})
		needsGPUMem := s.submit(apiv1.JobSubmit{Requirements: &apiv1.JobRequirements{GPUCount: &gpuCount, GPUMemoryMB: &gpuMem}})
		anyGPU := s.submit(apiv1.JobSubmit{Requirements: &apiv1.JobRequirements{Profile: &gpuProfile}})
		plain := s.submit(apiv1.JobSubmit{})

		jobOf := func(asg []agentproto.Assignment) []string {
			var out []string
			for _, a := range asg {
				out = append(out, a.JobID)
			}
			return out
		}
		name := map[string]string{needsScore.ID: "min_single_core_score 1.5", needsDisk.ID: "storage_gb 100",
			needsGPUMem.ID: "gpu_memory_mb 40000", anyGPU.ID: "profile gpu", plain.ID: "plain"}
		wantJobs := func(host string, got []agentproto.Assignment, want ...*store.Job) {
			t.Helper()
			gotJobs := jobOf(got)
			var names []string
			for _, j := range gotJobs {
				names = append(names, name[j])
			}
			if len(gotJobs) != len(want) {
				t.Fatalf("%s was given %v, want %d tasks", host, names, len(want))
			}
			for _, j := range want {
				if !strings.Contains(strings.Join(gotJobs, ","), j.ID) {
					t.Fatalf("%s was given %v, want %s among them", host, names, name[j.ID])
				}
			}
		}

		// A CPU host at the baseline score lending 20 GB of disk: only the
		// plain task, not the GPU-profile one nor those it falls short of.
		cpuHost := s.enrolledProfile(enroll.Spec{WorkKinds: "cpu", RatePercent: -1}, 4, 16, 0,
			agentproto.Capacity{CPU: 4, MemoryMB: 16384, Slots: 4, StorageGB: 20},
			agentproto.ResourceProfile{SingleCoreScore: 1.0, CPUCount: 4, MemoryTotalMB: 16384})
		wantJobs("the baseline CPU host", cpuHost.poll(cpuHost.capacity, 0).Assignments, plain)

		// A GPU host with a 16 GB GPU and a score of 1.2: the GPU-profile
		// task, not the one asking for a 40 GB GPU.
		smallGPU := s.enrolledProfile(enroll.Spec{WorkKinds: "cpu,gpu", RatePercent: -1}, 4, 16, 1,
			agentproto.Capacity{CPU: 4, MemoryMB: 16384, GPUs: 1, Slots: 4, StorageGB: 50},
			agentproto.ResourceProfile{SingleCoreScore: 1.2, CPUCount: 4, MemoryTotalMB: 16384, GPUCount: 1, GPUMemoryMB: 16000})
		wantJobs("the 16 GB GPU host", smallGPU.poll(smallGPU.capacity, 0).Assignments, anyGPU)

		// A fast host with an 80 GB GPU and 200 GB of disk takes the rest.
		big := s.enrolledProfile(enroll.Spec{WorkKinds: "cpu,gpu", RatePercent: -1}, 8, 32, 1,
			agentproto.Capacity{CPU: 8, MemoryMB: 32768, GPUs: 1, Slots: 8, StorageGB: 200},
			agentproto.ResourceProfile{SingleCoreScore: 2.0, CPUCount: 8, MemoryTotalMB: 32768, GPUCount: 1, GPUMemoryMB: 81920})
		wantJobs("the big host", big.poll(big.capacity, 0).Assignments, needsScore, needsDisk, needsGPUMem)

		atts := s.attempts(needsScore)
		if len(atts) != 1 || atts[0].HostID != big.id || !strings.Contains(string(atts[0].ResourceProfile), `"single_core_score":2`) {
			t.Fatalf("the scored job's attempts %s; want one on the big host showing its score", attemptsString(atts))
		}
	})
}

// A host reporting what no machine has, which placement would trust, is
// refused at registration with 422 and the field named.
func TestScriptedAbsurdPlacementClaimsRefused(t *testing.T) {
	engines(t, func(t *testing.T, st store.Store) {
		s := newScripted(t, st)
		h, _ := s.enrolled(enroll.Spec{}, 2, 4, 0, agentproto.Capacity{CPU: 2, MemoryMB: 4096, Slots: 2})
		for _, c := range []struct {
			field    string
			capacity agentproto.Capacity
			profile  agentproto.ResourceProfile
		}{
			{"capacity.storage_gb", agentproto.Capacity{CPU: 2, MemoryMB: 4096, Slots: 2, StorageGB: -1}, agentproto.ResourceProfile{SingleCoreScore: 1}},
			{"capacity.storage_gb", agentproto.Capacity{CPU: 2, MemoryMB: 4096, Slots: 2, StorageGB: 1 << 40}, agentproto.ResourceProfile{SingleCoreScore: 1}},
			{"resource_profile.gpu_memory_mb", agentproto.Capacity{CPU: 2, MemoryMB: 4096, Slots: 2}, agentproto.ResourceProfile{GPUMemoryMB: -5}},
			{"resource_profile.single_core_score", agentproto.Capacity{CPU: 2, MemoryMB: 4096, Slots: 2}, agentproto.ResourceProfile{SingleCoreScore: 1e6}},
			{"resource_profile.single_core_score", agentproto.Capacity{CPU: 2, MemoryMB: 4096, Slots: 2}, agentproto.ResourceProfile{SingleCoreScore: -1}},
		} {
			_, err := h.ctl.Register(context.Background(), &agentproto.RegisterRequest{ProtocolVersion: agentproto.ProtocolVersion,
				Driver: "scripted", Capacity: c.capacity, Profile: c.profile})
			wantStatus(t, "register with an absurd "+c.field, err, http.StatusUnprocessableEntity)
			if !strings.Contains(err.Error(), c.field) && !strings.Contains(err.Error(), c.field[strings.Index(c.field, ".")+1:]) {
				t.Errorf("refusal %v does not name %s", err, c.field)
			}
		}
	})
}
