// Package ociimage unpacks OCI image layouts into a host's image cache: one
// read-only root filesystem per image digest, shared by every attempt of the
// revisions that use it.
//
// Images come from the controller and were built from untrusted
// Dockerfiles, so every blob is checked against its digest and the
// flattened filesystem is written by a hardened untar that cannot reach
// outside the new root (see untar.go).
package ociimage

import (
	"context"
	"log/slog"
	"sync"

	"github.com/skiffhq/skiff/internal/clock"
)

// Image is an unpacked image in the cache.
type Image struct {
	// Digest is the image manifest digest, "sha256:<hex>".
	Digest string
	// Dir is the cache entry, <cache root>/<hex>.
	Dir string
	// RootFS is the unpacked root filesystem, <Dir>/rootfs. Treat it as
	// read-only: it is shared.
	RootFS string
	// Config is the part of the image config the host agent uses.
	Config Config
	// Fresh is set when this call unpacked the image (a cache miss).
	Fresh bool
}

// Config is the runtime part of an image config (the OCI image config's
// "config" object).
type Config struct {
	Entrypoint []string `json:"entrypoint,omitempty"`
	Cmd        []string `json:"cmd,omitempty"`
	Env        []string `json:"env,omitempty"` // KEY=VALUE entries
	WorkingDir string   `json:"working_dir,omitempty"`
	User       string   `json:"user,omitempty"`
}

// Defaults for Cache limits.
const (
	// DefaultMaxBytes bounds the bytes written for one image. The spec caps
	// a push at 100 MB of gzip, but RUN steps can produce far more.
	DefaultMaxBytes = 32 << 30
	// DefaultMaxEntries bounds the files of one image.
	DefaultMaxEntries = 2_000_000
)

// Cache is a directory of unpacked images, safe for concurrent use by
// several goroutines and processes: each digest is unpacked once, under a
// lock file, into a temporary directory that is renamed into place.
type Cache struct {
	// Root is the cache directory. It is created 0700: the root
	// filesystems keep the images' file owners, which must mean nothing to
	// other users of the host.
	Root string
	// MaxBytes and MaxEntries bound one image's unpacked size; 0 means
	// DefaultMaxBytes and DefaultMaxEntries.
	MaxBytes   int64
	MaxEntries int
	// MountPoints are directories created in every root filesystem (for
	// example the sandbox's bind mount targets). runsc would otherwise
	// create missing mount points in the shared root filesystem itself at
	// the first run.
	MountPoints []string
	Logger      *slog.Logger
	// Clock dates the entries' last use (evict.go); nil: the system clock.
	Clock clock.Clock

	pinMu sync.Mutex
	pins  map[string]int // digest -> attempts using it (Pin)
}

func (c *Cache) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

func (c *Cache) limits() (int64, int) {
	maxBytes, maxEntries := c.MaxBytes, c.MaxEntries
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if maxEntries <= 0 {
		maxEntries = DefaultMaxEntries
	}
	return maxBytes, maxEntries
}

// Unpack is Cache{Root: cacheRoot}.Unpack with default limits and no mount
// points; the host agent should keep a configured Cache instead.
func Unpack(ctx context.Context, layoutDir, digest, cacheRoot string) (*Image, error) {
	c := &Cache{Root: cacheRoot}
	return c.Unpack(ctx, layoutDir, digest)
}
