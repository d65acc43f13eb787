// Package gpu finds a host's NVIDIA GPUs and driver, and hands the GPUs
// out to attempts one owner at a time. Discovery reads the device nodes
// (their numbers with stat), the kernel module's version, which runsc's
// nvproxy must support, and the driver's user-space files, which it
// gathers into one directory that sandboxes bind read-only
// (sandbox.GPUDriverRoot). Every path is under a root parameter, so tests
// run it against a fake device tree and a fake driver directory.
package gpu

import (
	"strconv"

	"github.com/skiffhq/skiff/internal/sandbox"
)

// Host is what discovery found on a machine.
type Host struct {
	// DriverVersion is the kernel module's version ("580.159.04").
	DriverVersion string `json:"driver_version"`
	// GPUs are the GPUs, by device minor number.
	GPUs []GPU `json:"gpus"`
	// Shared are the nodes every GPU user needs: /dev/nvidiactl,
	// /dev/nvidia-uvm and, where present, /dev/nvidia-uvm-tools.
	Shared []sandbox.Device `json:"shared_devices"`
	// MemoryMB is the memory of the smallest GPU (nvidia-smi's), which
	// requirements.gpu_memory_mb is placed against; 0: unknown.
	MemoryMB int64 `json:"memory_mb"`
	// DriverDir holds the driver's user-space files gathered for
	// sandboxes: lib64/ and bin/.
	DriverDir string `json:"driver_dir"`
	// Files are the gathered files, relative to DriverDir; Sources says
	// where each came from.
	Files   []string `json:"files"`
	Sources []string `json:"sources"`
}

// GPU is one GPU of the host.
type GPU struct {
	// Index is the device minor number: the N of /dev/nvidiaN.
	Index  int            `json:"index"`
	Device sandbox.Device `json:"device"`
	// UUID and Model come from /proc/driver/nvidia/gpus/*/information
	// when the driver lists the GPU there.
	UUID  string `json:"uuid,omitempty"`
	Model string `json:"model,omitempty"`
}

// Attach is the sandbox's view of the host's GPUs at positions idx of
// h.GPUs (as an Allocator hands them out).
func (h *Host) Attach(idx []int) *sandbox.GPU {
	g := &sandbox.GPU{Shared: append([]sandbox.Device(nil), h.Shared...), DriverDir: h.DriverDir}
	for _, i := range idx {
		d := h.GPUs[i]
		g.Devices = append(g.Devices, d.Device)
		id := d.UUID
		if id == "" {
			id = strconv.Itoa(d.Index)
		}
		g.IDs = append(g.IDs, id)
	}
	return g
}
