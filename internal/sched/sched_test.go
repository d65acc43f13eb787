package sched_test

import (
	"testing"

	"github.com/skiffhq/skiff/internal/sched"
)

func TestFits(t *testing.T) {
	t.Parallel()
	host := sched.Offer{CPU: 4, MemoryMB: 8192, GPUs: 1, Slots: 2, GPUMemoryMB: 24000, StorageGB: 50, SingleCoreScore: 1.2}
	for _, tc := range []struct {
		name string
		need sched.Need
		o    sched.Offer
		fits bool
	}{
		{"small task", sched.Need{CPU: 1, MemoryMB: 512}, host, true},
		{"exactly the free capacity", sched.Need{CPU: 4, MemoryMB: 8192, GPUs: 1}, host, true},
		{"one core too many", sched.Need{CPU: 4.5, MemoryMB: 512}, host, false},
		{"one MiB too many", sched.Need{CPU: 1, MemoryMB: 8193}, host, false},
		{"two GPUs on a one-GPU host", sched.Need{CPU: 1, GPUs: 2}, host, false},
		{"GPU memory exactly", sched.Need{CPU: 1, GPUs: 1, GPUMemoryMB: 24000}, host, true},
		{"more GPU memory than the host's GPU", sched.Need{CPU: 1, GPUs: 1, GPUMemoryMB: 40000}, host, false},
		{"disk exactly", sched.Need{CPU: 1, StorageGB: 50}, host, true},
		{"more disk than lent", sched.Need{CPU: 1, StorageGB: 51}, host, false},
		{"no storage bound", sched.Need{CPU: 1, StorageGB: 500}, sched.Offer{CPU: 1, Slots: 1}, true},
		{"score exactly", sched.Need{CPU: 1, MinSingleCoreScore: 1.2}, host, true},
		{"score above the host's", sched.Need{CPU: 1, MinSingleCoreScore: 1.5}, host, false},
		{"no slot left", sched.Need{CPU: 1}, sched.Offer{CPU: 4, MemoryMB: 8192, Slots: 0}, false},
		{"CPU task on a GPU-only host", sched.Need{CPU: 1}, sched.Offer{CPU: 4, GPUs: 1, Slots: 1, GPUOnly: true}, false},
		{"GPU task on a GPU-only host", sched.Need{CPU: 1, GPUs: 1}, sched.Offer{CPU: 4, GPUs: 1, Slots: 1, GPUOnly: true}, true},
	} {
		if got := sched.Fits(tc.need, tc.o); got != tc.fits {
			t.Errorf("%s: Fits(%+v, %+v) = %v, want %v", tc.name, tc.need, tc.o, got, tc.fits)
		}
	}
}

// Taking fractional tasks one after another fills a host exactly, the
// rounding of the subtractions notwithstanding.
func TestTakeFillsExactly(t *testing.T) {
	t.Parallel()
	o := sched.Offer{CPU: 2, MemoryMB: 2000, Slots: 100}
	n := sched.Need{CPU: 0.1, MemoryMB: 100}
	taken := 0
	for sched.Fits(n, o) {
		o = o.Take(n)
		taken++
	}
	if taken != 20 {
		t.Errorf("took %d tasks of 0.1 cores from 2 cores, want 20", taken)
	}
	if o.Slots != 80 {
		t.Errorf("slots left %d, want 80", o.Slots)
	}
}
