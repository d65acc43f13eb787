package agent

import (
	"math"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// The single-core score (requirements.min_single_core_score, an attempt's
// resource_profile.single_core_score) is how fast one core runs a fixed
// CPU-bound workload, relative to a reference machine that scores 1.0:
// score = BaselineWorkloadTime / the time measured here.
//
// The workload (singleCoreWorkload with singleCoreRounds) mixes what
// ordinary code spends a core on: integer arithmetic, a data-dependent
// branch and loads and stores in a 16 KiB table, which stays in any L1
// cache. It uses no instruction that some CPUs accelerate and others lack
// (no SHA, AES or vector code), so that a score compares cores, not
// instruction sets. It allocates nothing and makes no system call.
//
// The reference machine is the controller machine Skiff was calibrated on
// (docs/hosting.md, "Single-core score"): a virtual machine with an
// "Intel(R) Xeon(R) Processor" at 2.6 GHz, Go 1.26, where the workload's
// best run of singleCoreRuns took BaselineWorkloadTime.
const (
	BaselineWorkloadTime = 25_500 * time.Microsecond
	singleCoreRounds     = 4_400_000
	// singleCoreRuns runs of the workload are timed and the fastest one
	// counts: a run that another process disturbed only got slower, so the
	// fastest is the least disturbed. The whole measurement takes about
	// singleCoreRuns × 25.5 ms of CPU on the reference machine.
	singleCoreRuns = 5
)

// MeasureSingleCore times the workload on this machine and returns its
// score against the baseline, rounded to two decimals (at least 0.01).
// It keeps one core busy for about 130 ms on the reference machine.
func MeasureSingleCore() float64 {
	return singleCoreScore(fastestRun(singleCoreRuns))
}

// singleCoreScore is the score of a workload that took d.
func singleCoreScore(d time.Duration) float64 {
	if d <= 0 {
		d = time.Nanosecond
	}
	s := math.Round(float64(BaselineWorkloadTime)/float64(d)*100) / 100
	return max(s, 0.01)
}

// fastestRun times n runs of the workload on one OS thread and returns the
// fastest. Each run is timed by the CPU time its thread used, not by the
// wall clock: on a busy machine the thread waits for a core between
// slices, which the wall clock counts and the CPU time does not, so a
// machine measured while busy scores close to what it scores idle. Where
// the thread's CPU clock cannot be read, the wall clock is used.
func fastestRun(n int) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	best := time.Duration(math.MaxInt64)
	var sink uint64
	for range n {
		cpu0, cpuOK := threadCPUTime()
		start := time.Now()
		sink += singleCoreWorkload(singleCoreRounds)
		took := time.Since(start)
		if cpu1, ok := threadCPUTime(); cpuOK && ok && cpu1 > cpu0 {
			took = cpu1 - cpu0
		}
		best = min(best, took)
	}
	if sink == 1 { // never: keeps the compiler from dropping the work
		best++
	}
	return best
}

// singleCoreWorkload is the fixed workload: a xorshift generator driving
// updates of a small table, with a branch that depends on the data.
func singleCoreWorkload(rounds int) uint64 {
	var table [4096]uint32
	x := uint64(88172645463325252)
	var acc uint64
	for range rounds {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		j := x & 4095
		table[j] += uint32(x >> 32)
		if table[j]&1 == 0 {
			acc += uint64(table[j])
		} else {
			acc ^= x
		}
	}
	return acc
}

// threadCPUTime is the CPU time the calling OS thread has used.
func threadCPUTime() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
