package sandbox

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
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

// copySeed copies the directories, regular files and symlinks of src to
// dst, chowning each to owner (the runner must be able to change them).
func copySeed(src, dst string, owner *Owner) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			if err := os.Mkdir(target, 0o755); err != nil {
				return err
			}
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.Symlink(link, target); err != nil {
				return err
			}
		case d.Type().IsRegular():
			if err := copyRegular(p, target); err != nil {
				return err
			}
		default:
			return nil
		}
		return chown(target, owner)
	})
}

func copyRegular(src, dst string) error {
	in, err := os.Open(src)
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
