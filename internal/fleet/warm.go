package fleet

import (
	"context"
	"path/filepath"

	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/store"
)

// WarmConfig lets the local host keep warm sandboxes of the revisions it
// prepares (POST /projects/:name/init).
type WarmConfig struct {
	Warmer sandbox.Warmer
	// CacheRoot is the host's project cache root (the agent's), which
	// names the project's pool and its cache mount.
	CacheRoot string
	// Size is the sandboxes kept per prepared project.
	Size int
	// CPU and MemoryMB are the limits of the attempts that may use them:
	// a job's defaults. Other shapes start cold.
	CPU      float64
	MemoryMB int64
	// PidsLimit and StorageBytes are the host's pids limit and the
	// default storage quota (requirements.storage_gb's default), as the
	// agent sets them on the attempts' specs.
	PidsLimit    int64
	StorageBytes int64
	// CacheBytes is the project cache's quota (agent.Config.CacheBytes).
	CacheBytes int64
}

// UseWarm makes Prepare keep warm sandboxes; call it before the host
// serves.
func (l *Local) UseWarm(c WarmConfig) {
	if c.Warmer != nil && c.Size > 0 {
		l.warm = &c
	}
}

// warmKey is the key of the sandboxes an attempt of the project on rootfs
// with the default limits uses (the agent's spec for it).
func (c *WarmConfig) warmKey(projectID, rootFS string) sandbox.WarmKey {
	return sandbox.WarmKey{RootFS: rootFS, CacheDir: filepath.Join(c.CacheRoot, projectID), CPU: c.CPU, MemoryMB: c.MemoryMB,
		PidsLimit: c.PidsLimit, StorageBytes: c.StorageBytes, CacheBytes: c.CacheBytes}
}

// Drop destroys the project's warm sandboxes on the host (the project was
// invalidated or deleted).
func (l *Local) Drop(_ context.Context, hostID, projectID string) {
	if l.warm == nil || hostID != l.id {
		return
	}
	l.warm.Warmer.DropWarm(filepath.Join(l.warm.CacheRoot, projectID))
	l.mu.Lock()
	delete(l.warmed, projectID)
	delete(l.warmImages, projectID)
	if release := l.warmPins[projectID]; release != nil {
		release()
		delete(l.warmPins, projectID)
	}
	l.mu.Unlock()
}

// WarmImages lists the images of the revisions the host keeps warm
// sandboxes of: their root filesystems are in use while the pools live.
func (l *Local) WarmImages() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.warmImages))
	for _, d := range l.warmImages {
		out = append(out, d)
	}
	return out
}

// WarmCapacity is how many sandboxes of revision pu the host keeps booted
// for the project, and how many of them are ready now: both 0 unless the
// project was prepared (init) at that revision and its pool not dropped
// since.
func (l *Local) WarmCapacity(_ context.Context, projectID string, pu *store.Push) (ready, target int) {
	if l.warm == nil {
		return 0, 0
	}
	img, ok, err := l.cache.Lookup(pu.ImageDigest)
	if err != nil || !ok {
		return 0, 0
	}
	l.mu.Lock()
	rootFS, warmed := l.warmed[projectID]
	l.mu.Unlock()
	if !warmed || rootFS != img.RootFS {
		return 0, 0
	}
	return l.warm.Warmer.WarmReady(l.warm.warmKey(projectID, rootFS)), l.warm.Size
}

// WarmReady is how many sandboxes of the project's prepared revision are
// ready on the host.
func (l *Local) WarmReady(projectID, rootFS string) int {
	if l.warm == nil {
		return 0
	}
	return l.warm.Warmer.WarmReady(l.warm.warmKey(projectID, rootFS))
}
