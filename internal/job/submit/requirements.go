package submit

import (
	"math"

	"github.com/skiffhq/skiff/apiv1"
)

// Built-in defaults of requirements, used where neither the submission, its
// preset nor Limits.Defaults says otherwise.
const (
	DefaultCPU       = 1.0
	DefaultMemoryMB  = 2048
	DefaultStorageGB = 10
)

// Upper bounds of requirement values. They only catch nonsense (a typo of
// three extra zeros); whether capacity of that size exists is the
// scheduler's question.
const (
	MaxCPU                = 512
	MaxMemoryMB           = 4 << 20 // 4 TiB
	MaxGPUCount           = 16
	MaxGPUMemoryMB        = 1 << 20 // 1 TiB per GPU
	MaxStorageGB          = 64 << 10
	MinSingleCoreBaseline = 1.0
	MaxSingleCoreScore    = 3.0
)

// Requirements are the resolved minimum resources of each task of a job.
// Larger machines may be used.
type Requirements struct {
	CPU         float64 `json:"cpu"`
	MemoryMB    int64   `json:"memory_mb"`
	GPUCount    int64   `json:"gpu_count"`
	GPUMemoryMB int64   `json:"gpu_memory_mb"` // per GPU; 0 means any
	Profile     string  `json:"profile"`       // cpu or gpu
	StorageGB   int64   `json:"storage_gb"`
	// MinSingleCoreScore is 0 when the job set no minimum; otherwise 1.0
	// (the baseline) to 3.0.
	MinSingleCoreScore float64 `json:"min_single_core_score"`
}

// API renders r in the wire shape, every field present.
func (r Requirements) API() apiv1.JobRequirements {
	out := apiv1.JobRequirements{
		CPU: &r.CPU, MemoryMB: &r.MemoryMB, GPUCount: &r.GPUCount, GPUMemoryMB: &r.GPUMemoryMB,
		Profile: &r.Profile, StorageGB: &r.StorageGB,
	}
	if r.MinSingleCoreScore > 0 {
		out.MinSingleCoreScore = &r.MinSingleCoreScore
	}
	return out
}

// MergeRequirements lays over on top of base field by field: a field set in
// over wins, an absent one keeps base's. It is how explicit requirements win
// over a preset, and a preset over the defaults. Neither argument is changed.
//
// The GPU fields follow over's intent as a whole, so that a preset never
// contradicts what the caller asked for: over's profile cpu drops the GPU
// count and memory it does not set itself; over's profile gpu drops a GPU
// count of 0; over's positive gpu_count without a profile drops a cpu
// profile (the profile is then inferred as gpu).
func MergeRequirements(base, over apiv1.JobRequirements) apiv1.JobRequirements {
	out := base
	if over.Profile != nil && *over.Profile == apiv1.ProfileCPU {
		out.GPUCount, out.GPUMemoryMB = nil, nil
	}
	if over.Profile != nil && *over.Profile == apiv1.ProfileGPU && out.GPUCount != nil && *out.GPUCount == 0 {
		out.GPUCount = nil
	}
	if over.Profile == nil && over.GPUCount != nil && *over.GPUCount > 0 && out.Profile != nil && *out.Profile == apiv1.ProfileCPU {
		out.Profile = nil
	}
	if over.CPU != nil {
		out.CPU = over.CPU
	}
	if over.MemoryMB != nil {
		out.MemoryMB = over.MemoryMB
	}
	if over.GPUCount != nil {
		out.GPUCount = over.GPUCount
	}
	if over.GPUMemoryMB != nil {
		out.GPUMemoryMB = over.GPUMemoryMB
	}
	if over.Profile != nil {
		out.Profile = over.Profile
	}
	if over.StorageGB != nil {
		out.StorageGB = over.StorageGB
	}
	if over.MinSingleCoreScore != nil {
		out.MinSingleCoreScore = over.MinSingleCoreScore
	}
	return out
}

