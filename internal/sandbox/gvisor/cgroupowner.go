package gvisor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A driver's cgroup parent (skiff-<hash of the data dir>) outlives a server
// or host that is killed: Cleanup at the next start on the same data dir
// empties it, but a killed process whose data dir is never used again (a
// test's, a benchmark's) would leave it forever. So every driver claims its
// parent in a machine-wide registry directory: one file per parent, held
// under an exclusive flock for the life of the process. The kernel drops
// the lock when the process dies however it dies, so a file whose lock can
// be taken names the parent of a dead owner, which any later driver may
// remove. A registry-wide lock orders claims against reaps, so that a
// parent is never claimed while it is being reaped, and no owner file is
// unlinked while someone else holds it open.

const (
	ownerSuffix  = ".owner"
	registryLock = ".registry.lock" // never an owner: parents start alphanumeric
)

// lockRegistry takes the registry-wide lock; the returned func drops it.
func lockRegistry(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cgroup registry: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, registryLock), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cgroup registry: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("cgroup registry: lock: %w", err)
	}
	return func() { f.Close() }, nil
}

// claimCgroupParent registers parent as owned by this process, returning
// the open owner file whose lock says so (keep it open). Another live
// owner of the same parent is an error: the two would remove each other's
// cgroups.
func claimCgroupParent(dir, parent string) (*os.File, error) {
	unlock, err := lockRegistry(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	f, err := os.OpenFile(filepath.Join(dir, parent+ownerSuffix), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("claim cgroup parent: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("claim cgroup parent %s: another live process on this machine uses it", parent)
		}
		return nil, fmt.Errorf("claim cgroup parent %s: %w", parent, err)
	}
	// Say who, for whoever reads the registry by hand.
	_ = f.Truncate(0)
	_, _ = fmt.Fprintf(f, "pid %d\n", os.Getpid())
	return f, nil
}

// reapDeadCgroupParents removes the cgroup parents whose owners have died
// (their owner files' locks are free), skipping self, and returns the
// parents it removed. A parent that is still busy (sandboxes of the dead
// owner still running) keeps its owner file, so a later start tries again.
func reapDeadCgroupParents(dir, self string) ([]string, error) {
	unlock, err := lockRegistry(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cgroup registry: %w", err)
	}
	var reaped []string
	var errs []error
	for _, e := range entries {
		parent, ok := strings.CutSuffix(e.Name(), ownerSuffix)
		if !ok || parent == self || e.IsDir() {
			continue
		}
		done, err := reapIfDead(filepath.Join(dir, e.Name()), parent)
		if err != nil {
			errs = append(errs, err)
		}
		if done {
			reaped = append(reaped, parent)
		}
	}
	return reaped, errors.Join(errs...)
}

// reapIfDead removes parent's cgroups and its owner file at path when no
// live process holds the file's lock.
func reapIfDead(path, parent string) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cgroup registry: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return false, nil // alive
	}
	if err := removeCgroup("/" + parent); err != nil {
		if isBusy(err) {
			return false, nil
		}
		return false, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("cgroup registry: %w", err)
	}
	return true, nil
}

// isBusy reports an rmdir refused because tasks or child cgroups remain.
func isBusy(err error) bool {
	return errors.Is(err, syscall.EBUSY) || errors.Is(err, syscall.ENOTEMPTY)
}
