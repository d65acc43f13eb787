// Package diskquota gives a directory a hard size limit: a sparse image
// file, formatted ext4 and loop-mounted on the directory. A write past the
// size fails with ENOSPC inside the filesystem, whoever writes (a sandboxed
// runner through gVisor's gofer included), and the host's own filesystem
// grows by at most the image's size however the writes are made. It is
// the per-attempt quota of requirements.storage_gb (docs/hosting.md, "Disk").
//
// Why a loop image and not a quota: XFS project quotas need the work dir
// on XFS, ext4 project quotas need a filesystem formatted for them, a tmpfs
// would charge the disk to memory. An ext4 image works on any filesystem
// that holds sparse files, costs about 25 ms to make and mount, and its
// removal is an unmount (the loop device is set to clear itself).
package diskquota

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// ImageSuffix names a volume's image beside its mount point when a
// caller keeps them side by side (<dir>.img).
const ImageSuffix = ".img"

// Options describe one volume.
type Options struct {
	// Image is the sparse image file; it must not exist.
	Image string
	// Mount is the directory to mount on; created if missing.
	Mount string
	// Bytes is the filesystem's size, rounded down to whole 4 KiB blocks.
	Bytes int64
	// UID and GID own the filesystem's root directory.
	UID, GID int
	// Mkfs is the mkfs.ext4 binary; empty means "mkfs.ext4" on PATH.
	Mkfs string
	// Discard mounts the filesystem with online discard: a deleted file's
	// blocks are punched out of the sparse image, so a long-lived volume
	// (a cache whose entries are evicted) gives the host back what it
	// frees instead of keeping its high-water mark.
	Discard bool
}

// MinBytes is the smallest volume: ext4 needs some room for itself.
const MinBytes = 8 << 20

// Create makes the image, formats it and mounts it. On error nothing of
// it is left mounted, and the image is removed.
func Create(ctx context.Context, o Options) (err error) {
	if o.Bytes < MinBytes {
		return fmt.Errorf("disk quota of %d bytes: want at least %d", o.Bytes, MinBytes)
	}
	f, err := os.OpenFile(o.Image, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create disk image: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, os.Remove(o.Image))
		}
	}()
	err = f.Truncate(o.Bytes &^ 4095)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("size disk image: %w", err)
	}
	if err := mkfs(ctx, o); err != nil {
		return err
	}
	if err := os.MkdirAll(o.Mount, 0o700); err != nil {
		return fmt.Errorf("create mount point: %w", err)
	}
	return mount(o.Image, o.Mount, o.Discard)
}

// mkfs formats the image: no journal (the volume dies with its attempt or
// host, so nothing needs replaying), lazy inode tables (so the image stays
// sparse and mkfs writes almost nothing), no reserved blocks (all of it is
// the task's) and the root directory owned by the runner.
func mkfs(ctx context.Context, o Options) error {
	bin := o.Mkfs
	if bin == "" {
		bin = "mkfs.ext4"
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-q", "-F", "-m", "0", "-O", "^has_journal",
		"-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard,root_owner="+strconv.Itoa(o.UID)+":"+strconv.Itoa(o.GID),
		o.Image)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("format disk image: %w: %s", err, out)
	}
	return nil
}

// mount attaches image to a free loop device set to clear itself, and
// mounts it on dir (with online discard when asked). Once mounted, the
// mount is the device's only holder: unmounting it frees the device.
func mount(image, dir string, discard bool) error {
	dev, err := attachLoop(image)
	if err != nil {
		return err
	}
	// MS_NOSUID and MS_NODEV: nothing the runner leaves there is a device
	// or a setuid program to the host.
	data := ""
	if discard {
		data = "discard"
	}
	err = unix.Mount(dev.name, dir, "ext4", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOATIME, data)
	cerr := dev.f.Close() // the mount (or nothing) holds the device now
	if err != nil {
		return fmt.Errorf("mount disk image on %s: %w", dir, err)
	}
	return cerr
}

type loopDev struct {
	name string
	f    *os.File
}

// attachLoop binds image to a free loop device with autoclear set. Another
// process may take the free device between the two calls; then it asks
// again.
func attachLoop(image string) (*loopDev, error) {
	img, err := os.OpenFile(image, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open disk image: %w", err)
	}
	defer img.Close()
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("loop devices: %w", err)
	}
	defer ctl.Close()
	for try := 0; ; try++ {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return nil, fmt.Errorf("find a free loop device: %w", err)
		}
		name := "/dev/loop" + strconv.Itoa(n)
		f, err := os.OpenFile(name, os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", name, err)
		}
		cfg := unix.LoopConfig{Fd: uint32(img.Fd())}
		cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
		copy(cfg.Info.File_name[:], image)
		err = unix.IoctlLoopConfigure(int(f.Fd()), &cfg)
		if err == nil {
			return &loopDev{name: name, f: f}, nil
		}
		f.Close()
		if !errors.Is(err, unix.EBUSY) || try >= 20 {
			return nil, fmt.Errorf("attach %s to %s: %w", image, name, err)
		}
	}
}

// Remove unmounts dir if a volume is mounted there (the loop device goes
// with it) and removes the image. A missing mount or image is not an
// error. A mount still busy (a process of the host holds a file open) is
// detached lazily: the device is freed when the last file closes.
func Remove(image, dir string) error {
	var errs []error
	if err := unix.Unmount(dir, 0); err != nil && !notMounted(err) {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && !notMounted(err) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", dir, err))
		}
	}
	if err := os.Remove(image); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, unix.ENOTDIR) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// notMounted reports whether an unmount failed because nothing is mounted
// there (or there is no such directory).
func notMounted(err error) bool {
	return errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)
}

// Full reports whether the filesystem at dir has (almost) no room left:
// less than 1% of its size (at least 1 MiB, at most 64 MiB) free, or no
// free inode. A write that fails with ENOSPC leaves the room smaller than
// itself, so runners writing in large chunks leave some. The driver asks
// after an attempt, to tell a runner that hit its quota from one that
// failed alone.
func Full(dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false
	}
	size := int64(st.Blocks) * st.Bsize
	slack := min(max(size/100, 1<<20), 64<<20)
	return int64(st.Bavail)*st.Bsize < slack || st.Ffree == 0
}

// within reports whether p is dir or below it.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !filepath.IsAbs(rel) && (len(rel) < 3 || rel[:3] != "../")
}

// Free is the bytes and inodes free on the filesystem at dir.
func Free(dir string) (bytes int64, inodes uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Bavail) * st.Bsize, st.Ffree, nil
}

// Ensure makes sure a volume is mounted at o.Mount: it mounts the image
// when it exists (a cache kept across host restarts and reboots), creates
// it when it does not, and does nothing when the volume is mounted
// already. Concurrent callers (attempts of one project starting together)
// are serialised by a lock file beside the image. A directory already at
// o.Mount is mounted over.
func Ensure(ctx context.Context, o Options) error {
	lock, err := os.OpenFile(o.Image+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("lock disk image: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("lock disk image: %w", err)
	}
	if mounted, err := isMountPoint(o.Mount); err != nil || mounted {
		return err
	}
	if _, err := os.Stat(o.Image); err == nil {
		if err := os.MkdirAll(o.Mount, 0o700); err != nil {
			return fmt.Errorf("create mount point: %w", err)
		}
		return mount(o.Image, o.Mount, o.Discard)
	}
	return Create(ctx, o)
}

// isMountPoint reports whether dir is the root of a filesystem other than
// its parent's. A missing dir is not.
func isMountPoint(dir string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, err
	}
	if err := unix.Lstat(filepath.Dir(dir), &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev, nil
}
