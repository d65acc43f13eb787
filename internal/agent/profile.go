package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/gpu"
)

// DetectProfile describes this machine from /proc, quickly: its
// SingleCoreScore is the 1.0 baseline, unmeasured, and GPU memory is not
// looked up. A host that takes work from the controller's placement uses
// MeasureProfile instead.
func DetectProfile() (agentproto.ResourceProfile, error) {
	return detectProfile("/proc")
}

func detectProfile(proc string) (agentproto.ResourceProfile, error) {
	p := agentproto.ResourceProfile{SingleCoreScore: 1.0, CPUCount: runtime.NumCPU()}
	if f, err := os.Open(proc + "/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			switch {
			case k == "model name" && p.CPUModel == "":
				p.CPUModel = v
			case k == "cpu MHz" && p.CPUClockGHz == 0:
				if mhz, err := strconv.ParseFloat(v, 64); err == nil {
					p.CPUClockGHz = float64(int(mhz/10+0.5)) / 100 // two decimals
				}
			}
		}
		f.Close()
	}
	mem, err := os.ReadFile(proc + "/meminfo")
	if err != nil {
		return p, fmt.Errorf("detect memory: %w", err)
	}
	for line := range strings.Lines(string(mem)) {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return p, fmt.Errorf("detect memory: parse %q: %w", line, err)
			}
			p.MemoryTotalMB = kb / 1024
		}
	}
	gpus, err := os.ReadDir(proc + "/driver/nvidia/gpus")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return p, fmt.Errorf("detect gpus: %w", err)
	}
	p.GPUCount = len(gpus)
	return p, nil
}

// MeasureProfile is DetectProfile with what placement needs measured: the
// single-core score (MeasureSingleCore, about 130 ms of one core) and the
// memory of the GPUs (nvidia-smi's, the smallest GPU's; 0 when there is no
// GPU or no nvidia-smi). gpuMemoryMB, when positive, is the owner's
// declaration and replaces the lookup.
func MeasureProfile(ctx context.Context, gpuMemoryMB int64) (agentproto.ResourceProfile, error) {
	p, err := DetectProfile()
	p.SingleCoreScore = MeasureSingleCore()
	switch {
	case gpuMemoryMB > 0:
		p.GPUMemoryMB = gpuMemoryMB
	case p.GPUCount > 0:
		p.GPUMemoryMB = nvidiaGPUMemoryMB(ctx)
	}
	return p, err
}

// nvidiaGPUMemoryMB asks nvidia-smi for each GPU's memory and returns the
// smallest (a task may land on any of them); 0 when it cannot tell.
func nvidiaGPUMemoryMB(ctx context.Context) int64 {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "nvidia-smi", gpu.MemoryQuery...).Output()
	if err != nil {
		return 0
	}
	return gpu.SmallestMemoryMB(out)
}
