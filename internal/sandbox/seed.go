package sandbox

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// seedMount fills an empty (or missing) writable mount directory from
// m.Seed: the copy is assembled in a sibling directory, owned by owner,
// and renamed over the empty one, so a task sees the whole seed or none.
// Two attempts seeding at once each build a copy; the rename of the
// second fails on the first's non-empty directory and its copy is dropped.
func seedMount(m Mount, owner *Owner) error {
	if m.Seed == "" || m.ReadOnly {
		return nil
	}
	if entries, err := os.ReadDir(m.Source); err == nil && len(entries) > 0 {
		return nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(m.Source), 0o755); err != nil {
		return err
	}
	tmp := m.Source + ".seed-" + strings.ToLower(rand.Text()[:8])
	defer os.RemoveAll(tmp)
	if err := copySeed(m.Seed, tmp, owner); err != nil {
		return fmt.Errorf("seed %s: %w", m.Destination, err)
	}
	if err := os.Rename(tmp, m.Source); err != nil {
		if entries, rerr := os.ReadDir(m.Source); rerr == nil && len(entries) > 0 {
			return nil // another attempt seeded it first
		}
		return fmt.Errorf("seed %s: %w", m.Destination, err)
	}
	return nil
}

// copySeed copies src to dst (links as links) and chowns everything to
// owner: the runner must be able to change what the seed put there.
func copySeed(src, dst string, owner *Owner) error {
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		return err
	}
	return filepath.WalkDir(dst, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return chown(p, owner)
	})
}
