// Package imagestore keeps published images where every controller finds
// them. Images are OCI layouts on this machine's disk, <Root>/<hex> (one per
// manifest digest, as the builder writes them); with a shared blob store
// (S3-compatible, when several controllers run) the builder's controller
// publishes each layout's blobs there, and another controller fetches a
// layout it lacks by its digest the first time a host needs it.
package imagestore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/clock"
)

// Source opens an image's OCI layout by its manifest digest
// ("sha256:<hex>"): a directory on this machine.
type Source interface {
	Layout(ctx context.Context, digest string) (string, error)
}

// Dir is the layouts on this machine only: the one-controller case.
type Dir string

// Layout is <dir>/<hex>; it is not checked.
func (d Dir) Layout(_ context.Context, digest string) (string, error) {
	h, err := digestHex(digest)
	if err != nil {
		return "", err
	}
	return filepath.Join(string(d), h), nil
}

// Shared is the layouts under Root, backed by Blob: Publish copies a
// layout's blobs (content addressed already) to Blob, and Layout fetches
// a layout absent under Root from it.
type Shared struct {
	Root string
	Blob artifact.Blob
	Log  *slog.Logger
	// Refresh: Publish writes again a blob the store holds already when
	// that copy is older than Refresh, so that a blob a new image reuses is
	// always younger than the sweep's retention, which spares it (set it
	// to half the retention). 0: a blob present is never written again.
	Refresh time.Duration
	Clock   clock.Clock // for Refresh

	mu sync.Mutex // one fetch at a time: a layout is fetched once
}

// maxManifestBytes bounds a manifest read from the blob store.
const maxManifestBytes = 4 << 20

// Publish uploads the blobs of the layout of digest under Root, skipping
// those the store has already (layers shared with earlier images) unless
// they are older than Refresh.
func (s *Shared) Publish(ctx context.Context, digest string) error {
	h, err := digestHex(digest)
	if err != nil {
		return err
	}
	dir := filepath.Join(s.Root, h, "blobs", "sha256")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("publish image %s: %w", digest, err)
	}
	for _, e := range entries {
		if info, err := s.Blob.Stat(ctx, e.Name()); err == nil && (s.Refresh <= 0 || s.Clock.Now().Sub(info.ModTime) < s.Refresh) {
			continue
		}
		if err := s.put(ctx, filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("publish image %s: blob %s: %w", digest, e.Name(), err)
		}
	}
	return nil
}

func (s *Shared) put(ctx context.Context, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := artifact.Put(ctx, s.Blob, f, 1<<40)
	if err != nil {
		return err
	}
	if res.SHA256 != filepath.Base(path) {
		return fmt.Errorf("content hashes to %s", res.SHA256)
	}
	return nil
}

// Layout returns <Root>/<hex>, fetching it from the blob store first when
// this machine does not have it.
func (s *Shared) Layout(ctx context.Context, digest string) (string, error) {
	h, err := digestHex(digest)
	if err != nil {
		return "", err
	}
	final := filepath.Join(s.Root, h)
	if _, err := os.Stat(filepath.Join(final, "index.json")); err == nil {
		return final, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := os.Stat(filepath.Join(final, "index.json")); err == nil {
		return final, nil
	}
	if err := s.fetch(ctx, h, final); err != nil {
		return "", fmt.Errorf("fetch image %s: %w", digest, err)
	}
	if s.Log != nil {
		s.Log.Info("image fetched from the blob store", "digest", digest)
	}
	return final, nil
}

// manifest is what fetch reads of an OCI or Docker image manifest.
type manifest struct {
	MediaType string       `json:"mediaType"`
	Config    descriptor   `json:"config"`
	Layers    []descriptor `json:"layers"`
}

type descriptor struct {
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// fetch writes the layout into a temporary sibling of final, verifying
// every blob's hash, and renames it into place: a reader never sees half.
func (s *Shared) fetch(ctx context.Context, h, final string) error {
	if err := os.MkdirAll(s.Root, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(s.Root, ".fetch-"+h+"-"+randomHex())
	defer os.RemoveAll(tmp)
	blobs := filepath.Join(tmp, "blobs", "sha256")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return err
	}
	raw, err := s.copyBlob(ctx, h, blobs, maxManifestBytes)
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	if m.MediaType == "" {
		m.MediaType = "application/vnd.oci.image.manifest.v1+json"
	}
	for _, d := range append([]descriptor{m.Config}, m.Layers...) {
		dh, err := digestHex(d.Digest)
		if err != nil {
			return err
		}
		if _, err := s.copyBlob(ctx, dh, blobs, -1); err != nil {
			return fmt.Errorf("blob %s: %w", d.Digest, err)
		}
	}
	index, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
		"manifests": []map[string]any{{"mediaType": m.MediaType, "digest": "sha256:" + h, "size": len(raw)}}})
	if err := os.WriteFile(filepath.Join(tmp, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "index.json"), index, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		if _, serr := os.Stat(filepath.Join(final, "index.json")); serr == nil {
			return nil // another process on this machine fetched it meanwhile
		}
		return err
	}
	return nil
}

// copyBlob copies the blob h into dir/h, checking its hash. With keep >= 0
// it also returns the content (at most keep bytes).
func (s *Shared) copyBlob(ctx context.Context, h, dir string, keep int64) ([]byte, error) {
	r, err := s.Blob.Open(ctx, h, 0, -1)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	f, err := os.Create(filepath.Join(dir, h))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sum := sha256.New()
	var w io.Writer = io.MultiWriter(f, sum)
	var buf strings.Builder
	src := io.Reader(r)
	if keep >= 0 {
		w = io.MultiWriter(w, &buf)
		src = io.LimitReader(r, keep+1)
	}
	n, err := io.Copy(w, src)
	if err != nil {
		return nil, err
	}
	if keep >= 0 && n > keep {
		return nil, fmt.Errorf("over %d bytes", keep)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != h {
		return nil, fmt.Errorf("content hashes to %s", got)
	}
	return []byte(buf.String()), f.Close()
}

func digestHex(digest string) (string, error) {
	h, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || !artifact.ValidDigest(h) {
		return "", errors.New("image digest must be sha256:<64 hex digits>")
	}
	return h, nil
}

func randomHex() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
