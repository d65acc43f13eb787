package agent

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/skiffhq/skiff/internal/agentproto"
)

func TestDetectProfile(t *testing.T) {
	t.Parallel()
	proc := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(proc, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cpuinfo", "processor\t: 0\nmodel name\t: Test CPU @ 2.10GHz\ncpu MHz\t\t: 2095.078\n\nprocessor\t: 1\nmodel name\t: Other\ncpu MHz\t\t: 1.0\n")
	write("meminfo", "MemTotal:        8167848 kB\nMemFree:  1 kB\n")
	write("driver/nvidia/gpus/0000:01:00.0/information", "x")
	got, err := detectProfile(proc)
	if err != nil {
		t.Fatal(err)
	}
	want := agentproto.ResourceProfile{CPUModel: "Test CPU @ 2.10GHz", CPUClockGHz: 2.1, SingleCoreScore: 1, CPUCount: runtime.NumCPU(), MemoryTotalMB: 7976, GPUCount: 1}
	if got != want {
		t.Errorf("profile: got %+v, want %+v", got, want)
	}
	if _, err := DetectProfile(); err != nil {
		t.Errorf("DetectProfile on this machine: %v", err)
	}
}
