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
// and the empty network namespace that runsc pins for its gofers under the
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
