package ociimage

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// A host bounds its image cache (agent.Config.ImageCacheBytes): it lists
// the entries with when each was last used and removes the least recently
// used ones. An attempt pins its image first, and Remove leaves a pinned
// image alone, so no image is removed under an attempt that runs it.

// Entry is one unpacked image in the cache.
type Entry struct {
	Digest string
	Bytes  int64     // of its root filesystem's files
	Used   time.Time // last unpacked or looked up
}

// Pin keeps digest in the cache until release is called, however often
// it is pinned; pin before Lookup or Unpack.
func (c *Cache) Pin(digest string) (release func()) {
	c.pinMu.Lock()
	defer c.pinMu.Unlock()
	if c.pins == nil {
		c.pins = map[string]int{}
	}
	c.pins[digest]++
	return func() {
		c.pinMu.Lock()
		defer c.pinMu.Unlock()
		if c.pins[digest]--; c.pins[digest] <= 0 {
			delete(c.pins, digest)
		}
	}
}

// Entries lists the complete images in the cache.
func (c *Cache) Entries() ([]Entry, error) {
	des, err := os.ReadDir(c.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list image cache: %w", err)
	}
	var out []Entry
	for _, de := range des {
		if !de.IsDir() {
			continue
		}
		path := filepath.Join(c.Root, de.Name(), metadataName)
		info, err := os.Stat(path)
		if err != nil {
			continue // a temp dir, or removed meanwhile
		}
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var m metadata
		if err := json.Unmarshal(b, &m); err != nil || m.Digest == "" {
			continue
		}
		if m.Bytes == 0 { // unpacked before sizes were recorded
			m.Bytes = treeBytes(filepath.Join(c.Root, de.Name(), rootfsName))
		}
		out = append(out, Entry{Digest: m.Digest, Bytes: m.Bytes, Used: info.ModTime()})
	}
	return out, nil
}

// Remove deletes digest's entry unless it is pinned, and says whether it
// did. It waits for an unpack of the same digest (ctx bounds the wait).
func (c *Cache) Remove(ctx context.Context, digest string) (bool, error) {
	hex, err := digestHex(digest)
	if err != nil {
		return false, err
	}
	unlock, err := lockFile(ctx, filepath.Join(c.Root, hex+".lock"))
	if err != nil {
		return false, err
	}
	defer unlock()
	c.pinMu.Lock()
	if c.pins[digest] > 0 {
		c.pinMu.Unlock()
		return false, nil
	}
	// Renamed while pins are held still: a Pin after this finds no entry
	// and unpacks it again. The temp name is what removeTemps clears.
	trash := filepath.Join(c.Root, hex+".tmp-evicted-"+rand.Text())
	err = os.Rename(filepath.Join(c.Root, hex), trash)
	c.pinMu.Unlock()
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("evict image %s: %w", digest, err)
	}
	if err := os.RemoveAll(trash); err != nil {
		return true, fmt.Errorf("evict image %s: %w", digest, err)
	}
	return true, nil
}

// touch marks the entry at dir used now.
func (c *Cache) touch(dir string) {
	now := c.now()
	_ = os.Chtimes(filepath.Join(dir, metadataName), now, now)
}

func (c *Cache) now() time.Time {
	if c.Clock != nil {
		return c.Clock.Now()
	}
	return time.Now()
}

// treeBytes sums the sizes of the regular files under dir.
func treeBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
