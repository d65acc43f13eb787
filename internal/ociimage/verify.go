package ociimage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// openImage opens the image manifest with digest in the OCI layout at dir
// and checks every blob it names against its digest and size. ggcr reads
// layout blobs by file name without hashing them, and the layout came over
// the network, so this is the integrity check.
func openImage(ctx context.Context, dir, digest string, maxBytes int64) (v1.Image, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("open layout: %w", err)
	}
	h, err := v1.NewHash(digest)
	if err != nil {
		return nil, fmt.Errorf("parse digest: %w", err)
	}
	img, err := p.Image(h)
	if err != nil {
		return nil, fmt.Errorf("open image %s: %w", digest, err)
	}
	raw, err := img.RawManifest()
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	if got := sha256Hex(raw); "sha256:"+got != digest {
		return nil, fmt.Errorf("manifest digest is sha256:%s, want %s", got, digest)
	}
	mt, err := img.MediaType()
	if err != nil {
		return nil, fmt.Errorf("manifest media type: %w", err)
	}
	if !mt.IsImage() {
		return nil, fmt.Errorf("%s is a %s, want an image manifest (resolve indexes to one platform first)", digest, mt)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("decode manifest: %w", err)
	}
	if err := verifyBlob(ctx, p, m.Config); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var total int64
	for _, l := range m.Layers {
		if total += l.Size; total > maxBytes {
			return nil, fmt.Errorf("layers total over %d bytes", maxBytes)
		}
		if err := verifyBlob(ctx, p, l); err != nil {
			return nil, fmt.Errorf("layer: %w", err)
		}
	}
	return img, nil
}

func verifyBlob(ctx context.Context, p layout.Path, d v1.Descriptor) error {
	if d.Digest.Algorithm != "sha256" {
		return fmt.Errorf("blob %s: only sha256 is supported", d.Digest)
	}
	rc, err := p.Blob(d.Digest)
	if err != nil {
		return fmt.Errorf("open blob %s: %w", d.Digest, err)
	}
	defer rc.Close()
	hash := sha256.New()
	// One byte more than declared, to notice a blob that is too long.
	n, err := copyCtx(ctx, hash, io.LimitReader(rc, d.Size+1))
	if err != nil {
		return fmt.Errorf("read blob %s: %w", d.Digest, err)
	}
	if n != d.Size {
		return fmt.Errorf("blob %s is %d bytes, want %d", d.Digest, n, d.Size)
	}
	if got := hex.EncodeToString(hash.Sum(nil)); got != d.Digest.Hex {
		return fmt.Errorf("blob %s hashes to sha256:%s", d.Digest, got)
	}
	return nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// copyCtx is io.Copy that gives up once ctx is done, checked between
// 256 KiB chunks.
func copyCtx(ctx context.Context, dst io.Writer, src io.Reader) (int64, error) {
	buf := make([]byte, 256<<10)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		m, err := io.CopyBuffer(dst, io.LimitReader(src, int64(len(buf))), buf)
		n += m
		if err != nil {
			return n, err
		}
		if m < int64(len(buf)) {
			return n, nil
		}
	}
}
