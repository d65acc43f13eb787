package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/skiffhq/skiff/internal/sandbox/diskquota"
)

// createDisk gives spec's attempt its own filesystem of spec.StorageBytes
// at WorkDir/DiskDirName (nothing without a quota). The image file lives
// in WorkDir, beside the mount, so RemoveWorkDir finds both and a warm
// sandbox's directory can be renamed to its attempt's with them.
func createDisk(spec *Spec) error {
	if spec.StorageBytes <= 0 {
		return nil
	}
	err := diskquota.Create(context.Background(), diskquota.Options{
		Image: filepath.Join(spec.WorkDir, DiskImageName),
		Mount: filepath.Join(spec.WorkDir, DiskDirName),
		Bytes: max(spec.StorageBytes, diskquota.MinBytes),
		Mkfs:  mkfsPath(),
	})
	if err != nil {
		return fmt.Errorf("storage quota: %w", err)
	}
	return nil
}

// ensureCacheDisk mounts the project's cache filesystem at spec.CacheDir
// (making it on first use) when spec asks for one. The image sits beside
// the directory, as <CacheDir>.img.
func ensureCacheDisk(spec *Spec) error {
	if spec.CacheBytes <= 0 {
		return nil
	}
	if err := EnsureVolume(context.Background(), spec.CacheDir, spec.CacheBytes); err != nil {
		return fmt.Errorf("project cache quota: %w", err)
	}
	return nil
}

// EnsureVolume mounts a long-lived filesystem of bytes at dir, making it
// on first use and mounting it again after a restart: the image sits
// beside the directory, as <dir>.img, and keeps its contents between
// mounts. It is mounted with online discard, so what is deleted in it is
// given back to the host's disk. The project cache (SKIFF_TASK_CACHE_DIR)
// and each project's cache mounts live on such volumes; the host unmounts
// them with ReapDisks when it stops.
func EnsureVolume(ctx context.Context, dir string, bytes int64) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("create volume root: %w", err)
	}
	return diskquota.Ensure(ctx, diskquota.Options{
		Image:   dir + diskquota.ImageSuffix,
		Mount:   dir,
		Bytes:   max(bytes, diskquota.MinBytes),
		Mkfs:    mkfsPath(),
		Discard: true,
	})
}

// mkfsPath finds mkfs.ext4, which is in /sbin or /usr/sbin, directories a
// service's PATH may lack.
func mkfsPath() string {
	if p, err := exec.LookPath("mkfs.ext4"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "mkfs.ext4"
}

// RemoveWorkDir removes an attempt's work directory, unmounting its
// storage-quota filesystem first (which frees its loop device) when it
// has one. The caller calls it once it has taken the result and outputs
// out of the directory.
func RemoveWorkDir(dir string) error {
	return errors.Join(
		diskquota.Remove(filepath.Join(dir, DiskImageName), filepath.Join(dir, DiskDirName)),
		os.RemoveAll(dir))
}

// ReapDisks unmounts the storage-quota filesystems left mounted below root
// (attempts' work directories of a host process that crashed) and frees
// their loop devices; call it at start-up, before any attempt runs.
func ReapDisks(root string) (int, error) { return diskquota.Reap(root) }

// MarkStorage tells, once a runner has failed, whether a full filesystem
// is the likely cause: it sets o.StorageExceeded when spec had a storage
// quota and the attempt's filesystem is full, or else o.FullMount to the
// destination of a writable bounded mount (a cache mount on its project's
// volume) that is full. A runner that succeeded, timed out or was killed
// is left alone.
func MarkStorage(o *Outcome, spec *Spec) {
	if o.ExitCode == 0 || o.TimedOut || o.Killed {
		return
	}
	if spec.StorageBytes > 0 && diskquota.Full(filepath.Join(spec.WorkDir, DiskDirName)) {
		o.StorageExceeded = true
		return
	}
	for _, m := range spec.Mounts {
		if m.Bounded && !m.ReadOnly && diskquota.Full(m.Source) {
			o.FullMount = m.Destination
			return
		}
	}
}
