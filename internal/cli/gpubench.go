package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// gpuBenchScript is the CUDA task of `skiff bench --gpu`, the same run on
// the bare host and in the sandbox: PyTorch, one bf16 matmul of size N to
// the first finished kernel, then the throughput of ten after three
// warm-ups. It prints its figures as one "RESULT {json}" line, with the
// wall-clock time of the first kernel so the caller can time the cold
// start from its own clock (gVisor serves the host's time).
const gpuBenchScript = `
import json, os, sys, time
n = int(sys.argv[1])
t0 = time.time()
import torch
t_import = time.time()
ok = torch.cuda.is_available()
x = torch.randn(n, n, device='cuda', dtype=torch.bfloat16)
y = x @ x
torch.cuda.synchronize()
t_first = time.time()
for _ in range(3): y = x @ x
torch.cuda.synchronize()
s = time.time()
for _ in range(10): y = x @ x
torch.cuda.synchronize()
e = time.time()
r = {"cuda": ok, "devices": torch.cuda.device_count(), "name": torch.cuda.get_device_name(0),
     "import_s": t_import - t0, "first_kernel_unix": t_first, "tflops": 10 * 2 * n**3 / (e - s) / 1e12,
     "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"), "nvidia_visible_devices": os.environ.get("NVIDIA_VISIBLE_DEVICES")}
print("RESULT " + json.dumps(r), flush=True)
p = os.environ.get("SKIFF_TASK_RESULT")
if p:
    try:
        open(p, "w").write(json.dumps(r))
    except OSError as e:  # the figures are in the RESULT line; say why the file is missing
        print("result file not written: %s" % e, flush=True)
`

// gpuBenchFlags configure `skiff bench --gpu`.
type gpuBenchFlags struct {
	python, rootFS, driverDir string
	size, rounds              int
	cpus                      float64
	memoryMB                  int64
}

func (g *gpuBenchFlags) register(fs interface {
	StringVar(*string, string, string, string)
	IntVar(*int, string, int, string)
	Float64Var(*float64, string, float64, string)
	Int64Var(*int64, string, int64, string)
}) {
	fs.StringVar(&g.python, "gpu-python", "python3", "with --gpu: the python with PyTorch that runs the CUDA task, on the host and in the sandbox (a path inside --gpu-rootfs, which is this machine's own by default)")
	fs.StringVar(&g.rootFS, "gpu-rootfs", "/", "with --gpu: the sandbox's root filesystem, mounted read-only")
	fs.StringVar(&g.driverDir, "gpu-driver-dir", "", "with --gpu: directory of the driver's user-space files (default: found through the loader cache)")
	fs.IntVar(&g.size, "gpu-size", 8192, "with --gpu: the matmul's size N (N×N bf16)")
	fs.IntVar(&g.rounds, "gpu-rounds", 2, "with --gpu: rounds, each one bare-host run then one sandbox run")
	fs.Float64Var(&g.cpus, "gpu-cpus", 8, "with --gpu: the sandbox's CPU limit in cores")
	fs.Int64Var(&g.memoryMB, "gpu-memory-mb", 32768, "with --gpu: the sandbox's memory limit in MiB")
}

// gpuBenchRun is one run of the CUDA task.
type gpuBenchRun struct {
	Where       string  `json:"where"` // "host" or "sandbox"
	Round       int     `json:"round"`
	OK          bool    `json:"ok"`
	Error       string  `json:"error,omitempty"`
	TFLOPS      float64 `json:"tflops"`
	ColdStartS  float64 `json:"cold_start_s"` // process (or sandbox) start to the first finished kernel
	ImportS     float64 `json:"import_torch_s"`
	Device      string  `json:"device,omitempty"`
	CUDAVisible string  `json:"cuda_visible_devices,omitempty"`
	NVVisible   string  `json:"nvidia_visible_devices,omitempty"`
}

type gpuBenchResult struct {
	CUDA                 bool    `json:"cuda"`
	Devices              int     `json:"devices"`
	Name                 string  `json:"name"`
	ImportS              float64 `json:"import_s"`
	FirstKernelUnix      float64 `json:"first_kernel_unix"`
	TFLOPS               float64 `json:"tflops"`
	CUDAVisibleDevices   *string `json:"cuda_visible_devices"`
	NVIDIAVisibleDevices *string `json:"nvidia_visible_devices"`
}

