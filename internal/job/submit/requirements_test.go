package submit

import (
	"encoding/json"
	"testing"

	"github.com/skiffhq/skiff/apiv1"
)

func reqs(t *testing.T, s string) apiv1.JobRequirements {
	t.Helper()
	var r apiv1.JobRequirements
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestMergeRequirements(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, base, over, want string
	}{
		{"both empty", `{}`, `{}`, `{}`},
		{"over fills gaps", `{}`, `{"cpu":2}`, `{"cpu":2}`},
		{"base kept where over is silent", `{"cpu":2,"memory_mb":100}`, `{"memory_mb":200}`, `{"cpu":2,"memory_mb":200}`},
		{"every field wins", `{"cpu":1,"memory_mb":1,"gpu_count":1,"gpu_memory_mb":1,"profile":"gpu","storage_gb":1,"min_single_core_score":1}`,
			`{"cpu":2,"memory_mb":2,"gpu_count":2,"gpu_memory_mb":2,"profile":"gpu","storage_gb":2,"min_single_core_score":2}`,
			`{"cpu":2,"memory_mb":2,"gpu_count":2,"gpu_memory_mb":2,"profile":"gpu","storage_gb":2,"min_single_core_score":2}`},
		{"explicit zero wins", `{"storage_gb":50}`, `{"storage_gb":0}`, `{"storage_gb":0}`},
		{"cpu profile drops base GPUs", `{"gpu_count":2,"gpu_memory_mb":8000,"profile":"gpu","cpu":8}`, `{"profile":"cpu"}`, `{"cpu":8,"profile":"cpu"}`},
		{"cpu profile keeps its own GPU fields", `{"gpu_count":2}`, `{"profile":"cpu","gpu_count":1}`, `{"gpu_count":1,"profile":"cpu"}`},
		{"gpu profile drops a base count of zero", `{"gpu_count":0}`, `{"profile":"gpu"}`, `{"profile":"gpu"}`},
		{"gpu count drops a base cpu profile", `{"profile":"cpu"}`, `{"gpu_count":1}`, `{"gpu_count":1}`},
		{"gpu count zero keeps a cpu profile", `{"profile":"cpu"}`, `{"gpu_count":0}`, `{"gpu_count":0,"profile":"cpu"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			base := reqs(t, tt.base)
			before, _ := json.Marshal(base)
			got, _ := json.Marshal(MergeRequirements(base, reqs(t, tt.over)))
			want, _ := json.Marshal(reqs(t, tt.want))
			if string(got) != string(want) {
				t.Errorf("got %s, want %s", got, want)
			}
			if after, _ := json.Marshal(base); string(after) != string(before) {
				t.Errorf("base changed: got %s, want %s", after, before)
			}
		})
	}
}

func TestLimitsDefaults(t *testing.T) {
	t.Parallel()
	lim := Limits{Defaults: reqs(t, `{"cpu":2,"memory_mb":4096}`)}
	s, err := submit(t, `{"requirements":{"memory_mb":1024}}`, lim)
	if err != nil {
		t.Fatal(err)
	}
	want := Requirements{CPU: 2, MemoryMB: 1024, Profile: "cpu", StorageGB: 10}
	if s.Requirements != want {
		t.Errorf("got %+v, want %+v", s.Requirements, want)
	}
}

func TestRequirementsAPI(t *testing.T) {
	t.Parallel()
	r := Requirements{CPU: 1.5, MemoryMB: 2048, Profile: "cpu", StorageGB: 10}
	got, _ := json.Marshal(r.API())
	if want := `{"cpu":1.5,"memory_mb":2048,"gpu_count":0,"gpu_memory_mb":0,"profile":"cpu","storage_gb":10}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	r.MinSingleCoreScore = 2
	got, _ = json.Marshal(r.API())
	if want := `{"cpu":1.5,"memory_mb":2048,"gpu_count":0,"gpu_memory_mb":0,"profile":"cpu","storage_gb":10,"min_single_core_score":2}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
