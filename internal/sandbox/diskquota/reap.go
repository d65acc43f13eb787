package diskquota

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/skiffhq/skiff/internal/mountinfo"
)

// Reap unmounts every mount below root (left by a host process that
// crashed, or was killed, while attempts ran) and detaches loop devices
// whose image is below root and that nothing mounts. It returns how many
// it removed. Call it at start-up, before the first attempt, and never
// while this process's own volumes below root are in use.
func Reap(root string) (int, error) {
	root = filepath.Clean(root)
	mounts, err := mountinfo.Below(mountinfo.Self, root)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	// Deepest first, so that a mount inside another goes before it.
	slices.SortFunc(mounts, func(a, b string) int { return len(b) - len(a) })
	for _, m := range mounts {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
			continue
		}
		n++
	}
	d, err := detachLoops(root)
	n += d
	if err != nil {
		errs = append(errs, err)
	}
	return n, errors.Join(errs...)
}

// detachLoops clears the loop devices whose backing file is below root.
// A mounted one is skipped (its mount was reaped above, lazily, and the
// autoclear flag frees it when the last user goes).
func detachLoops(root string) (int, error) {
	entries, err := os.ReadDir("/sys/block")
	if err != nil {
		return 0, nil // no sysfs: nothing to find
	}
	n := 0
	var errs []error
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "loop") {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/sys/block", e.Name(), "loop", "backing_file"))
		if err != nil {
			continue // not bound
		}
		backing := strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
		if !within(root, backing) {
			continue
		}
		if holders, _ := os.ReadDir(filepath.Join("/sys/block", e.Name(), "holders")); len(holders) > 0 {
			continue
		}
		f, err := os.OpenFile("/dev/"+e.Name(), os.O_RDWR, 0)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		// EBUSY: still mounted somewhere; its autoclear frees it later.
		if err := unix.IoctlSetInt(int(f.Fd()), unix.LOOP_CLR_FD, 0); err == nil {
			n++
		} else if !errors.Is(err, unix.EBUSY) && !errors.Is(err, unix.ENXIO) {
			errs = append(errs, fmt.Errorf("detach /dev/%s: %w", e.Name(), err))
		}
		f.Close()
	}
	return n, errors.Join(errs...)
}
