package gpu

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skiffhq/skiff/internal/sandbox"
)

// ErrNoDriver is returned (wrapped) by Discover on a machine without a
// loaded NVIDIA kernel module.
var ErrNoDriver = errors.New("no NVIDIA driver")

// Options configure Discover.
type Options struct {
	// Root is the machine's root ("/" in production): the device nodes,
	// /proc and /sys are read under it, and so are the tool directories
	// searched when DriverDir is empty.
	Root string
	// DriverDir is where the driver's user-space files are (the host's
	// --gpu-driver-dir): it and its lib64/, lib/ and bin/ are searched.
	// Empty: the loader cache (Ldconfig) names the libraries.
	DriverDir string
	// StageDir is where the files are gathered for sandboxes (hard links
	// where the filesystem allows, copies elsewhere). It is replaced.
	StageDir string
	// Supported are the driver versions runsc's nvproxy supports
	// (SupportedDrivers); a driver outside them is refused.
	Supported []string
	// Ldconfig prints the loader cache (`ldconfig -p`); nil runs it.
	Ldconfig func(ctx context.Context) ([]byte, error)
}

// Discover finds the GPUs, checks the driver and gathers its files into
// opts.StageDir. Every failure says what is missing and where it looked.
func Discover(ctx context.Context, opts Options) (*Host, error) {
	if opts.Root == "" {
		opts.Root = "/"
	}
	if !filepath.IsAbs(opts.StageDir) {
		return nil, fmt.Errorf("gpu: stage dir %q: must be absolute", opts.StageDir)
	}
	version, err := driverVersion(opts.Root)
	if err != nil {
		return nil, err
	}
	if err := CheckSupported(version, opts.Supported); err != nil {
		return nil, err
	}
	h := &Host{DriverVersion: version}
	if h.GPUs, h.Shared, err = devices(opts.Root); err != nil {
		return nil, err
	}
	files, err := driverFiles(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := checkUserSpace(files, version); err != nil {
		return nil, err
	}
	if err := stage(files, opts.StageDir); err != nil {
		return nil, fmt.Errorf("gpu: gather the driver's files into %s: %w", opts.StageDir, err)
	}
	h.DriverDir = filepath.Clean(opts.StageDir)
	for _, f := range files {
		h.Files = append(h.Files, f.rel())
		h.Sources = append(h.Sources, f.src)
	}
	h.MemoryMB = memoryMB(ctx, h.DriverDir)
	return h, nil
}

// driverVersion reads the kernel module's version from
// /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX x86_64 Kernel
// Module  580.159.04  ...") or /sys/module/nvidia/version.
func driverVersion(root string) (string, error) {
	procPath := filepath.Join(root, "proc/driver/nvidia/version")
	if b, err := os.ReadFile(procPath); err == nil {
		if m := procVersion.FindSubmatch(b); m != nil {
			return string(m[1]), nil
		}
		return "", fmt.Errorf("gpu: %s names no version: %q", procPath, firstLine(b))
	}
	sysPath := filepath.Join(root, "sys/module/nvidia/version")
	b, err := os.ReadFile(sysPath)
	if err != nil {
		return "", fmt.Errorf("gpu: %w: neither %s nor %s exists (is the nvidia kernel module loaded?)", ErrNoDriver, procPath, sysPath)
	}
	v := strings.TrimSpace(string(b))
	if !versionPattern.MatchString(v) {
		return "", fmt.Errorf("gpu: %s: %q is not a driver version", sysPath, v)
	}
	return v, nil
}

var (
	versionPattern = regexp.MustCompile(`^[0-9]+\.[0-9]+(\.[0-9]+)?$`)
	procVersion    = regexp.MustCompile(`Kernel Module(?:\s+for\s+\S+)?\s+([0-9]+\.[0-9]+(?:\.[0-9]+)?)\s`)
)

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	return s
}

// CheckSupported refuses a driver version runsc's nvproxy does not
// support, naming those it does.
func CheckSupported(version string, supported []string) error {
	if slices.Contains(supported, version) {
		return nil
	}
	if len(supported) == 0 {
		return fmt.Errorf("gpu: cannot tell whether runsc supports NVIDIA driver %s: it listed no supported drivers", version)
	}
	return fmt.Errorf("gpu: NVIDIA driver %s is not supported by this runsc's nvproxy; install one of %s, or a runsc that supports %s",
		version, strings.Join(supported, ", "), version)
}

// SupportedDrivers asks runsc which driver versions nvproxy supports.
func SupportedDrivers(ctx context.Context, runsc string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, runsc, "nvproxy", "list-supported-drivers").Output()
	if err != nil {
		return nil, fmt.Errorf("gpu: %s nvproxy list-supported-drivers: %w", runsc, err)
	}
	var vs []string
	for _, f := range strings.Fields(string(out)) {
		if versionPattern.MatchString(f) {
			vs = append(vs, f)
		}
	}
	return vs, nil
}

