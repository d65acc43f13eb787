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
	control        string // the file written to freeze and thaw
	frozen, thawed string // what is written there
	state          string // the file that says when the freeze is complete
	done           string // what state holds then
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
			return freezer{control: p, frozen: "FROZEN", thawed: "THAWED", state: p, done: "FROZEN"}, nil
		}
		// On a hybrid host the unified hierarchy has the directory but
		// not the tasks: only a v2 cgroup holding them will do.
		if p := filepath.Join(dir, "cgroup.freeze"); exists(p) && hasProcs(dir) {
			return freezer{control: p, frozen: "1", thawed: "0", state: filepath.Join(dir, "cgroup.events"), done: "frozen 1"}, nil
		}
	}
	return freezer{}, errNoFreezer
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func hasProcs(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	return err == nil && strings.TrimSpace(string(b)) != ""
}

// freeze stops every task of the cgroup and returns once all are frozen,
// or an error after timeout.
func (f freezer) freeze(timeout time.Duration) error {
	if err := os.WriteFile(f.control, []byte(f.frozen), 0); err != nil {
		return fmt.Errorf("freeze: %w", err)
	}
	for deadline := time.Now().Add(timeout); ; time.Sleep(200 * time.Microsecond) {
		b, err := os.ReadFile(f.state)
		if err != nil {
			return fmt.Errorf("freeze: %w", err)
		}
		if strings.Contains(string(b), f.done) {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("freeze: tasks still freezing")
		}
	}
}

// thaw lets the cgroup's tasks run again (a killed task only dies once
// thawed under cgroup v1).
func (f freezer) thaw() error { return os.WriteFile(f.control, []byte(f.thawed), 0) }
