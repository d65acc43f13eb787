package gpu

import (
	"fmt"
	"sync"
)

// Allocator hands a host's GPUs to attempts: each GPU has at most one
// owner, from Acquire until its Release, which the caller makes only once
// the owner's sandbox is gone. It is safe for concurrent use.
type Allocator struct {
	mu    sync.Mutex
	owner []string // per GPU position: its owner, "" when free
}

// NewAllocator hands out n GPUs (positions 0..n-1 of Host.GPUs).
func NewAllocator(n int) *Allocator {
	return &Allocator{owner: make([]string, n)}
}

// Acquire gives owner n free GPUs, lowest positions first, or an error
// when fewer are free; an owner acquires once.
func (a *Allocator) Acquire(owner string, n int) ([]int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if owner == "" || n <= 0 {
		return nil, fmt.Errorf("gpu: acquire %d GPUs for %q: want an owner and at least one GPU", n, owner)
	}
	var got []int
	for i, o := range a.owner {
		if o == owner {
			return nil, fmt.Errorf("gpu: %s already holds GPUs", owner)
		}
		if o == "" && len(got) < n {
			got = append(got, i)
		}
	}
	if len(got) < n {
		return nil, fmt.Errorf("gpu: %s asks for %d GPUs; %d of this host's %d are free", owner, n, len(got), len(a.owner))
	}
	for _, i := range got {
		a.owner[i] = owner
	}
	return got, nil
}

// Release frees owner's GPUs; call it once its sandbox is gone.
func (a *Allocator) Release(owner string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, o := range a.owner {
		if o == owner {
			a.owner[i] = ""
		}
	}
}

// Free is how many GPUs have no owner.
func (a *Allocator) Free() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, o := range a.owner {
		if o == "" {
			n++
		}
	}
	return n
}
