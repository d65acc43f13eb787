package project

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/skiffhq/skiff/internal/project/manifest"
	"github.com/skiffhq/skiff/internal/store"
)

// SeedDir is where the seed of cache mount name of push pushID is kept
// under seedsRoot (<data-dir>/seeds): the build context is removed once
// the build ends, and hosts seed empty caches from this copy.
func SeedDir(seedsRoot, pushID, name string) string {
	return filepath.Join(seedsRoot, pushID, name)
}

// keepSeeds copies the cache mounts' seed directories out of the push's
// build context before the context is removed.
func (s *Service) keepSeeds(pu *store.Push, m *manifest.Manifest) error {
	root, err := filepath.Abs(filepath.Join(s.dataDir, "seeds"))
	if err != nil {
		return err
	}
	for _, cm := range m.CacheMounts {
		if cm.Seed == "" {
			continue
		}
		dst := SeedDir(root, pu.ID, cm.Name)
		if err := os.RemoveAll(dst); err != nil {
			return err
		}
		if err := copyTree(filepath.Join(pu.ContextDir, filepath.FromSlash(cm.Seed)), dst); err != nil {
			return fmt.Errorf("keep seed of cache mount %q: %w", cm.Name, err)
		}
	}
	return nil
}

// copyTree copies the directories, regular files and symlinks under src
// to dst, which must not exist. os.Root keeps the reads inside src
// whatever links the project holds.
func copyTree(src, dst string) error {
	root, err := os.OpenRoot(src)
	if err != nil {
		return err
	}
	defer root.Close()
	return fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dst, filepath.FromSlash(p))
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := root.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			return copyFile(root, p, target)
		}
		return nil // devices and the like have no place in a cache
	})
}

func copyFile(root *os.Root, name, dst string) error {
	in, err := root.Open(name)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
