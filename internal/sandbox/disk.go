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
	if err := os.MkdirAll(filepath.Dir(spec.CacheDir), 0o700); err != nil {
		return fmt.Errorf("create cache root: %w", err)
	}
	err := diskquota.Ensure(context.Background(), diskquota.Options{
		Image: spec.CacheDir + diskquota.ImageSuffix,
		Mount: spec.CacheDir,
		Bytes: max(spec.CacheBytes, diskquota.MinBytes),
		Mkfs:  mkfsPath(),
	})
	if err != nil {
		return fmt.Errorf("project cache quota: %w", err)
	}
	return nil
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

// MarkStorage sets o.StorageExceeded when spec had a storage quota, its
// filesystem is full and the runner did not succeed.
func MarkStorage(o *Outcome, spec *Spec) {
	if spec.StorageBytes <= 0 || o.ExitCode == 0 || o.TimedOut || o.Killed {
		return
	}
	o.StorageExceeded = diskquota.Full(filepath.Join(spec.WorkDir, DiskDirName))
}
