package submit

import (
	"fmt"
	"sort"

	"github.com/skiffhq/skiff/apiv1"
)

// DefaultPresets is the built-in preset table (spec 2.9: named resource
// shapes a submission may name as `preset`), the one the server offers: a
// fresh map on each call, so that no caller can change another's.
//
//	cpu-small     1 cpu,  2048 MB
//	cpu-medium    2 cpu,  4096 MB
//	cpu-large     4 cpu,  8192 MB
//	memory-large  4 cpu, 32768 MB
//	gpu-small     1 GPU, 8 cpu, 32768 MB
func DefaultPresets() map[string]apiv1.JobRequirements {
	shape := func(cpu float64, memoryMB, gpus int64, profile string) apiv1.JobRequirements {
		return apiv1.JobRequirements{CPU: &cpu, MemoryMB: &memoryMB, GPUCount: &gpus, Profile: &profile}
	}
	return map[string]apiv1.JobRequirements{
		"cpu-small":    shape(1, 2048, 0, apiv1.ProfileCPU),
		"cpu-medium":   shape(2, 4096, 0, apiv1.ProfileCPU),
		"cpu-large":    shape(4, 8192, 0, apiv1.ProfileCPU),
		"memory-large": shape(4, 32768, 0, apiv1.ProfileCPU),
		"gpu-small":    shape(8, 32768, 1, apiv1.ProfileGPU),
	}
}

// PresetNames lists the presets of lim by name.
func PresetNames(lim Limits) []string {
	names := make([]string, 0, len(lim.Presets))
	for n := range lim.Presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ResolvePreset is what a job naming only preset gets: the preset over the
// operator's defaults, resolved as a submission's requirements are. False
// when lim has no such preset.
func ResolvePreset(lim Limits, preset string) (Requirements, bool) {
	pr, ok := lim.Presets[preset]
	if !ok {
		return Requirements{}, false
	}
	return resolve(problems{}, MergeRequirements(lim.Defaults, pr)), true
}

// ValidatePresets checks an operator's preset table: every preset must be
// requirements a submission could name itself.
func ValidatePresets(lim Limits) error {
	for _, name := range PresetNames(lim) {
		p := problems{}
		checkRequirements(p, "requirements", lim.Presets[name])
		resolve(p, MergeRequirements(lim.Defaults, lim.Presets[name]))
		if err := p.err(); err != nil {
			return fmt.Errorf("preset %q: %w", name, err)
		}
	}
	return nil
}
