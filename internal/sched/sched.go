// Package sched is Skiff's placement rule, pure: whether a task fits what a
// host offers, and what the host has left once it takes it. Order and fit
// live in the store's TaskClaim query, which picks the first queued task in
// dispatch order that fits, under the claim's lock, in one statement; this
// package is the same rule in Go, for the code that offers a host's capacity
// one claim after another (fleet), and for the conformance test that holds
// both engines' query to it (storetest's TaskClaimAgreesWithSched).
package sched

// cpuSlack absorbs the float rounding of subtracting fractional CPUs, so
// that a host with 2 cores takes exactly twenty 0.1-core tasks.
const cpuSlack = 1e-9

// Offer is what a host offers for its next task: the capacity it has free
// and what it is.
type Offer struct {
	// Free capacity and slots.
	CPU      float64
	MemoryMB int64
	GPUs     int64
	Slots    int
	// What the host is: the memory of each of its GPUs (0: unknown, or no
	// GPU), the disk it lends one task (0: no bound), its measured
	// single-core score (baseline 1.0), and whether it takes GPU work only.
	GPUMemoryMB     int64
	StorageGB       int64
	SingleCoreScore float64
	GPUOnly         bool
}

// Need is what a task asks for: its resolved requirements.
type Need struct {
	CPU                float64
	MemoryMB           int64
	GPUs               int64
	GPUMemoryMB        int64
	StorageGB          int64
	MinSingleCoreScore float64
}

// Fits reports whether n fits o. Every bound is inclusive; a host that
// lends no storage bound (0) bounds nothing; a GPU-only host takes no task
// without a GPU.
func Fits(n Need, o Offer) bool {
	switch {
	case o.Slots <= 0:
		return false
	case n.CPU > o.CPU+cpuSlack, n.MemoryMB > o.MemoryMB, n.GPUs > o.GPUs:
		return false
	case o.GPUOnly && n.GPUs < 1:
		return false
	case n.GPUMemoryMB > o.GPUMemoryMB:
		return false
	case o.StorageGB > 0 && n.StorageGB > o.StorageGB:
		return false
	case n.MinSingleCoreScore > o.SingleCoreScore:
		return false
	}
	return true
}

// Take is o once n is placed on it: its resources and one slot fewer.
func (o Offer) Take(n Need) Offer {
	o.CPU -= n.CPU
	o.MemoryMB -= n.MemoryMB
	o.GPUs -= n.GPUs
	o.Slots--
	return o
}

// FreeCPU is the CPU to offer the claim query: the free cores with the
// rounding slack the rule allows.
func (o Offer) FreeCPU() float64 { return o.CPU + cpuSlack }

// MinGPUs is the least GPUs a task must ask for on this host.
func (o Offer) MinGPUs() int64 {
	if o.GPUOnly {
		return 1
	}
	return 0
}
