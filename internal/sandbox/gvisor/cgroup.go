package gvisor

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// runsc creates the attempt's cgroup (linux.cgroupsPath) in every mounted
// hierarchy and normally removes it on exit, but a run killed from outside
// leaves empty directories behind (toolchain notes, section 2f). These
// helpers remove them; rmdir only ever succeeds on an empty cgroup, so they
// cannot disturb a live one.

// cgroupMount is one mounted cgroup hierarchy.
type cgroupMount struct {
	dir  string // where it is mounted
	root string // the hierarchy path mounted there ("/" normally)
}

// cgroupMounts reads the mounted cgroup (v1) and cgroup2 hierarchies.
func cgroupMounts() ([]cgroupMount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	defer f.Close()
	var out []cgroupMount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Fields: id parent major:minor root mountpoint opts [optional...] - fstype source superopts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, postFields := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(postFields) < 1 {
			continue
		}
		if fstype := postFields[0]; fstype != "cgroup" && fstype != "cgroup2" {
			continue
		}
		out = append(out, cgroupMount{dir: unescapeMountinfo(fields[4]), root: unescapeMountinfo(fields[3])})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	return out, nil
}

// unescapeMountinfo undoes the octal escapes (\040 for space) of mountinfo.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// hostPath maps a hierarchy path ("/skiff/att_1") to its directory under
// m, or "" when the mount does not show that part of the hierarchy.
func (m cgroupMount) hostPath(cgPath string) string {
	rel, ok := strings.CutPrefix(cgPath, strings.TrimSuffix(m.root, "/"))
	if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
		return ""
	}
	return filepath.Join(m.dir, rel)
}

// removeCgroup removes the cgroup directory at cgPath in every hierarchy,
// children first. Missing directories are fine; a busy one is an error.
func removeCgroup(cgPath string) error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range mounts {
		if dir := m.hostPath(cgPath); dir != "" {
			errs = append(errs, rmdirTree(dir))
		}
	}
	return errors.Join(errs...)
}

// removeEmptyChildren removes every removable child cgroup of parent in
// every hierarchy and returns how many it removed; busy ones are skipped.
func removeEmptyChildren(parent string) (int, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range mounts {
		dir := m.hostPath(parent)
		if dir == "" {
			continue
		}
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("read cgroup dir: %w", err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			if err := rmdirTree(filepath.Join(dir, e.Name())); err == nil {
				n++
			}
		}
	}
	return n, nil
}

// rmdirTree removes an empty cgroup directory and its empty sub-cgroups.
// Only rmdir is used: the files in a cgroup directory are not removable,
// and rmdir fails with EBUSY while tasks remain.
func rmdirTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read cgroup dir: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := rmdirTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := syscall.Rmdir(dir); err != nil && !errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("remove cgroup %s: %w", dir, err)
	}
	return nil
}
