package agent

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A host's image and input caches would otherwise keep every image and
// input it ever fetched. Past Config.ImageCacheBytes the least recently
// used entries go, images and inputs alike; what a running attempt uses is
// pinned and stays (an input is also hard-linked into the attempt's own
// directory, but it is pinned from its fetch to the link).

// cacheEntry is one image or input in the host's caches.
type cacheEntry struct {
	used   time.Time
	bytes  int64
	remove func(ctx context.Context) (bool, error)
}

// pin records a release to run when execute returns.
func (at *attempt) pin(release func()) {
	at.mu.Lock()
	at.pins = append(at.pins, release)
	at.mu.Unlock()
}

func (at *attempt) releasePins() {
	at.mu.Lock()
	pins := at.pins
	at.pins = nil
	at.mu.Unlock()
	for _, release := range pins {
		release()
	}
}

// TrimCaches trims the caches as after an attempt's preparation: for what
// fills the image cache outside attempts (the controller's own host
// unpacks each revision it prepares).
func (a *Agent) TrimCaches(ctx context.Context) { a.trimCaches(ctx) }

// trimCaches removes least recently used entries no attempt uses until the
// caches hold at most ImageCacheBytes. One trim at a time: a second caller
// finds the first one doing its work.
func (a *Agent) trimCaches(ctx context.Context) {
	budget := a.cfg.ImageCacheBytes
	if budget <= 0 || !a.trimMu.TryLock() {
		return
	}
	defer a.trimMu.Unlock()
	entries, total := a.cacheEntries()
	if total <= budget {
		return
	}
	slices.SortFunc(entries, func(x, y cacheEntry) int { return x.used.Compare(y.used) })
	removed, freed := 0, int64(0)
	for _, e := range entries {
		if total <= budget {
			break
		}
		ok, err := e.remove(ctx)
		if err != nil {
			a.log.Warn("trimming the host's caches", "err", err)
			continue
		}
		if ok {
			total -= e.bytes
			freed += e.bytes
			removed++
		}
	}
	if removed > 0 {
		a.log.Info("trimmed the host's image and input caches", "removed", removed, "bytes_freed", freed,
			"bytes_kept", total, "limit_bytes", budget)
	}
}

// cacheEntries lists the images and inputs cached, and their total size.
func (a *Agent) cacheEntries() ([]cacheEntry, int64) {
	var out []cacheEntry
	var total int64
	imgs, err := a.cfg.Images.Entries()
	if err != nil {
		a.log.Warn("listing the image cache", "err", err)
	}
	for _, e := range imgs {
		out = append(out, cacheEntry{used: e.Used, bytes: e.Bytes, remove: func(ctx context.Context) (bool, error) {
			return a.cfg.Images.Remove(ctx, e.Digest)
		}})
		total += e.Bytes
	}
	ins := a.inputs.entries()
	out = append(out, ins...)
	for _, e := range ins {
		total += e.bytes
	}
	return out, total
}

// pin keeps key in the cache until release is called.
func (c *inputCache) pin(key string) (release func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pins == nil {
		c.pins = map[string]int{}
	}
	c.pins[key]++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.pins[key]--; c.pins[key] <= 0 {
			delete(c.pins, key)
		}
	}
}

// entries lists the cached inputs (<dir>/<tenant>/<key>; not the
// temporary files of fetches under way).
func (c *inputCache) entries() []cacheEntry {
	var out []cacheEntry
	tenants, _ := os.ReadDir(c.dir)
	for _, t := range tenants {
		if !t.IsDir() {
			continue
		}
		files, _ := os.ReadDir(filepath.Join(c.dir, t.Name()))
		for _, f := range files {
			if !f.Type().IsRegular() || strings.HasPrefix(f.Name(), ".") {
				continue
			}
			info, err := f.Info()
			if err != nil {
				continue
			}
			key := t.Name() + "/" + f.Name()
			out = append(out, cacheEntry{used: info.ModTime(), bytes: info.Size(),
				remove: func(context.Context) (bool, error) { return c.remove(key) }})
		}
	}
	return out
}

// remove deletes key's file unless an attempt pinned it.
func (c *inputCache) remove(key string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pins[key] > 0 {
		return false, nil
	}
	err := os.Remove(filepath.Join(c.dir, filepath.FromSlash(key)))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}
