package gvisor

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/skiffhq/skiff/internal/sandbox"
)

// GPUs reach a sandbox through runsc's nvproxy in the shape Kubernetes'
// device plugins use (docs/gpus.md): the spec's linux.devices lists the
// attempt's own /dev/nvidiaN and the shared control and UVM nodes with the
// host's numbers, runsc's device gofer opens exactly those host nodes (and
// no other), the driver's user-space files are bound read-only at
// sandbox.GPUDriverRoot, and --nvproxy says what listing /dev/nvidiactl
// implies. No nvidia-container-toolkit is involved.

// nvproxyFlag is runsc's global flag that turns the GPU proxy on.
const nvproxyFlag = "--nvproxy"

// checkGPU refuses a spec whose GPU attachment is malformed.
func checkGPU(spec *sandbox.Spec) error {
	if spec.GPU == nil {
		return nil
	}
	return spec.GPU.Validate()
}

// gpuArgs puts --nvproxy before a GPU attempt's runsc command line (a
// global flag: it must precede the subcommand).
func gpuArgs(spec *sandbox.Spec, args []string) []string {
	if spec.GPU == nil {
		return args
	}
	return append([]string{nvproxyFlag}, args...)
}

// withGPU adds g to an attempt's OCI spec: the device nodes, a device
// cgroup allowing them, the driver's files and the environment that finds
// them. nil g leaves s as it is.
func withGPU(s *specs.Spec, g *sandbox.GPU) {
	if g == nil {
		return
	}
	mode := os.FileMode(0o666) // the runner is nobody; gVisor checks these bits
	var uid, gid uint32
	if s.Linux.Resources == nil {
		s.Linux.Resources = &specs.LinuxResources{}
	}
	for _, d := range append(append([]sandbox.Device(nil), g.Shared...), g.Devices...) {
		major, minor := d.Major, d.Minor
		s.Linux.Devices = append(s.Linux.Devices, specs.LinuxDevice{Path: d.Path, Type: "c", Major: major, Minor: minor,
			FileMode: &mode, UID: &uid, GID: &gid})
		// runsc does not apply device cgroups (nvidia-container-cli runs
		// with --no-cgroups under it too); the rule says what the attempt
		// may use for any runtime that does. Isolation comes from the
		// device gofer, which opens only the nodes listed above.
		s.Linux.Resources.Devices = append(s.Linux.Resources.Devices, specs.LinuxDeviceCgroup{Allow: true, Type: "c",
			Major: &major, Minor: &minor, Access: "rwm"})
	}
	s.Mounts = append(s.Mounts, specs.Mount{Destination: sandbox.GPUDriverRoot, Type: "bind", Source: g.DriverDir,
		Options: []string{"rbind", "ro", "nosuid", "nodev"}})
	s.Process.Env = gpuEnv(s.Process.Env, g)
}

// gpuEnv puts the driver's bin and lib64 first on PATH and
// LD_LIBRARY_PATH (an image may carry a CUDA stub libcuda, which must not
// win) and tells CUDA and NVIDIA's tools which GPUs the task has: CUDA
// numbers the visible GPUs 0..n-1, NVIDIA_VISIBLE_DEVICES names them as
// the host does (UUIDs), which is what nvidia-smi inside shows.
func gpuEnv(env []string, g *sandbox.GPU) []string {
	m := make(map[string]string, len(env)+5)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	m["PATH"] = prepend(sandbox.GPUDriverRoot+"/bin", m["PATH"])
	m["LD_LIBRARY_PATH"] = prepend(sandbox.GPUDriverRoot+"/lib64", m["LD_LIBRARY_PATH"])
	ordinals := make([]string, len(g.Devices))
	for i := range g.Devices {
		ordinals[i] = strconv.Itoa(i)
	}
	m["CUDA_VISIBLE_DEVICES"] = strings.Join(ordinals, ",")
	m["NVIDIA_VISIBLE_DEVICES"] = strings.Join(g.IDs, ",")
	// What runsc's nvproxy allows by default; said, so that a project env
	// asking for more (graphics, video) does not look granted.
	m["NVIDIA_DRIVER_CAPABILITIES"] = "compute,utility"
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

func prepend(dir, list string) string {
	if list == "" {
		return dir
	}
	return fmt.Sprintf("%s:%s", dir, list)
}
