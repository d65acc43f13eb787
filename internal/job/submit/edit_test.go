package submit

import (
	"encoding/json"
	"testing"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/fault"
)

func TestEditRequirements(t *testing.T) {
	t.Parallel()
	cpuJob := Requirements{CPU: 2, MemoryMB: 4096, Profile: "cpu", StorageGB: 10}
	gpuJob := Requirements{CPU: 8, MemoryMB: 32768, GPUCount: 2, GPUMemoryMB: 16000, Profile: "gpu", StorageGB: 100, MinSingleCoreScore: 1.5}
	preset := `{"cpu":4,"memory_mb":8192}`
	tests := []struct {
		name        string
		cur         Requirements
		base, patch string
		want        Requirements
	}{
		{"a value replaces", cpuJob, `{}`, `{"cpu":4,"storage_gb":20}`,
			Requirements{CPU: 4, MemoryMB: 4096, Profile: "cpu", StorageGB: 20}},
		{"null falls back to the built-in default", cpuJob, `{}`, `{"cpu":null,"memory_mb":null}`,
			Requirements{CPU: DefaultCPU, MemoryMB: DefaultMemoryMB, Profile: "cpu", StorageGB: 10}},
		{"null falls back to the preset", cpuJob, preset, `{"cpu":null,"memory_mb":null}`,
			Requirements{CPU: 4, MemoryMB: 8192, Profile: "cpu", StorageGB: 10}},
		{"a GPU count makes a cpu job a gpu job", cpuJob, `{}`, `{"gpu_count":1}`,
			Requirements{CPU: 2, MemoryMB: 4096, GPUCount: 1, Profile: "gpu", StorageGB: 10}},
		{"profile cpu drops the GPUs", gpuJob, `{}`, `{"profile":"cpu"}`,
			Requirements{CPU: 8, MemoryMB: 32768, Profile: "cpu", StorageGB: 100, MinSingleCoreScore: 1.5}},
		{"null score removes the minimum", gpuJob, `{}`, `{"min_single_core_score":null}`,
			Requirements{CPU: 8, MemoryMB: 32768, GPUCount: 2, GPUMemoryMB: 16000, Profile: "gpu", StorageGB: 100}},
		{"null gpu_count on a gpu job is one GPU", gpuJob, `{}`, `{"gpu_count":null}`,
			Requirements{CPU: 8, MemoryMB: 32768, GPUCount: 1, GPUMemoryMB: 16000, Profile: "gpu", StorageGB: 100, MinSingleCoreScore: 1.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var patch map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tt.patch), &patch); err != nil {
				t.Fatal(err)
			}
			got, err := EditRequirements(tt.cur, reqs(t, tt.base), patch)
			if err != nil {
				t.Fatalf("got error %v", err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestEditRequirementsRefusals(t *testing.T) {
	t.Parallel()
	cur := Requirements{CPU: 2, MemoryMB: 4096, Profile: "cpu", StorageGB: 10}
	tests := []struct{ name, patch, field, code string }{
		{"empty", `{}`, "", "empty_patch"},
		{"unknown field", `{"cores":4}`, "requirements.cores", "invalid_job"},
		{"wrong type", `{"cpu":"four"}`, "requirements.cpu", "invalid_job"},
		{"fraction of memory", `{"memory_mb":1.5}`, "requirements.memory_mb", "invalid_job"},
		{"zero cpu", `{"cpu":0}`, "requirements.cpu", "invalid_job"},
		{"too many GPUs", `{"gpu_count":17}`, "requirements.gpu_count", "invalid_job"},
		{"unknown profile", `{"profile":"tpu"}`, "requirements.profile", "invalid_job"},
		{"score below the baseline", `{"min_single_core_score":0.5}`, "requirements.min_single_core_score", "invalid_job"},
		{"cpu profile with GPUs", `{"profile":"cpu","gpu_count":2}`, "requirements.profile", "invalid_job"},
		{"GPU memory without GPUs", `{"gpu_memory_mb":1000}`, "requirements.gpu_memory_mb", "invalid_job"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var patch map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tt.patch), &patch); err != nil {
				t.Fatal(err)
			}
			got, err := EditRequirements(cur, apiv1.JobRequirements{}, patch)
			fe, ok := fault.As(err)
			if !ok || fe.Kind != fault.KindInvalid || fe.Code != tt.code {
				t.Fatalf("got %+v, %v; want a %s fault", got, err, tt.code)
			}
			if got != cur {
				t.Errorf("got %+v on error, want the current requirements back", got)
			}
			if tt.field == "" {
				return
			}
			fields, _ := fe.Details["fields"].(map[string]any)
			if _, ok := fields[tt.field]; !ok {
				t.Errorf("got details %v, want %s named", fe.Details, tt.field)
			}
		})
	}
}

func TestBaseRequirements(t *testing.T) {
	t.Parallel()
	cpu, mem := 2.0, int64(1024)
	lim := Limits{Defaults: apiv1.JobRequirements{CPU: &cpu},
		Presets: map[string]apiv1.JobRequirements{"big": {MemoryMB: &mem}}}
	if b := BaseRequirements(lim, "big"); *b.CPU != 2 || *b.MemoryMB != 1024 {
		t.Errorf("with preset: got %+v", b)
	}
	if b := BaseRequirements(lim, "gone"); *b.CPU != 2 || b.MemoryMB != nil {
		t.Errorf("with a preset that no longer exists: got %+v, want the defaults", b)
	}
}
