package gpu

import (
	"context"
	"fmt"
)

// DiscoverLent finds this machine's GPUs and driver for a host that lends
// want of them (-1: all it has), gathering the driver's files under
// stageDir; runsc is asked which drivers its nvproxy supports. Both hosts
// (`skiff host` and the server's local host) and the GPU probe use it, so
// that they find the same GPUs.
func DiscoverLent(ctx context.Context, runsc, driverDir, stageDir string, want int) (*Host, error) {
	supported, err := SupportedDrivers(ctx, runsc)
	if err != nil {
		return nil, err
	}
	h, err := Discover(ctx, Options{Root: "/", DriverDir: driverDir, StageDir: stageDir, Supported: supported})
	if err != nil {
		return nil, err
	}
	if want > len(h.GPUs) {
		return nil, fmt.Errorf("gpu: %d GPUs asked to be lent, this machine has %d", want, len(h.GPUs))
	}
	if want >= 0 {
		h.GPUs = h.GPUs[:want]
	}
	return h, nil
}
