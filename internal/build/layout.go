package build

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Published images are OCI image layouts, one per manifest digest:
// <ImagesDir>/<hex>/{oci-layout,index.json,blobs/sha256/...}. A layout appears
// under its final name by one rename, so a reader never sees half of one.
//
// Their layers are uncompressed tars, named by their diff IDs, and every blob
// is a hard link into the pool, <ImagesDir>/.pool, itself an OCI layout that
// `buildah push` writes into. That is what makes export cheap: buildah reuses
// a blob already in its destination without reading the layer again, but it
// looks only for the layer's uncompressed digest. So after each push the
// builder decompresses the few new layers into the pool under their diff IDs
// and writes the manifest anew with every layer uncompressed. A code-only
// rebuild then exports in milliseconds instead of re-reading and compressing
// the whole image, and the manifest, hence the digest, does not depend on
// which layers happened to be reused. A pooled blob with a link count of 1 is
// used by no published layout (see PruneBlobPool).

var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// poolRefName is the name buildah's pushes get in the pool's index; each push
// replaces the last.
const poolRefName = "skiff-build"

func (b *Builder) poolDir() string { return filepath.Join(b.cfg.ImagesDir, ".pool") }

func (b *Builder) poolBlob(h v1.Hash) string {
	return filepath.Join(b.poolDir(), "blobs", h.Algorithm, h.Hex)
}

// readDigestFile reads the manifest digest buildah push wrote.
func readDigestFile(path string) (v1.Hash, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("reading pushed digest: %w", err)
	}
	digest := strings.TrimSpace(string(raw))
	if !digestPattern.MatchString(digest) {
		return v1.Hash{}, fmt.Errorf("pushed digest %q is not a sha256 digest", digest)
	}
	return v1.NewHash(digest)
}

// normalize turns the manifest buildah pushed into the pool into the
// published one: each compressed layer is decompressed into the pool under
// its diff ID (and the compressed copy dropped), and every layer descriptor
// becomes an uncompressed tar. It returns the new manifest's bytes.
func (b *Builder) normalize(pushed v1.Hash) ([]byte, error) {
	p, err := layout.FromPath(b.poolDir())
	if err != nil {
		return nil, fmt.Errorf("opening blob pool: %w", err)
	}
	img, err := p.Image(pushed)
	if err != nil {
		return nil, fmt.Errorf("reading pushed image: %w", err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("reading pushed manifest: %w", err)
	}
	layers, diffIDs, err := layersWithDiffIDs(img)
	if err != nil {
		return nil, fmt.Errorf("reading pushed image: %w", err)
	}
	if len(layers) != len(m.Layers) {
		return nil, fmt.Errorf("pushed image has %d layers but its manifest lists %d", len(layers), len(m.Layers))
	}
	out := *m
	out.Layers = make([]v1.Descriptor, len(m.Layers))
	var compressed []v1.Hash
	for i, l := range layers {
		desc := m.Layers[i]
		if desc.MediaType != types.OCIUncompressedLayer || desc.Digest != diffIDs[i] {
			if err := b.decompressIntoPool(l, diffIDs[i]); err != nil {
				return nil, fmt.Errorf("layer %d: %w", i, err)
			}
			compressed = append(compressed, desc.Digest)
		}
		info, err := os.Stat(b.poolBlob(diffIDs[i]))
		if err != nil {
			return nil, fmt.Errorf("layer %d: %w", i, err)
		}
		out.Layers[i] = v1.Descriptor{
			MediaType:   types.OCIUncompressedLayer,
			Size:        info.Size(),
			Digest:      diffIDs[i],
			Annotations: desc.Annotations,
		}
	}
	// buildah's compressed layers and its manifest are not published.
	for _, h := range append(compressed, pushed) {
		if err := os.Remove(b.poolBlob(h)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("dropping pushed blob: %w", err)
		}
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encoding manifest: %w", err)
	}
	return raw, nil
}

// decompressIntoPool writes l's uncompressed tar to the pool under diffID,
// checking that it hashes to diffID: buildah trusts a pooled blob by its name
// alone, so a wrong one would end up in every later image.
func (b *Builder) decompressIntoPool(l v1.Layer, diffID v1.Hash) error {
	dst := b.poolBlob(diffID)
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	rc, err := l.Uncompressed()
	if err != nil {
		return fmt.Errorf("decompressing: %w", err)
	}
	defer rc.Close()
	tmp := dst + ".tmp-" + rand.Text()
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("creating pooled layer: %w", err)
	}
	defer os.Remove(tmp) // a no-op once renamed
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(f, h), rc)
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("writing pooled layer: %w", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != diffID.Hex {
		return fmt.Errorf("decompressed layer hashes to sha256:%s, want %s", got, diffID)
	}
	return os.Rename(tmp, dst)
}