// devices finds the GPU nodes (/dev/nvidiaN) and the shared ones, their
// numbers read with stat. Where the driver lists its GPUs under
// /proc/driver/nvidia/gpus, only those are taken (a node can outlive its
// GPU), with their UUID and model.
func devices(root string) ([]GPU, []sandbox.Device, error) {
	devDir := filepath.Join(root, "dev")
	entries, err := os.ReadDir(devDir)
	if err != nil {
		return nil, nil, fmt.Errorf("gpu: read %s: %w", devDir, err)
	}
	info, err := procGPUs(root)
	if err != nil {
		return nil, nil, err
	}
	var gpus []GPU
	shared := map[string]sandbox.Device{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "nvidia") {
			continue
		}
		n, isGPU := strings.CutPrefix(name, "nvidia")
		idx, err := strconv.Atoi(n)
		isGPU = isGPU && err == nil && idx >= 0 && strconv.Itoa(idx) == n
		if !isGPU && name != "nvidiactl" && name != "nvidia-uvm" && name != "nvidia-uvm-tools" {
			continue
		}
		d, err := charDevice(filepath.Join(devDir, name))
		if err != nil {
			return nil, nil, err
		}
		d.Path = "/dev/" + name
		if !isGPU {
			shared[name] = d
			continue
		}
		g := GPU{Index: idx, Device: d}
		if info != nil {
			i, listed := info[int(d.Minor)]
			if !listed {
				continue
			}
			g.UUID, g.Model = i.uuid, i.model
		}
		gpus = append(gpus, g)
	}
	for _, need := range []string{"nvidiactl", "nvidia-uvm"} {
		if _, ok := shared[need]; !ok {
			return nil, nil, fmt.Errorf("gpu: %s is missing (CUDA needs it; `nvidia-modprobe -u -c=0` creates the UVM nodes)", filepath.Join(devDir, need))
		}
	}
	if len(gpus) == 0 {
		return nil, nil, fmt.Errorf("gpu: no GPU device node (%s/nvidia0, ...) of a GPU the driver lists", devDir)
	}
	slices.SortFunc(gpus, func(a, b GPU) int { return a.Index - b.Index })
	var sh []sandbox.Device
	for _, name := range []string{"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"} {
		if d, ok := shared[name]; ok {
			sh = append(sh, d)
		}
	}
	return gpus, sh, nil
}

// charDevice stats a device node: it must be a character device.
func charDevice(path string) (sandbox.Device, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return sandbox.Device{}, fmt.Errorf("gpu: stat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return sandbox.Device{}, fmt.Errorf("gpu: %s is not a character device", path)
	}
	return sandbox.Device{Major: int64(unix.Major(uint64(st.Rdev))), Minor: int64(unix.Minor(uint64(st.Rdev)))}, nil
}

type gpuInfo struct{ uuid, model string }

// procGPUs reads /proc/driver/nvidia/gpus/*/information by device minor;
// nil when the directory is absent.
func procGPUs(root string) (map[int]gpuInfo, error) {
	dir := filepath.Join(root, "proc/driver/nvidia/gpus")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("gpu: read %s: %w", dir, err)
	}
	out := map[int]gpuInfo{}
	for _, e := range entries {
		f, err := os.Open(filepath.Join(dir, e.Name(), "information"))
		if err != nil {
			continue
		}
		minor, info := -1, gpuInfo{}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			v = strings.TrimSpace(v)
			switch strings.TrimSpace(k) {
			case "Device Minor":
				if n, err := strconv.Atoi(v); err == nil {
					minor = n
				}
			case "GPU UUID":
				info.uuid = v
			case "Model":
				info.model = v
			}
		}
		f.Close()
		if minor >= 0 {
			out[minor] = info
		}
	}
	return out, nil
}

// memoryMB asks the gathered nvidia-smi for each GPU's memory and returns
// the smallest; 0 when it cannot tell.
func memoryMB(ctx context.Context, driverDir string) int64 {
	smi := filepath.Join(driverDir, "bin", "nvidia-smi")
	if _, err := os.Stat(smi); err != nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, smi, MemoryQuery...)
	cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+filepath.Join(driverDir, "lib64"))
	out, err := cmd.Output()
	if err != nil {
		return 0
	}
	return SmallestMemoryMB(out)
}

// MemoryQuery is the nvidia-smi query whose output SmallestMemoryMB reads.
var MemoryQuery = []string{"--query-gpu=memory.total", "--format=csv,noheader,nounits"}

// SmallestMemoryMB reads nvidia-smi's answer to MemoryQuery (one line per
// GPU, in MiB) and returns the smallest GPU's memory (a task may land on
// any of them); 0 when a line is not a positive number.
func SmallestMemoryMB(out []byte) int64 {
	var least int64
	for line := range strings.Lines(string(out)) {
		mb, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
		if err != nil || mb <= 0 {
			return 0
		}
		if least == 0 || mb < least {
			least = mb
		}
	}
	return least
}
