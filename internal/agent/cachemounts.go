package agent

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/sandbox"
)

// cacheMounts keeps the projects' cache mounts on this host:
// <root>/<project id>/<epoch>/<cache name>, each a writable directory
// shared by the project's attempts and kept between them and between
// revisions. Invalidating the project moves it to a new epoch; the older
// epochs' directories are removed once no attempt holds them.
// With a cap, whole caches that no attempt holds are removed, least
// recently used first, once the total passes it.
type cacheMounts struct {
	root     string
	maxBytes int64 // 0: no cap
	log      *slog.Logger

	mu    sync.Mutex
	inUse map[string]int // directory -> attempts holding it
}

// dir is the cache directory of a project's cache (created by the
// sandbox driver, which chowns it to the runner).
func (c *cacheMounts) dir(projectID string, epoch int64, name string) (string, error) {
	if !sandbox.ValidAttemptID(projectID) || !sandbox.ValidAttemptID(name) || epoch < 0 {
		return "", fmt.Errorf("invalid project id %q, epoch %d or cache name %q", projectID, epoch, name)
	}
	c.dropOldEpochs(filepath.Join(c.root, projectID), epoch)
	return filepath.Join(c.root, projectID, strconv.FormatInt(epoch, 10), name), nil
}

// dropOldEpochs removes a project's cache directories of epochs before
// epoch that no attempt holds.
func (c *cacheMounts) dropOldEpochs(projectDir string, epoch int64) {
	list, err := os.ReadDir(projectDir)
	if err != nil {
		return
	}
	for _, e := range list {
		n, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil || n >= epoch {
			continue
		}
		dir := filepath.Join(projectDir, e.Name())
		c.mu.Lock()
		held := false
		for d := range c.inUse {
			held = held || strings.HasPrefix(d, dir+string(filepath.Separator))
		}
		trash := dir + ".invalidated"
		if !held && os.Rename(dir, trash) != nil {
			held = true
		}
		c.mu.Unlock()
		if !held {
			if err := os.RemoveAll(trash); err != nil {
				c.log.Warn("remove invalidated cache mounts", "dir", dir, "err", err)
			}
			c.log.Info("cache mounts of an invalidated epoch removed", "dir", dir)
		}
	}
}

// hold marks dir in use until the returned release, which records the use
// and evicts what the cap asks for.
func (c *cacheMounts) hold(dir string) func() {
	c.mu.Lock()
	c.inUse[dir]++
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			now := time.Now()
			_ = os.Chtimes(dir, now, now)
			c.mu.Lock()
			if c.inUse[dir]--; c.inUse[dir] <= 0 {
				delete(c.inUse, dir)
			}
			c.mu.Unlock()
			c.evict()
		})
	}
}

// evict removes least recently used caches that no attempt holds until
// the rest fit maxBytes.
func (c *cacheMounts) evict() {
	if c.maxBytes <= 0 {
		return
	}
	type cache struct {
		dir  string
		used time.Time
		size int64
	}
	var caches []cache
	var total int64
	dirs, _ := filepath.Glob(filepath.Join(c.root, "*", "*", "*"))
	for _, dir := range dirs {
		if strings.Contains(filepath.Base(dir), ".") {
			continue // a seed being copied, or a cache being removed
		}
		info, err := os.Stat(dir)
		if err != nil || !info.IsDir() {
			continue
		}
		size := dirSize(dir)
		total += size
		caches = append(caches, cache{dir, info.ModTime(), size})
	}
	slices.SortFunc(caches, func(a, b cache) int { return a.used.Compare(b.used) })
	for _, k := range caches {
		if total <= c.maxBytes {
			return
		}
		c.mu.Lock()
		held := c.inUse[k.dir] > 0
		trash := k.dir + ".evicted"
		if !held && os.Rename(k.dir, trash) != nil {
			held = true
		}
		c.mu.Unlock()
		if held {
			continue
		}
		if err := os.RemoveAll(trash); err != nil {
			c.log.Warn("remove evicted cache mount", "dir", k.dir, "err", err)
		}
		total -= k.size
		c.log.Info("cache mount evicted", "dir", k.dir, "bytes", k.size)
	}
}

func dirSize(root string) int64 {
	var n int64
	_ = filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
