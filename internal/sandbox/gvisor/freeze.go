package gvisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A warm sandbox's runner is not the sandbox's init, so when it exits
// whatever it started may still run; its files are read only once nothing
// in the sandbox can write them any more. Freezing the sandbox's cgroup
// gets there sooner than killing the sandbox and waiting for it to be gone
// (the kernel tears down the sentry's address space before the process is
// reaped): the frozen sandbox is killed after its result is read, off the
// attempt's path.

// errNoFreezer says the sandbox's cgroup has no freezer here; the caller
// kills and waits instead.
var errNoFreezer = errors.New("no cgroup freezer for the sandbox")

// freezer is the freezer of one cgroup: cgroup v1's freezer.state, or
// cgroup v2's cgroup.freeze with cgroup.events.
type freezer struct {
	v1 string // freezer.state path, or ""
	v2 string // the cgroup v2 directory, or ""
}

// findFreezer locates the freezer of the cgroup at cgPath.
func findFreezer(cgPath string) (freezer, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return freezer{}, err
	}
	for _, m := range mounts {
		dir := m.hostPath(cgPath)
		if dir == "" {
			continue
		}
		if p := filepath.Join(dir, "freezer.state"); exists(p) {
			return freezer{v1: p}, nil
		}
		if exists(filepath.Join(dir, "cgroup.freeze")) && exists(filepath.Join(dir, "cgroup.procs")) && hasProcs(dir) {
			return freezer{v2: dir}, nil
		}
	}
	return freezer{}, errNoFreezer
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// hasProcs reports whether a cgroup v2 directory holds processes: on a
// hybrid host the unified hierarchy has the directory but not the tasks.
func hasProcs(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	return err == nil && strings.TrimSpace(string(b)) != ""
}

// freeze stops every task of the cgroup and returns once all are frozen,
// or an error after timeout.
func (f freezer) freeze(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	switch {
	case f.v1 != "":
		if err := os.WriteFile(f.v1, []byte("FROZEN"), 0); err != nil {
			return fmt.Errorf("freeze: %w", err)
		}
		for {
			b, err := os.ReadFile(f.v1)
			if err != nil {
				return fmt.Errorf("freeze: %w", err)
			}
			if strings.TrimSpace(string(b)) == "FROZEN" {
				return nil
			}
			if time.Now().After(deadline) {
				return errors.New("freeze: tasks still freezing")
			}
			time.Sleep(200 * time.Microsecond)
		}
	case f.v2 != "":
		if err := os.WriteFile(filepath.Join(f.v2, "cgroup.freeze"), []byte("1"), 0); err != nil {
			return fmt.Errorf("freeze: %w", err)
		}
		for {
			b, err := os.ReadFile(filepath.Join(f.v2, "cgroup.events"))
			if err != nil {
				return fmt.Errorf("freeze: %w", err)
			}
			if strings.Contains(string(b), "frozen 1") {
				return nil
			}
			if time.Now().After(deadline) {
				return errors.New("freeze: tasks still freezing")
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	return errNoFreezer
}

// thaw lets the cgroup's tasks run again (a killed task only dies once
// thawed under cgroup v1).
func (f freezer) thaw() error {
	switch {
	case f.v1 != "":
		return os.WriteFile(f.v1, []byte("THAWED"), 0)
	case f.v2 != "":
		return os.WriteFile(filepath.Join(f.v2, "cgroup.freeze"), []byte("0"), 0)
	}
	return nil
}
