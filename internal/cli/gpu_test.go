package cli_test

import (
	"os"
	"strings"
	"testing"
)

// On a machine without an NVIDIA driver (this one), a host asked to lend
// GPUs does not start, and says why, before it enrolls; gpu-probe says the
// same as JSON and fails.
func TestHostGPUsWithoutDriver(t *testing.T) {
	if _, err := readDriverVersionHere(); err == nil {
		t.Fatal("this test needs a machine without an NVIDIA driver")
	}
	code, stdout, stderr := runMain("host", "--controller", "http://127.0.0.1:1", "--data-dir", t.TempDir(), "--gpus", "1")
	if code == 0 || !strings.Contains(stderr, "--gpus 1: gpu: no NVIDIA driver") || !strings.Contains(stderr, "/proc/driver/nvidia/version") {
		t.Errorf("skiff host --gpus 1: exit %d, stdout %q, stderr %q; want a refusal naming the missing driver", code, stdout, stderr)
	}
	code, stdout, _ = runMain("host", "gpu-probe")
	if code == 0 || !strings.Contains(stdout, `"ok": false`) || !strings.Contains(stdout, "no NVIDIA driver") || !strings.Contains(stdout, "580.159.04") {
		t.Errorf("skiff host gpu-probe: exit %d, stdout %q; want ok false, the reason and runsc's supported drivers", code, stdout)
	}
}

func readDriverVersionHere() ([]byte, error) {
	return os.ReadFile("/proc/driver/nvidia/version")
}