// writeLayout writes an OCI layout at dir holding the manifest (written
// there) and its config and layers (hard links to the pool), with tag as the
// manifest's ref name. It returns the manifest digest.
func (b *Builder) writeLayout(dir string, manifest []byte, tag string) (v1.Hash, error) {
	digest, size, err := v1.SHA256(bytes.NewReader(manifest))
	if err != nil {
		return v1.Hash{}, err
	}
	m, err := v1.ParseManifest(bytes.NewReader(manifest))
	if err != nil {
		return v1.Hash{}, fmt.Errorf("parsing manifest: %w", err)
	}
	blobs := filepath.Join(dir, "blobs", "sha256")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return v1.Hash{}, fmt.Errorf("creating layout: %w", err)
	}
	for _, d := range append([]v1.Descriptor{m.Config}, m.Layers...) {
		if err := os.Link(b.poolBlob(d.Digest), filepath.Join(blobs, d.Digest.Hex)); err != nil && !errors.Is(err, fs.ErrExist) {
			return v1.Hash{}, fmt.Errorf("linking blob into layout: %w", err)
		}
	}
	index, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType:   types.OCIManifestSchema1,
			Size:        size,
			Digest:      digest,
			Annotations: map[string]string{"org.opencontainers.image.ref.name": tag},
		}},
	})
	if err != nil {
		return v1.Hash{}, fmt.Errorf("encoding index: %w", err)
	}
	for name, body := range map[string][]byte{
		filepath.Join(blobs, digest.Hex): manifest,
		filepath.Join(dir, "index.json"): index,
		filepath.Join(dir, "oci-layout"): []byte(`{"imageLayoutVersion":"1.0.0"}`),
	} {
		if err := os.WriteFile(name, body, 0o644); err != nil {
			return v1.Hash{}, fmt.Errorf("writing layout: %w", err)
		}
	}
	return digest, nil
}

// publishLayout moves the finished layout at tmp to final. When final already
// exists (the same image was built before) it is kept and tmp is removed.
func publishLayout(tmp, final string) (reused bool, err error) {
	if _, err := os.Stat(final); err == nil {
		return true, os.RemoveAll(tmp)
	}
	if err := os.Rename(tmp, final); err != nil {
		if errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENOTEMPTY) {
			return true, os.RemoveAll(tmp)
		}
		return false, fmt.Errorf("publishing image layout: %w", err)
	}
	return false, nil
}

// PruneBlobPool removes pooled blobs that no published layout links to any
// more (after the server deleted some layouts) and returns how many it
// removed. The layers it removes are exported afresh if a later build needs
// them. It waits for a running export, which may be linking blobs; a
// layout exported but not yet published holds links of its own.
func (b *Builder) PruneBlobPool(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	b.exportMu.Lock()
	defer b.exportMu.Unlock()
	dir := filepath.Join(b.poolDir(), "blobs", "sha256")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("listing blob pool: %w", err)
	}
	removed := 0
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok || st.Nlink != 1 || !info.Mode().IsRegular() {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, fmt.Errorf("pruning blob pool: %w", err)
		}
		removed++
	}
	return removed, nil
}
