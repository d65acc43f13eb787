package sandbox

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
)

// GPUDriverRoot is where a GPU attempt sees the host driver's user-space
// files, read-only: libraries in GPUDriverRoot/lib64 (on LD_LIBRARY_PATH)
// and tools such as nvidia-smi in GPUDriverRoot/bin (on PATH). It is the
// path NVIDIA's own images and Kubernetes' device plugins use.
const GPUDriverRoot = "/usr/local/nvidia"

// GPU is what an attempt that asked for GPUs is given: its own GPU device
// nodes, the nodes every GPU user needs (the control and UVM devices) and
// the driver's files. A driver that cannot attach GPUs refuses a Spec that
// has one.
type GPU struct {
	// Devices are the attempt's own GPUs (/dev/nvidiaN), in the order the
	// task numbers them: CUDA device 0 is Devices[0].
	Devices []Device
	// Shared are /dev/nvidiactl, /dev/nvidia-uvm and (where the host has
	// it) /dev/nvidia-uvm-tools.
	Shared []Device
	// IDs name Devices for NVIDIA_VISIBLE_DEVICES: the GPUs' UUIDs where
	// the host knows them, else their host indices.
	IDs []string
	// DriverDir is a host directory holding lib64/ and bin/ with the
	// driver's user-space files, bound read-only at GPUDriverRoot.
	DriverDir string
}

// Device is a character device node, with the host's numbers.
type Device struct {
	Path  string `json:"path"`
	Major int64  `json:"major"`
	Minor int64  `json:"minor"`
}

var gpuDevicePath = regexp.MustCompile(`^/dev/nvidia([0-9]+|ctl|-uvm|-uvm-tools)$`)

// Validate checks a GPU attachment: at least one GPU, NVIDIA device paths
// only, the control device among the shared ones, an absolute driver dir.
func (g *GPU) Validate() error {
	var errs []error
	if len(g.Devices) == 0 {
		errs = append(errs, errors.New("no GPU device"))
	}
	if len(g.IDs) != len(g.Devices) {
		errs = append(errs, fmt.Errorf("%d ids for %d devices", len(g.IDs), len(g.Devices)))
	}
	ctl := false
	for _, d := range append(append([]Device(nil), g.Devices...), g.Shared...) {
		if !gpuDevicePath.MatchString(d.Path) || d.Major < 0 || d.Minor < 0 {
			errs = append(errs, fmt.Errorf("device %q (%d:%d): not an NVIDIA device node", d.Path, d.Major, d.Minor))
		}
		ctl = ctl || d.Path == "/dev/nvidiactl"
	}
	if !ctl {
		errs = append(errs, errors.New("no /dev/nvidiactl among the shared devices"))
	}
	if !filepath.IsAbs(g.DriverDir) || path.Clean(g.DriverDir) != g.DriverDir {
		errs = append(errs, fmt.Errorf("driver dir %q: must be a clean absolute path", g.DriverDir))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid GPU attachment: %w", err)
	}
	return nil
}