// runGPUBench is `skiff bench --gpu`: the CUDA task on the bare host and in
// a one-GPU sandbox through the host's gVisor driver, side by side.
func runGPUBench(ctx context.Context, e *env, runsc string, g gpuBenchFlags, asJSON bool) error {
	python := g.python
	if !filepath.IsAbs(python) {
		p, err := exec.LookPath(python)
		if err != nil {
			return fmt.Errorf("--gpu-python %s: %w", python, err)
		}
		python = p
	}
	work, err := os.MkdirTemp("", "skiff-bench-gpu-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	log := slog.New(slog.NewJSONHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	r, err := newGPURunner(ctx, runsc, g.driverDir, g.rootFS, work, 1, g.cpus, g.memoryMB, log)
	if err != nil {
		return err
	}
	defer r.close(context.WithoutCancel(ctx))
	fmt.Fprintf(e.stderr, "bench --gpu: %s (driver %s), %s, matmul %d³ bf16, %d rounds\n",
		r.host.GPUs[0].Model, r.host.DriverVersion, python, g.size, g.rounds)
	args := []string{python, "-c", gpuBenchScript, strconv.Itoa(g.size)}
	var runs []gpuBenchRun
	for round := 1; round <= g.rounds; round++ {
		runs = append(runs, benchOnHost(ctx, args, round))
		fmt.Fprintf(e.stderr, "  round %d host: %s\n", round, runs[len(runs)-1].summary())
		runs = append(runs, benchInSandbox(ctx, r, args, round))
		fmt.Fprintf(e.stderr, "  round %d sandbox: %s\n", round, runs[len(runs)-1].summary())
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"driver_version": r.host.DriverVersion, "gpu": r.host.GPUs[0], "size": g.size, "runs": runs})
	}
	writeGPUBench(e.stdout, runs)
	for _, run := range runs {
		if !run.OK {
			return fmt.Errorf("a %s run failed: %s", run.Where, run.Error)
		}
	}
	return nil
}

func (b gpuBenchRun) summary() string {
	if !b.OK {
		return "FAILED: " + b.Error
	}
	return fmt.Sprintf("%.0f TFLOP/s, cold start %.2f s (import torch %.2f s)", b.TFLOPS, b.ColdStartS, b.ImportS)
}

func writeGPUBench(w io.Writer, runs []gpuBenchRun) {
	fmt.Fprintf(w, "%-8s %-6s %10s %14s %12s  %s\n", "where", "round", "TFLOP/s", "cold start s", "import s", "device (CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES)")
	for _, r := range runs {
		if !r.OK {
			fmt.Fprintf(w, "%-8s %-6d FAILED: %s\n", r.Where, r.Round, r.Error)
			continue
		}
		fmt.Fprintf(w, "%-8s %-6d %10.0f %14.2f %12.2f  %s (%s, %s)\n", r.Where, r.Round, r.TFLOPS, r.ColdStartS, r.ImportS, r.Device, r.CUDAVisible, r.NVVisible)
	}
	var host, sb []gpuBenchRun
	for _, r := range runs {
		if r.OK && r.Where == "host" {
			host = append(host, r)
		} else if r.OK {
			sb = append(sb, r)
		}
	}
	if len(host) > 0 && len(sb) > 0 {
		h, s := host[len(host)-1], sb[len(sb)-1]
		fmt.Fprintf(w, "last round: sandbox/host throughput %.3f, cold start %+.2f s in the sandbox\n", s.TFLOPS/h.TFLOPS, s.ColdStartS-h.ColdStartS)
	}
}

// benchOnHost runs the task as a plain process of this machine.
func benchOnHost(ctx context.Context, args []string, round int) gpuBenchRun {
	run := gpuBenchRun{Where: "host", Round: round}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	start := time.Now()
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		run.Error = fmt.Sprintf("%v: %s", err, tail(string(out), 1500))
		return run
	}
	return run.parse(string(out), start)
}

// benchInSandbox runs the task as an attempt with one GPU.
func benchInSandbox(ctx context.Context, r *gpuRunner, args []string, round int) gpuBenchRun {
	run := gpuBenchRun{Where: "sandbox", Round: round}
	res := r.run(ctx, fmt.Sprintf("gpubench-%d-%d", os.Getpid(), round), 1, args, nil, 3*time.Minute)
	if res.Error != "" || res.ExitCode != 0 {
		run.Error = fmt.Sprintf("exit %d %s %s: %s", res.ExitCode, res.Error, res.SandboxError, tail(res.Stdout+res.Stderr, 1500))
		return run
	}
	return run.parse(res.Stdout, res.StartedAt)
}

// parse reads the task's RESULT line; the cold start runs from start to
// its first finished kernel.
func (b gpuBenchRun) parse(out string, start time.Time) gpuBenchRun {
	for line := range strings.Lines(out) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "RESULT ")
		if !ok {
			continue
		}
		var r gpuBenchResult
		if err := json.Unmarshal([]byte(rest), &r); err != nil {
			b.Error = "bad RESULT line: " + err.Error()
			return b
		}
		if !r.CUDA {
			b.Error = "torch.cuda.is_available() is false"
			return b
		}
		b.OK, b.TFLOPS, b.ImportS, b.Device = true, r.TFLOPS, r.ImportS, r.Name
		b.ColdStartS = r.FirstKernelUnix - float64(start.UnixNano())/1e9
		if r.CUDAVisibleDevices != nil {
			b.CUDAVisible = *r.CUDAVisibleDevices
		}
		if r.NVIDIAVisibleDevices != nil {
			b.NVVisible = *r.NVIDIAVisibleDevices
		}
		return b
	}
	b.Error = "no RESULT line in: " + tail(out, 1500)
	return b
}
