package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/gpu"
	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/sandbox/gvisor"
	"github.com/skiffhq/skiff/internal/server"
)

// runGPUProbe is `skiff host gpu-probe`: what a host would find, as JSON.
func runGPUProbe(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("host gpu-probe [--runsc PATH] [--gpu-driver-dir DIR]",
		"Prints, as JSON, what a GPU host finds on this machine: its GPUs (device nodes with their numbers),\n"+
			"the shared control and UVM nodes, the driver version and whether runsc's nvproxy supports it, the\n"+
			"driver's user-space files and the GPUs' memory. Exits 1, with the reason, where a host could not\n"+
			"lend GPUs. Needs no controller. See /docs/gpus.")
	runsc := fs.String("runsc", build.DefaultRunscPath, "gVisor runsc, asked which drivers it supports")
	driverDir := fs.String("gpu-driver-dir", "", "directory of the driver's user-space files (default: found through the loader cache)")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	stage, err := os.MkdirTemp("", "skiff-gpu-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	supported, serr := gpu.SupportedDrivers(ctx, *runsc)
	h, err := gpu.DiscoverLent(ctx, *runsc, *driverDir, filepath.Join(stage, "driver"), -1)
	out := struct {
		OK               bool      `json:"ok"`
		Error            string    `json:"error,omitempty"`
		Host             *gpu.Host `json:"host,omitempty"`
		SupportedDrivers []string  `json:"supported_drivers"`
	}{OK: err == nil, Host: h, SupportedDrivers: supported}
	if err == nil && serr != nil {
		err = serr
	}
	if err != nil {
		out.Error = err.Error()
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	if eerr := enc.Encode(out); eerr != nil {
		return eerr
	}
	if err != nil {
		return errors.New("no GPU this host could lend (see error above)")
	}
	return nil
}

// gpuRunResult is one attempt of `skiff host gpu-run`.
type gpuRunResult struct {
	Attempt      string          `json:"attempt"`
	Devices      []string        `json:"devices"`
	IDs          []string        `json:"ids"`
	ExitCode     int             `json:"exit_code"`
	SandboxError string          `json:"sandbox_error,omitempty"`
	Error        string          `json:"error,omitempty"`
	Result       json.RawMessage `json:"result,omitempty"`
	Stdout       string          `json:"stdout"`
	Stderr       string          `json:"stderr"`
	StartedAt    time.Time       `json:"started_at"`
	Seconds      float64         `json:"seconds"`
}

// gpuRunner runs commands as task attempts through the real gVisor driver,
// with GPUs from one allocator, as a host does.
type gpuRunner struct {
	host   *gpu.Host
	alloc  *gpu.Allocator
	driver *gvisor.Driver
	dir    string
	rootFS string
	cpu    float64
	memMB  int64
}

// newGPURunner discovers the GPUs (want of them; 0: none, for a CPU-only
// check of the same path) and makes the driver, under dir.
func newGPURunner(ctx context.Context, runsc, driverDir, rootFS, dir string, want int, cpu float64, memMB int64, log *slog.Logger) (*gpuRunner, error) {
	r := &gpuRunner{dir: dir, rootFS: rootFS, cpu: cpu, memMB: memMB}
	if want != 0 {
		h, err := gpu.DiscoverLent(ctx, runsc, driverDir, filepath.Join(dir, "gpu-driver"), want)
		if err != nil {
			return nil, err
		}
		r.host, r.alloc = h, gpu.NewAllocator(len(h.GPUs))
	}
	// The root is mounted read-only: the sandbox's mount points must be
	// there (on a host root, /run/skiff/... and /usr/local/nvidia).
	for _, p := range append(sandbox.MountPoints(), sandbox.GPUDriverRoot) {
		if err := os.MkdirAll(filepath.Join(rootFS, p), 0o755); err != nil {
			return nil, fmt.Errorf("mount point %s in %s: %w", p, rootFS, err)
		}
	}
	// On a host root, /run/skiff also holds the builder's and runsc's state
	// and is created 0700; the runner (nobody) must traverse it to reach its
	// mounts. 0711 lets it pass without listing: each state dir under it is
	// 0700 itself.
	if err := os.Chmod(filepath.Join(rootFS, sandbox.ContainerRoot), 0o711); err != nil {
		return nil, fmt.Errorf("mount point %s in %s: %w", sandbox.ContainerRoot, rootFS, err)
	}
	d, err := gvisor.New(gvisor.Config{RunscPath: runsc, StateDir: filepath.Join(dir, "runsc"), CgroupParent: "skiff-gpu-" + server.CgroupSuffix(dir), Logger: log})
	if err != nil {
		return nil, err
	}
	r.driver = d
	return r, nil
}

// run runs args as attempt id with n GPUs.
func (r *gpuRunner) run(ctx context.Context, id string, n int, args []string, env map[string]string, timeout time.Duration) gpuRunResult {
	res := gpuRunResult{Attempt: id}
	spec := sandbox.Spec{AttemptID: id, TaskID: id, RootFS: r.rootFS, Args: args, Env: env, Payload: []byte("{}"),
		WorkDir: filepath.Join(r.dir, "work", id), CacheDir: filepath.Join(r.dir, "cache"), CPU: r.cpu, MemoryMB: r.memMB, Timeout: timeout}
	if n > 0 {
		if r.host == nil {
			res.Error = "no GPUs were discovered"
			return res
		}
		idx, err := r.alloc.Acquire(id, n)
		if err != nil {
			res.Error = err.Error()
			return res
		}
		defer r.alloc.Release(id) // after Run: the sandbox is gone
		spec.GPU = r.host.Attach(idx)
		for _, d := range spec.GPU.Devices {
			res.Devices = append(res.Devices, d.Path)
		}
		res.IDs = spec.GPU.IDs
	}
	if err := os.MkdirAll(filepath.Dir(spec.WorkDir), 0o700); err != nil {
		res.Error = err.Error()
		return res
	}
	defer os.RemoveAll(spec.WorkDir)
	var stdout, stderr lockedBuffer
	spec.Stdout, spec.Stderr = &stdout, &stderr
	res.StartedAt = time.Now()
	o, err := r.driver.Run(ctx, spec)
	res.Seconds = time.Since(res.StartedAt).Seconds()
	res.Stdout, res.Stderr = tail(stdout.String(), 4000), tail(stderr.String(), 4000)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.ExitCode, res.SandboxError = o.ExitCode, o.SandboxError
	if json.Valid(o.Result) {
		res.Result = o.Result
	}
	return res
}

func (r *gpuRunner) close(ctx context.Context) {
	_ = r.driver.Cleanup(ctx)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// lockedBuffer is a bytes.Buffer safe for the driver's output goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runGPURun is `skiff host gpu-run`: a check for operators and
// scripts/gpu-check.sh, not a way to run work.
func runGPURun(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("host gpu-run [flags] -- COMMAND [ARG...]",
		"Runs COMMAND as --attempts concurrent task attempts through the gVisor driver a host uses, each\n"+
			"with --gpus of this machine's GPUs (handed out as a host does: never one GPU to two attempts),\n"+
			"on the root filesystem --rootfs (read-only; \"/\" uses this machine's own, as the GPU check does).\n"+
			"Prints one JSON object per attempt: its GPUs, exit code, result file, output. A diagnostic for\n"+
			"operators (scripts/gpu-check.sh); needs root and runsc. See /docs/gpus.")
	runsc := fs.String("runsc", build.DefaultRunscPath, "gVisor runsc")
	driverDir := fs.String("gpu-driver-dir", "", "directory of the driver's user-space files (default: found through the loader cache)")
	rootFS := fs.String("rootfs", "/", "root filesystem of the attempts (mounted read-only)")
	gpus := fs.Int("gpus", 1, "GPUs per attempt (0: none, the same path without a GPU)")
	attempts := fs.Int("attempts", 1, "attempts run at once")
	cpus := fs.Float64("cpus", 4, "CPU limit of each attempt in cores")
	memMB := fs.Int64("memory-mb", 16384, "memory limit of each attempt in MiB")
	timeout := fs.Duration("timeout", 3*time.Minute, "timeout of each attempt")
	dir := fs.String("dir", "", "work directory (default: a temporary one, removed at the end)")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	rest := fs.Args() // after "--" or the first word that is not a flag
	if len(rest) == 0 || *attempts < 1 || *gpus < 0 {
		fs.Usage()
		return errors.New("a COMMAND, --attempts of at least 1 and --gpus of at least 0 are needed")
	}
	work, err := *dir, error(nil)
	if work == "" {
		if work, err = os.MkdirTemp("", "skiff-gpu-run-"); err != nil {
			return err
		}
		defer os.RemoveAll(work)
	}
	log := slog.New(slog.NewJSONHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	want := 0
	if *gpus > 0 {
		want = -1 // all this machine has; the allocator hands them out
	}
	r, err := newGPURunner(ctx, *runsc, *driverDir, *rootFS, work, want, *cpus, *memMB, log)
	if err != nil {
		return err
	}
	defer r.close(context.WithoutCancel(ctx))
	results := make([]gpuRunResult, *attempts)
	var wg sync.WaitGroup
	for i := range *attempts {
		wg.Go(func() {
			results[i] = r.run(ctx, fmt.Sprintf("gpurun-%d-%d", os.Getpid(), i), *gpus, rest, nil, *timeout)
		})
	}
	wg.Wait()
	enc := json.NewEncoder(e.stdout)
	failed := 0
	for _, res := range results {
		if err := enc.Encode(res); err != nil {
			return err
		}
		if res.Error != "" || res.ExitCode != 0 {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d attempts failed", failed, len(results))
	}
	return nil
}

// hostSubcommand runs `skiff host gpu-probe` and `skiff host gpu-run`;
// handled reports whether args named one.
func hostSubcommand(ctx context.Context, e *env, args []string) (handled bool, err error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return false, nil
	}
	switch args[0] {
	case "gpu-probe":
		return true, runGPUProbe(ctx, e, args[1:])
	case "gpu-run":
		return true, runGPURun(ctx, e, args[1:])
	}
	return false, nil
}

// hostGPUs is what `skiff host --gpus` lends: nil without --gpus, else
// the GPUs found with their driver, or an error that stops the host (an
// owner who lends GPUs is told why none can be lent, rather than the host
// taking GPU work it cannot do). The profile gets their memory unless the
// owner declared it.
func hostGPUs(ctx context.Context, f *remoteHostFlags, dataDir string, prof *agentproto.ResourceProfile, log *slog.Logger) (*gpu.Host, error) {
	if f.gpus == 0 {
		return nil, nil
	}
	if f.driver != "gvisor" {
		return nil, errors.New("--gpus needs --driver gvisor: only its sandboxes attach GPUs")
	}
	h, err := gpu.DiscoverLent(ctx, f.runsc, f.gpuDriverDir, filepath.Join(dataDir, "gpu-driver"), f.gpus)
	if err != nil {
		return nil, fmt.Errorf("--gpus %d: %w (see /docs/gpus)", f.gpus, err)
	}
	if f.gpuMemoryMB == 0 && h.MemoryMB > 0 {
		prof.GPUMemoryMB = h.MemoryMB
	}
	log.Info("gpus found", "gpus", len(h.GPUs), "driver_version", h.DriverVersion, "gpu_memory_mb", prof.GPUMemoryMB, "driver_files", len(h.Files))
	return h, nil
}

// attachable is how many GPUs h lends.
func attachable(h *gpu.Host) int {
	if h == nil {
		return 0
	}
	return len(h.GPUs)
}
