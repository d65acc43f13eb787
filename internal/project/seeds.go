package project

import (
	"fmt"
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

// copyTree copies src to dst, which must not exist. os.Root keeps the
// reads inside src whatever links the project holds; links are copied as
// links.
func copyTree(src, dst string) error {
	root, err := os.OpenRoot(src)
	if err != nil {
		return err
	}
	defer root.Close()
	return os.CopyFS(dst, root.FS())
}
