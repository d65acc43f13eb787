package ociimage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// Names inside a cache entry.
const (
	rootfsName   = "rootfs"
	metadataName = "image.json"
)

// metadata is what a cache entry records besides its root filesystem, so
// that Lookup needs no layout.
type metadata struct {
	Digest string `json:"digest"`
	Config Config `json:"config"`
	Bytes  int64  `json:"bytes,omitempty"` // the root filesystem's files, for eviction
}

// Unpack unpacks the image with manifest digest from the OCI layout at
// layoutDir into c, unless it is there already, and returns it. Concurrent
// calls for one digest, in this process or others, unpack it once; the
// others wait for it (or for ctx).
func (c *Cache) Unpack(ctx context.Context, layoutDir, digest string) (*Image, error) {
	hex, err := digestHex(digest)
	if err != nil {
		return nil, err
	}
	if img, ok, err := c.Lookup(digest); err != nil || ok {
		return img, err
	}
	if err := os.MkdirAll(c.Root, 0o700); err != nil {
		return nil, fmt.Errorf("create image cache: %w", err)
	}
	unlock, err := lockFile(ctx, filepath.Join(c.Root, hex+".lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Whoever held the lock before us may have unpacked it.
	if img, ok, err := c.Lookup(digest); err != nil || ok {
		return img, err
	}
	if err := c.removeTemps(hex); err != nil {
		return nil, err
	}

	log := c.logger().With("digest", digest)
	tmp, err := os.MkdirTemp(c.Root, hex+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("create temp dir: %w", err)
	}
	done := false
	defer func() {
		if !done {
			if err := os.RemoveAll(tmp); err != nil {
				log.Warn("remove temp dir", "err", err)
			}
		}
	}()
	cfg, err := c.unpackInto(ctx, layoutDir, digest, tmp)
	if err != nil {
		return nil, fmt.Errorf("unpack image %s: %w", digest, err)
	}
	dir := filepath.Join(c.Root, hex)
	// The rename is the commit: a cache entry either is complete or does
	// not exist, whatever happens to this process.
	if err := os.Rename(tmp, dir); err != nil {
		return nil, fmt.Errorf("commit unpacked image: %w", err)
	}
	done = true
	c.touch(dir)
	log.Info("unpacked image", "dir", dir)
	return &Image{Digest: digest, Dir: dir, RootFS: filepath.Join(dir, rootfsName), Config: cfg, Fresh: true}, nil
}

// unpackInto writes dir/rootfs and dir/image.json.
func (c *Cache) unpackInto(ctx context.Context, layoutDir, digest, dir string) (Config, error) {
	maxBytes, maxEntries := c.limits()
	img, err := openImage(ctx, layoutDir, digest, maxBytes)
	if err != nil {
		return Config{}, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return Config{}, fmt.Errorf("decode image config: %w", err)
	}
	cfg := Config{
		Entrypoint: cf.Config.Entrypoint,
		Cmd:        cf.Config.Cmd,
		Env:        cf.Config.Env,
		WorkingDir: cf.Config.WorkingDir,
		User:       cf.Config.User,
	}
	rootfs := filepath.Join(dir, rootfsName)
	// 0755 unless the image says otherwise: the runner is not root and must
	// be able to walk the root directory.
	if err := os.Mkdir(rootfs, 0o755); err != nil {
		return Config{}, fmt.Errorf("create rootfs: %w", err)
	}
	// Extract flattens the layers and applies whiteouts.
	rc := mutate.Extract(img)
	defer rc.Close()
	if err := untar(ctx, rc, rootfs, untarLimits{maxBytes: maxBytes, maxEntries: maxEntries}, c.logger()); err != nil {
		return Config{}, err
	}
	c.makeMountPoints(rootfs)
	b, err := json.Marshal(metadata{Digest: digest, Config: cfg, Bytes: treeBytes(rootfs)})
	if err != nil {
		return Config{}, fmt.Errorf("encode metadata: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, metadataName), b, 0o600); err != nil {
		return Config{}, fmt.Errorf("write metadata: %w", err)
	}
	return cfg, nil
}

// makeMountPoints creates c.MountPoints in rootfs. A failure (the image has
// a file or an absolute symlink there) is only logged: runsc then creates
// or rejects the mount point itself at run time.
func (c *Cache) makeMountPoints(rootfs string) {
	if len(c.MountPoints) == 0 {
		return
	}
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		c.logger().Warn("open rootfs for mount points", "err", err)
		return
	}
	defer root.Close()
	for _, mp := range c.MountPoints {
		rel := strings.TrimPrefix(filepath.Clean("/"+mp), "/")
		if rel == "" {
			continue
		}
		if err := root.MkdirAll(rel, 0o755); err != nil {
			c.logger().Warn("create mount point", "path", mp, "err", err)
		}
	}
}

// Lookup returns the image if it is already in the cache.
func (c *Cache) Lookup(digest string) (*Image, bool, error) {
	hex, err := digestHex(digest)
	if err != nil {
		return nil, false, err
	}
	dir := filepath.Join(c.Root, hex)
	b, err := os.ReadFile(filepath.Join(dir, metadataName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read image metadata: %w", err)
	}
	var m metadata
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, false, fmt.Errorf("decode image metadata %s: %w", dir, err)
	}
	if m.Digest != digest {
		return nil, false, fmt.Errorf("image cache entry %s holds %s", dir, m.Digest)
	}
	c.touch(dir)
	return &Image{Digest: digest, Dir: dir, RootFS: filepath.Join(dir, rootfsName), Config: m.Config}, true, nil
}

// removeTemps removes temporary directories that an unpack of hex left
// when its process died. The caller holds hex's lock, so none is live.
func (c *Cache) removeTemps(hex string) error {
	matches, err := filepath.Glob(filepath.Join(c.Root, hex+".tmp-*"))
	if err != nil {
		return fmt.Errorf("find temp dirs: %w", err)
	}
	for _, m := range matches {
		c.logger().Info("removing stale unpack dir", "dir", m)
		if err := os.RemoveAll(m); err != nil {
			return fmt.Errorf("remove stale unpack dir: %w", err)
		}
	}
	return nil
}
