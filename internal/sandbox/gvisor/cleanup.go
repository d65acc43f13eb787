package gvisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// nullNetNSName is the file under runsc's --root where it bind-mounts the
// gofers' empty network namespace (runsc/specutils.NullNetNSFilename).
const nullNetNSName = "null-netns"

// Cleanup implements sandbox.Driver. Every container in the state dir is
// ours (the dir belongs to this driver), so each one left by a previous
// crash is force-deleted; then the empty cgroups under CgroupParent go,
// and CgroupParent itself; then the cgroup parents of drivers whose
// processes died (cgroupowner.go); and the empty network namespace that runsc pins for its gofers under the
// state dir is unmounted (runsc pins a new one at the next run). Call it at
// start-up and again at shutdown, when no Run is in flight.
func (d *Driver) Cleanup(ctx context.Context) error {
	d.later.Wait() // teardowns handed off by Run come first
	d.stopWarm()
	defer d.resumeWarm()
	cs, err := d.runsc.list(ctx)
	if err != nil {
		return fmt.Errorf("gvisor cleanup: %w", err)
	}
	var errs []error
	for _, c := range cs {
		d.log.Info("deleting leftover container", "attempt_id", c.ID, "status", c.Status)
		if err := d.runsc.forceDelete(ctx, c.ID); err != nil {
			errs = append(errs, err)
		}
	}
	n, err := removeEmptyChildren("/" + d.cfg.CgroupParent)
	if err != nil {
		errs = append(errs, err)
	}
	if n > 0 {
		d.log.Info("removed leftover cgroups", "count", n)
	}
	// The parent goes too (runsc makes it again for the next attempt), so
	// that a stopped server or host leaves no cgroup directory behind.
	if err := removeCgroup("/" + d.cfg.CgroupParent); err != nil && !isBusy(err) {
		errs = append(errs, err)
	}
	d.reapDeadOwners()
	if err := unmountNullNetNS(d.cfg.StateDir); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("gvisor cleanup: %w", err)
	}
	return nil
}

// unmountNullNetNS unmounts runsc's null network namespace pin and removes
// the file. Concurrent cold starts can stack several mounts there, hence
// the loop (as runsc's own UnmountNullNetNS does).
func unmountNullNetNS(stateDir string) error {
	path := filepath.Join(stateDir, nullNetNSName)
	for syscall.Unmount(path, syscall.MNT_DETACH) == nil {
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// reapDeadOwners claims this driver's cgroup parent (once) and removes the
// parents that killed drivers left on this machine. Neither is fatal: a
// driver that cannot use the registry runs as before, leaving only its
// own empty parent behind if it is killed.
func (d *Driver) reapDeadOwners() {
	d.ownerMu.Lock()
	defer d.ownerMu.Unlock()
	if d.owner == nil {
		f, err := claimCgroupParent(d.cfg.CgroupRegistry, d.cfg.CgroupParent)
		if err != nil {
			d.log.Warn("cgroup parent not registered: if this process is killed, its empty cgroups stay", "err", err)
		}
		d.owner = f
	}
	reaped, err := reapDeadCgroupParents(d.cfg.CgroupRegistry, d.cfg.CgroupParent)
	if len(reaped) > 0 {
		d.log.Info("removed cgroups of killed servers or hosts", "parents", reaped)
	}
	if err != nil {
		d.log.Warn("removing cgroups of killed servers or hosts", "err", err)
	}
}
