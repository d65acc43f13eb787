// Package fleet knows the hosts that run tasks. For now that is the local
// host inside `skiff server`; enrolled remote hosts join it later.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/ociimage"
	"github.com/skiffhq/skiff/internal/store"
)

// Local is the host inside the server: it prepares revisions by unpacking
// their images from the controller's image store into its rootfs cache.
type Local struct {
	id        string
	imagesDir string
	cache     *ociimage.Cache
	warm      *WarmConfig // nil: no warm sandboxes
}

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
	img, err := l.cache.Unpack(ctx, filepath.Join(l.imagesDir, hex), pu.ImageDigest)
	if err != nil {
		return fmt.Errorf("unpack image: %w", err)
	}
	if l.warm != nil {
		// Sandboxes of this revision boot in the background; a pool of
		// the project's previous revision is replaced.
		l.warm.Warmer.Warm(ctx, l.warm.warmKey(pu.ProjectID, img.RootFS), l.warm.Size)
	}
	return nil
}
