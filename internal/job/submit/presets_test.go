package submit

import (
	"slices"
	"testing"

	"github.com/skiffhq/skiff/apiv1"
)

func TestDefaultPresets(t *testing.T) {
	t.Parallel()
	lim := Limits{Presets: DefaultPresets()}
	if err := ValidatePresets(lim); err != nil {
		t.Fatalf("the default presets are not valid requirements: %v", err)
	}
	if got, want := PresetNames(lim), []string{"cpu-large", "cpu-medium", "cpu-small", "gpu-small", "memory-large"}; !slices.Equal(got, want) {
		t.Errorf("got presets %v, want %v", got, want)
	}
	for _, tc := range []struct {
		name string
		want Requirements
	}{
		{"cpu-small", Requirements{CPU: 1, MemoryMB: 2048, Profile: "cpu", StorageGB: DefaultStorageGB}},
		{"cpu-medium", Requirements{CPU: 2, MemoryMB: 4096, Profile: "cpu", StorageGB: DefaultStorageGB}},
		{"cpu-large", Requirements{CPU: 4, MemoryMB: 8192, Profile: "cpu", StorageGB: DefaultStorageGB}},
		{"memory-large", Requirements{CPU: 4, MemoryMB: 32768, Profile: "cpu", StorageGB: DefaultStorageGB}},
		{"gpu-small", Requirements{CPU: 8, MemoryMB: 32768, GPUCount: 1, Profile: "gpu", StorageGB: DefaultStorageGB}},
	} {
		got, ok := ResolvePreset(lim, tc.name)
		if !ok || got != tc.want {
			t.Errorf("%s: got %+v %v, want %+v", tc.name, got, ok, tc.want)
		}
	}
	if _, ok := ResolvePreset(lim, "huge"); ok {
		t.Error("an unknown preset resolved")
	}
	// Each call is a fresh table: changing one changes no other.
	a := DefaultPresets()
	*a["cpu-small"].CPU = 99
	if *DefaultPresets()["cpu-small"].CPU != 1 {
		t.Error("DefaultPresets shares its values between calls")
	}
}

func TestValidatePresetsRefusesBadShapes(t *testing.T) {
	t.Parallel()
	bad, gpus, cpu := -1.0, int64(2), apiv1.ProfileCPU
	for name, pr := range map[string]apiv1.JobRequirements{
		"negative cpu":          {CPU: &bad},
		"cpu profile with GPUs": {GPUCount: &gpus, Profile: &cpu},
	} {
		if err := ValidatePresets(Limits{Presets: map[string]apiv1.JobRequirements{name: pr}}); err == nil {
			t.Errorf("%s: got valid", name)
		}
	}
}
