package buildtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WantNothingLeft fails when a process still mentions dataDir (buildah, its
// runtime wrapper, runsc's sandbox or gofer) or a build is still mounted.
func WantNothingLeft(t testing.TB, dataDir string) {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if args := strings.ReplaceAll(string(cmdline), "\x00", " "); strings.Contains(args, dataDir) {
			t.Errorf("process %s is still running: %s", e.Name(), args)
		}
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		if strings.Contains(line, dataDir) && strings.Contains(line, "/merged") {
			t.Errorf("a working container is still mounted: %s", line)
		}
	}
}
