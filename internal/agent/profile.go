package agent

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/internal/agentproto"
)

// DetectProfile describes this machine from /proc. SingleCoreScore is the
// 1.0 baseline: no calibration is run yet, so the controller must not rank
// hosts on it until one is (a fixed CPU-bound loop timed against the
// reference host is the plan).
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
