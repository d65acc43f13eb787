package gvisor

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/skiffhq/skiff/internal/gpu"
	"github.com/skiffhq/skiff/internal/gpu/gputest"
	"github.com/skiffhq/skiff/internal/sandbox"
)

// TestGPUSpec is the spec a one-GPU attempt gets on a two-GPU host, from a
// fake device tree and a fake driver dir: its own GPU node and the shared
// ones with the numbers stat read, the device cgroup allowing exactly
// those, the driver's files read-only at /usr/local/nvidia, the
// environment that finds them, and --nvproxy.
func TestGPUSpec(t *testing.T) {
	m := gputest.NewMachine(t, 2)
	h, err := gpu.Discover(context.Background(), gpu.Options{Root: m.Root, DriverDir: m.DriverDir,
		StageDir: filepath.Join(t.TempDir(), "driver"), Supported: gputest.Supported})
	if err != nil {
		t.Fatal(err)
	}
	s := &sandbox.Spec{
		AttemptID: "att_gpu", TaskID: "tsk_1", RootFS: "/images/abc/rootfs", Args: []string{"/usr/bin/python3", "train.py"},
		Env: map[string]string{"PATH": "/opt/venv/bin:/usr/bin", "LD_LIBRARY_PATH": "/opt/lib"}, WorkDir: "/work/att_gpu",
		CacheDir: "/cache/p", CPU: 8, MemoryMB: 32768,
		GPU: h.Attach([]int{1}), // the host's second GPU
	}
	if err := checkGPU(s); err != nil {
		t.Fatal(err)
	}
	got := ociSpec(bundleParams{Spec: s, Host: sandbox.HostDirs(s), CgroupsPath: "/skiff/att_gpu", NoFile: 4096, PidsOverhead: 128})

	type dev struct {
		path         string
		major, minor int64
	}
	var devs []dev
	for _, d := range got.Linux.Devices {
		if d.Type != "c" || d.FileMode == nil || *d.FileMode != 0o666 {
			t.Errorf("device %s: type %q mode %v, want a char device the runner (nobody) may open", d.Path, d.Type, d.FileMode)
		}
		devs = append(devs, dev{d.Path, d.Major, d.Minor})
	}
	want := []dev{{"/dev/nvidiactl", gputest.GPUMajor, 255}, {"/dev/nvidia-uvm", gputest.UVMMajor, 0},
		{"/dev/nvidia-uvm-tools", gputest.UVMMajor, 1}, {"/dev/nvidia1", gputest.GPUMajor, 1}}
	if !slices.Equal(devs, want) {
		t.Errorf("devices %v, want %v (never the other GPU's /dev/nvidia0)", devs, want)
	}
	var allowed []dev
	for _, r := range got.Linux.Resources.Devices {
		if !r.Allow || r.Access != "rwm" || r.Major == nil || r.Minor == nil {
			t.Errorf("device cgroup rule %+v: want an allow rule with numbers", r)
			continue
		}
		allowed = append(allowed, dev{"", *r.Major, *r.Minor})
	}
	if len(allowed) != len(want) {
		t.Errorf("device cgroup allows %v, want the %d listed devices", allowed, len(want))
	}
	for i := range allowed {
		if i < len(want) && (allowed[i].major != want[i].major || allowed[i].minor != want[i].minor) {
			t.Errorf("device cgroup rule %d: %d:%d, want %d:%d", i, allowed[i].major, allowed[i].minor, want[i].major, want[i].minor)
		}
	}
	if r := got.Linux.Resources; *r.Memory.Limit != 32768<<20 || *r.CPU.Quota != 800000 {
		t.Errorf("limits: memory %d quota %d, want 32768 MiB and 8 cores still", *r.Memory.Limit, *r.CPU.Quota)
	}

	var driver *specs.Mount
	for i, mt := range got.Mounts {
		if mt.Destination == "/usr/local/nvidia" {
			driver = &got.Mounts[i]
		}
	}
	if driver == nil || driver.Source != h.DriverDir || driver.Type != "bind" || !slices.Contains(driver.Options, "ro") ||
		!slices.Contains(driver.Options, "nosuid") || !slices.Contains(driver.Options, "nodev") {
		t.Fatalf("driver mount %+v, want %s bound read-only, nosuid, nodev at /usr/local/nvidia", driver, h.DriverDir)
	}
	if _, err := os.Stat(filepath.Join(driver.Source, "lib64", "libcuda.so.1")); err != nil {
		t.Errorf("the mounted dir lacks libcuda.so.1: %v", err)
	}
	for _, mt := range []string{"/proc", "/sys", "/dev/shm"} {
		if !slices.ContainsFunc(got.Mounts, func(m specs.Mount) bool { return m.Destination == mt }) {
			t.Errorf("no %s mount (nvproxy's CUDA needs it)", mt)
		}
	}

	env := got.Process.Env
	for _, kv := range []string{
		"PATH=/usr/local/nvidia/bin:/opt/venv/bin:/usr/bin",
		"LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/opt/lib",
		"CUDA_VISIBLE_DEVICES=0",
		"NVIDIA_VISIBLE_DEVICES=GPU-fake-1",
		"NVIDIA_DRIVER_CAPABILITIES=compute,utility",
		"SKIFF_TASK_ID=tsk_1",
	} {
		if !slices.Contains(env, kv) {
			t.Errorf("env %q lacks %s", env, kv)
		}
	}

	args := gpuArgs(s, newRunsc(Config{}.withDefaults()).runArgs("none", "/b", "/b/runsc.log", "att_gpu"))
	if args[0] != "--nvproxy" || args[len(args)-4] != "run" {
		t.Errorf("runsc args %q: want --nvproxy as a global flag before run", args)
	}
	if plain := gpuArgs(&sandbox.Spec{}, []string{"run"}); slices.Contains(plain, "--nvproxy") {
		t.Errorf("an attempt without GPUs got %q", plain)
	}
}

// TestGPUSpecRefused: a malformed attachment never reaches runsc.
func TestGPUSpecRefused(t *testing.T) {
	for name, g := range map[string]*sandbox.GPU{
		"no gpu":        {Shared: []sandbox.Device{{Path: "/dev/nvidiactl", Major: 195, Minor: 255}}, DriverDir: "/d"},
		"no nvidiactl":  {Devices: []sandbox.Device{{Path: "/dev/nvidia0", Major: 195}}, IDs: []string{"0"}, DriverDir: "/d"},
		"not nvidia":    {Devices: []sandbox.Device{{Path: "/dev/sda", Major: 8}}, IDs: []string{"0"}, Shared: []sandbox.Device{{Path: "/dev/nvidiactl", Major: 195, Minor: 255}}, DriverDir: "/d"},
		"relative dir":  {Devices: []sandbox.Device{{Path: "/dev/nvidia0", Major: 195}}, IDs: []string{"0"}, Shared: []sandbox.Device{{Path: "/dev/nvidiactl", Major: 195, Minor: 255}}, DriverDir: "d"},
		"ids not match": {Devices: []sandbox.Device{{Path: "/dev/nvidia0", Major: 195}}, Shared: []sandbox.Device{{Path: "/dev/nvidiactl", Major: 195, Minor: 255}}, DriverDir: "/d"},
	} {
		if err := checkGPU(&sandbox.Spec{GPU: g}); err == nil || !strings.Contains(err.Error(), "invalid GPU attachment") {
			t.Errorf("%s: got %v, want a refusal", name, err)
		}
	}
}
