package sandbox

import (
	"fmt"
	"os"
)

// Owner is the host uid/gid that must be able to write the attempt's
// writable directories (65534 for gVisor, whose runner runs as nobody).
type Owner struct {
	UID, GID int
}

// Prepare creates the attempt's directories under spec.WorkDir, writes the
// payload file and creates the shared cache directory if it is missing. The
// per-attempt directories must not exist yet, so a reused WorkDir can never
// hand one attempt another's files. With a non-nil owner the writable
// directories (and the cache directory itself, not its contents) are
// chowned to it. Artifact inputs are placed read-only under the payload
// directory, and the payload file names them in _artifacts.local_paths as
// the runner sees them (runner is the runner's view of the layout).
func Prepare(spec *Spec, owner *Owner, runner Dirs) (Dirs, error) {
	d := HostDirs(spec)
	if err := os.MkdirAll(spec.WorkDir, 0o755); err != nil {
		return Dirs{}, fmt.Errorf("create work dir: %w", err)
	}
	if err := createDisk(spec); err != nil {
		return Dirs{}, err
	}
	// The payload directory is root-owned and read-only to the runner; the
	// file is world-readable because the runner is not its owner.
	if err := os.Mkdir(d.Payload, 0o755); err != nil {
		return Dirs{}, fmt.Errorf("create payload dir: %w", err)
	}
	if err := os.WriteFile(d.PayloadFile(), payloadWithLocalPaths(spec.Payload, spec.Inputs, runner), 0o444); err != nil {
		return Dirs{}, fmt.Errorf("write payload: %w", err)
	}
	if err := placeInputs(d, spec.Inputs); err != nil {
		return Dirs{}, err
	}
	for _, dir := range []string{d.Result, d.Artifacts, d.Scratch} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			return Dirs{}, fmt.Errorf("create attempt dir: %w", err)
		}
		if err := chown(dir, owner); err != nil {
			return Dirs{}, err
		}
	}
	if err := ensureCacheDisk(spec); err != nil {
		return Dirs{}, err
	}
	if err := os.MkdirAll(d.Cache, 0o700); err != nil {
		return Dirs{}, fmt.Errorf("create cache dir: %w", err)
	}
	if err := chown(d.Cache, owner); err != nil {
		return Dirs{}, err
	}
	for _, m := range spec.Mounts {
		if m.ReadOnly {
			continue
		}
		if err := seedMount(m, owner); err != nil {
			return Dirs{}, err
		}
		if err := os.MkdirAll(m.Source, 0o700); err != nil {
			return Dirs{}, fmt.Errorf("create cache mount dir: %w", err)
		}
		if err := chown(m.Source, owner); err != nil {
			return Dirs{}, err
		}
	}
	return d, nil
}

func chown(dir string, owner *Owner) error {
	if owner == nil {
		return nil
	}
	// Lchown never follows a symlink, so a path swapped for one (the cache
	// dir is writable by earlier runners) cannot redirect the chown.
	if err := os.Lchown(dir, owner.UID, owner.GID); err != nil {
		return fmt.Errorf("chown %s: %w", dir, err)
	}
	return nil
}
