package agent

import (
	"context"
	"errors"
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
	"github.com/skiffhq/skiff/internal/sandbox/diskquota"
)

// cacheMounts keeps the projects' cache mounts on this host:
// <root>/<project id>/<epoch>/<cache name>, each a writable directory
// shared by the project's attempts and kept between them and between
// revisions. Invalidating the project moves it to a new epoch; the older
// epochs' directories are removed once no attempt holds them.
// With a cap, whole caches that no attempt holds are removed, least
// recently used first, once the total passes it.
//
// With volumeBytes, <root>/<project id> is a filesystem of its own of that
// size (<root>/<project id>.img, mounted on the project's first attempt
// and kept across restarts): a task writing past it gets ENOSPC instead
// of filling the host's disk. The epochs and the eviction work inside it
// as they do without.
type cacheMounts struct {
	root        string
	maxBytes    int64 // 0: no cap
	volumeBytes int64 // 0: plain directories, unbounded
	log         *slog.Logger

	mu    sync.Mutex
	inUse map[string]int // directory -> attempts holding it
}

// dir is the cache directory of a project's cache (created by the
// sandbox driver, which chowns it to the runner), on the project's volume
// when the caches are bounded: it is mounted here if it is not yet.
func (c *cacheMounts) dir(ctx context.Context, projectID string, epoch int64, name string) (string, error) {
	if !sandbox.ValidAttemptID(projectID) || !sandbox.ValidAttemptID(name) || epoch < 0 {
		return "", fmt.Errorf("invalid project id %q, epoch %d or cache name %q", projectID, epoch, name)
	}
	projectDir := filepath.Join(c.root, projectID)
	if c.volumeBytes > 0 {
		if err := sandbox.EnsureVolume(ctx, projectDir, c.volumeBytes); err != nil {
			return "", fmt.Errorf("cache mounts' quota: %w", err)
		}
	}
	c.dropOldEpochs(projectDir, epoch)
	return filepath.Join(projectDir, strconv.FormatInt(epoch, 10), name), nil
}

// bounded reports whether the caches live on their projects' volumes.
func (c *cacheMounts) bounded() bool { return c.volumeBytes > 0 }

// tidy drops, at start-up with the volumes unmounted, what another layout
// left in the root: with bounded caches, a project's plain directory that
// has no image (caches of a run without the quota, which the volume would
// hide and nothing would evict) and an image of another size than the one
// configured (made again on next use); without, the images (whose caches
// the plain directories do not see). Caches are caches: a project whose
// cache goes fills it again.
func (c *cacheMounts) tidy() {
	entries, err := os.ReadDir(c.root)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(c.root, e.Name())
		image, isImage := strings.CutSuffix(p, diskquota.ImageSuffix)
		switch {
		case !c.bounded() && isImage:
			c.drop(p, p+".lock", image)
		case c.bounded() && isImage:
			if info, err := e.Info(); err == nil && info.Size() != max(c.volumeBytes, diskquota.MinBytes)&^4095 {
				c.drop(p, p+".lock", image)
			}
		case c.bounded() && e.IsDir():
			if _, err := os.Stat(p + diskquota.ImageSuffix); errors.Is(err, os.ErrNotExist) {
				c.drop(p)
			}
		}
	}
}

// drop removes paths, logging what fails.
func (c *cacheMounts) drop(paths ...string) {
	for _, p := range paths {
		if err := os.RemoveAll(p); err != nil {
			c.log.Warn("remove cache mounts of another layout", "path", p, "err", err)
		} else {
			c.log.Info("cache mounts of another layout removed", "path", p)
		}
	}
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
		if _, err := strconv.ParseInt(filepath.Base(filepath.Dir(dir)), 10, 64); err != nil {
			continue // not an epoch: an ext4 volume's lost+found, one being removed
		}
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
