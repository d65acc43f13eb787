// Package fleet knows the hosts that run tasks. For now that is the local
// host inside `skiff server`; enrolled remote hosts join it later.
package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/ociimage"
	"github.com/skiffhq/skiff/internal/project/manifest"
	"github.com/skiffhq/skiff/internal/store"
)

// Local is the host inside the server: it prepares revisions by unpacking
// their images from the controller's image store into its rootfs cache.
type Local struct {
	id        string
	imagesDir string
	cache     *ociimage.Cache
	images    ImageSource
	// DataSources, when set, is the host's data-source cache: Prepare
	// fetches the revision's data sources into it, so that a prepared
	// revision's tasks find them there.
	DataSources DataSourceFetcher
	// ProjectEnv, when set, reads a project's env, where a tenant keeps
	// its own hub token for the data sources Prepare fetches; nil fetches
	// them without one.
	ProjectEnv func(ctx context.Context, projectID string) (map[string]string, error)
	warm       *WarmConfig // nil: no warm sandboxes

	mu     sync.Mutex
	warmed map[string]string // project id -> rootfs of the revision its pool is for
	// warmImages is project id -> the image of the revision its pool is
	// for: the image sweep keeps them (WarmImages).
	warmImages map[string]string
	// warmPins release the pools' images in the host's image cache, which
	// the host's cache trim would otherwise remove under their sandboxes.
	warmPins map[string]func()
	// trim, once set (SetTrim), keeps the image cache within its bounds
	// after Prepare unpacked an image.
	trim func(ctx context.Context)
}

// SetTrim makes Prepare call trim after it unpacked an image (the host's
// cache trim, which keeps pinned images).
func (l *Local) SetTrim(trim func(ctx context.Context)) {
	l.mu.Lock()
	l.trim = trim
	l.mu.Unlock()
}

// DataSourceFetcher fetches a data source onto the host and holds it until
// release (agent.DataSources; the agent's own cache).
type DataSourceFetcher interface {
	Acquire(ctx context.Context, ds agentproto.DataSource) (path string, release func(), err error)
}

// SetImages makes the host open image layouts through src (a shared image
// store) instead of reading <imagesDir>/<hex>.
func (l *Local) SetImages(src ImageSource) { l.images = src }

// NewLocal opens the local host's state under dir, keeping a stable
// pseudonymous wkr_ handle across restarts.
func NewLocal(dir, imagesDir string, cache *ociimage.Cache) (*Local, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("host dir: %w", err)
	}
	idFile := filepath.Join(dir, "id")
	data, err := os.ReadFile(idFile)
	switch {
	case err == nil && strings.HasPrefix(strings.TrimSpace(string(data)), id.Worker):
		return &Local{id: strings.TrimSpace(string(data)), imagesDir: imagesDir, cache: cache}, nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("read host id: %w", err)
	}
	hid := id.New(id.Worker)
	if err := os.WriteFile(idFile, []byte(hid+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("write host id: %w", err)
	}
	return &Local{id: hid, imagesDir: imagesDir, cache: cache}, nil
}

// ID is the host's pseudonymous handle.
func (l *Local) ID() string { return l.id }

// HostIDs lists the hosts that exist now.
func (l *Local) HostIDs(context.Context) ([]string, error) { return []string{l.id}, nil }

// Prepare unpacks the push's image into the host's rootfs cache (once per
// digest) and, with UseWarm, keeps sandboxes of the revision booted, so
// that its tasks start warm.
func (l *Local) Prepare(ctx context.Context, hostID string, pu *store.Push) error {
	if hostID != l.id {
		return fmt.Errorf("unknown host %s", hostID)
	}
	hex, ok := strings.CutPrefix(pu.ImageDigest, "sha256:")
	if !ok {
		return fmt.Errorf("push %s has no image digest", pu.ID)
	}
	dir := filepath.Join(l.imagesDir, hex)
	if l.images != nil {
		var err error
		if dir, err = l.images.Layout(ctx, pu.ImageDigest); err != nil {
			return err
		}
	}
	// Pinned from before the unpack: kept for a warm pool, released
	// otherwise.
	release := l.cache.Pin(pu.ImageDigest)
	pinned := false
	defer func() {
		if !pinned {
			release()
		}
	}()
	img, err := l.cache.Unpack(ctx, dir, pu.ImageDigest)
	if err != nil {
		return fmt.Errorf("unpack image: %w", err)
	}
	mounts, err := l.prepareDataSources(ctx, pu)
	if err != nil {
		return err
	}
	// A revision whose tasks mount data sources or caches starts cold: a
	// sandbox booted ahead has its mounts fixed (sandbox.KeyOf).
	if l.warm != nil && !mounts {
		// Sandboxes of this revision boot in the background; a pool of
		// the project's previous revision is replaced.
		l.warm.Warmer.Warm(ctx, l.warm.warmKey(pu.ProjectID, img.RootFS), l.warm.Size)
		l.mu.Lock()
		if l.warmed == nil {
			l.warmed = map[string]string{}
		}
		l.warmed[pu.ProjectID] = img.RootFS
		if l.warmImages == nil {
			l.warmImages = map[string]string{}
		}
		l.warmImages[pu.ProjectID] = pu.ImageDigest
		if l.warmPins == nil {
			l.warmPins = map[string]func(){}
		}
		if prev := l.warmPins[pu.ProjectID]; prev != nil {
			prev() // the previous revision's pool is replaced
		}
		l.warmPins[pu.ProjectID] = release
		pinned = true
		l.mu.Unlock()
	}
	l.mu.Lock()
	trim := l.trim
	l.mu.Unlock()
	if trim != nil && img.Fresh {
		trim(ctx)
	}
	return nil
}

// prepareDataSources fetches the revision's data sources, so that init
// means the inputs are on the host; tasks fetch what a host still lacks.
// mounts says whether the revision's tasks mount anything (data sources or
// cache mounts).
func (l *Local) prepareDataSources(ctx context.Context, pu *store.Push) (mounts bool, err error) {
	var m manifest.Manifest
	if len(pu.Manifest) > 0 {
		if err := json.Unmarshal(pu.Manifest, &m); err != nil {
			return false, fmt.Errorf("manifest of %s: %w", pu.ID, err)
		}
	}
	mounts = len(m.DataSources) > 0 || len(m.CacheMounts) > 0
	if len(m.DataSources) == 0 {
		return mounts, nil
	}
	if l.DataSources == nil {
		return mounts, errors.New("this host cannot fetch data sources")
	}
	// As job.RunSpec has it: the manifest's env, the project's on top.
	env := map[string]string{}
	for k, v := range m.Entrypoint.Env {
		env[k] = v
	}
	if l.ProjectEnv != nil {
		penv, err := l.ProjectEnv(ctx, pu.ProjectID)
		if err != nil {
			return mounts, fmt.Errorf("project env: %w", err)
		}
		for k, v := range penv {
			env[k] = v
		}
	}
	for _, ds := range wireDataSources(m.DataSources, pu.AccountID, env) {
		_, release, err := l.DataSources.Acquire(ctx, ds)
		if err != nil {
			return mounts, fmt.Errorf("data source %q: %w", ds.Name, err)
		}
		release()
	}
	return mounts, nil
}
