package agent

import (
	"fmt"

	"github.com/skiffhq/skiff/internal/gpu"
	"github.com/skiffhq/skiff/internal/sandbox"
)

// A host offers the GPUs it can attach, and nothing else: those discovery
// found (and the owner lent), never a count from /proc or a flag alone,
// since a GPU task billed at the GPU rate must get its GPU (docs/gpus.md).

// attachableGPUs is how many GPUs a host with h offers.
func attachableGPUs(h *gpu.Host) int {
	if h == nil {
		return 0
	}
	return len(h.GPUs)
}

// attachGPUs gives the attempt the GPUs it was assigned: its own, none
// shared with another attempt, until release, which the caller makes once
// the sandbox is gone. The driver's mount point is made in the image's
// root, like the working directory, because the root is mounted
// read-only. An attempt without GPUs gets nil and a no-op release.
func (at *attempt) attachGPUs(rootFS string) (*sandbox.GPU, func(), error) {
	n := at.asg.GPUs
	if n <= 0 {
		return nil, func() {}, nil
	}
	h := at.a.cfg.GPU
	if h == nil {
		return nil, nil, fmt.Errorf("the task asks for %d GPU(s) but this host has no usable NVIDIA GPU and driver "+
			"(its log says why at start-up); it is requeued for another host", n)
	}
	idx, err := at.a.gpus.Acquire(at.asg.AttemptID, n)
	if err != nil {
		return nil, nil, err
	}
	release := func() { at.a.gpus.Release(at.asg.AttemptID) }
	if err := ensureDir(rootFS, sandbox.GPUDriverRoot); err != nil {
		release()
		return nil, nil, fmt.Errorf("prepare %s for the GPU driver: %w", sandbox.GPUDriverRoot, err)
	}
	return h.Attach(idx), release, nil
}

// attachedGPUs is how many GPUs g attached.
func attachedGPUs(g *sandbox.GPU) int {
	if g == nil {
		return 0
	}
	return len(g.Devices)
}