// checkRequirements records a problem for each field of r out of range,
// under prefix (e.g. "requirements").
func checkRequirements(p problems, prefix string, r apiv1.JobRequirements) {
	f := func(name string) string { return prefix + "." + name }
	if r.CPU != nil && (math.IsNaN(*r.CPU) || *r.CPU <= 0 || *r.CPU > MaxCPU) {
		p.add(f("cpu"), "must be > 0 and at most %d (fractions allowed)", MaxCPU)
	}
	if r.MemoryMB != nil && (*r.MemoryMB <= 0 || *r.MemoryMB > MaxMemoryMB) {
		p.add(f("memory_mb"), "must be > 0 and at most %d", MaxMemoryMB)
	}
	if r.GPUCount != nil && (*r.GPUCount < 0 || *r.GPUCount > MaxGPUCount) {
		p.add(f("gpu_count"), "must be 0 to %d", MaxGPUCount)
	}
	if r.GPUMemoryMB != nil && (*r.GPUMemoryMB < 0 || *r.GPUMemoryMB > MaxGPUMemoryMB) {
		p.add(f("gpu_memory_mb"), "must be 0 to %d", MaxGPUMemoryMB)
	}
	if r.Profile != nil && *r.Profile != apiv1.ProfileCPU && *r.Profile != apiv1.ProfileGPU {
		p.add(f("profile"), "must be cpu or gpu")
	}
	if r.StorageGB != nil && (*r.StorageGB < 0 || *r.StorageGB > MaxStorageGB) {
		p.add(f("storage_gb"), "must be 0 to %d", MaxStorageGB)
	}
	if s := r.MinSingleCoreScore; s != nil && !(*s >= MinSingleCoreBaseline && *s <= MaxSingleCoreScore) {
		p.add(f("min_single_core_score"), "must be between 1.0 (the baseline) and 3.0")
	}
}

// resolve fills what the merged requirements leave open and checks that
// they agree with each other. A GPU count implies the gpu profile and the
// gpu profile implies one GPU; the cpu profile with GPUs, or GPU memory
// without GPUs, is a contradiction.
func resolve(p problems, r apiv1.JobRequirements) Requirements {
	out := Requirements{CPU: DefaultCPU, MemoryMB: DefaultMemoryMB, StorageGB: DefaultStorageGB}
	if r.CPU != nil {
		out.CPU = *r.CPU
	}
	if r.MemoryMB != nil {
		out.MemoryMB = *r.MemoryMB
	}
	if r.StorageGB != nil {
		out.StorageGB = *r.StorageGB
	}
	if r.GPUMemoryMB != nil {
		out.GPUMemoryMB = *r.GPUMemoryMB
	}
	if r.MinSingleCoreScore != nil {
		out.MinSingleCoreScore = *r.MinSingleCoreScore
	}
	switch {
	case r.Profile != nil:
		out.Profile = *r.Profile
	case r.GPUCount != nil && *r.GPUCount > 0:
		out.Profile = apiv1.ProfileGPU
	default:
		out.Profile = apiv1.ProfileCPU
	}
	switch {
	case r.GPUCount != nil:
		out.GPUCount = *r.GPUCount
	case out.Profile == apiv1.ProfileGPU:
		out.GPUCount = 1
	}
	switch {
	case out.Profile == apiv1.ProfileCPU && out.GPUCount > 0:
		p.add("requirements.profile", "is cpu but gpu_count is %d; use profile gpu, or drop gpu_count", out.GPUCount)
	case out.Profile == apiv1.ProfileGPU && out.GPUCount == 0:
		p.add("requirements.gpu_count", "is 0 but profile is gpu; ask for at least one GPU")
	case out.GPUCount == 0 && out.GPUMemoryMB > 0:
		p.add("requirements.gpu_memory_mb", "is set but no GPU is asked for")
	}
	return out
}
