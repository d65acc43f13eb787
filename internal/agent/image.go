package agent

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/ociimage"
)

// ImageTransfer is how a host of its own machine gets an attempt's image
// (protocol 5): the controller streams the image's OCI layout as a tar.
type ImageTransfer interface {
	FetchImage(ctx context.Context, urlPath string, w io.Writer) error
}

// imageFetches coalesces the fetches of one image: attempts of a new
// revision arrive together, and one download serves them all.
type imageFetches struct {
	root string // temporary layouts, removed once unpacked
	log  *slog.Logger

	mu       sync.Mutex
	inflight map[string]*sync.Mutex
}

// prepare returns the unpacked image of digest: from the image cache when
// it is there, otherwise fetched from urlPath, checked and unpacked.
func (f *imageFetches) prepare(ctx context.Context, ctl Controller, images *ociimage.Cache, digest, urlPath string) (*ociimage.Image, error) {
	if img, ok, err := images.Lookup(digest); err != nil || ok {
		return img, err
	}
	it, ok := ctl.(ImageTransfer)
	if !ok {
		return nil, errors.New("the controller client cannot fetch images")
	}
	f.mu.Lock()
	if f.inflight == nil {
		f.inflight = map[string]*sync.Mutex{}
	}
	m := f.inflight[digest]
	if m == nil {
		m = &sync.Mutex{}
		f.inflight[digest] = m
	}
	f.mu.Unlock()
	m.Lock()
	defer m.Unlock()
	if img, ok, err := images.Lookup(digest); err != nil || ok {
		return img, err // unpacked by the fetch we waited for
	}
	if err := os.MkdirAll(f.root, 0o700); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(f.root, "layout-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	pr, pw := io.Pipe()
	fetched := make(chan error, 1)
	go func() {
		err := it.FetchImage(ctx, urlPath, pw)
		pw.CloseWithError(err)
		fetched <- err
	}()
	start := time.Now()
	n, err := extractLayout(pr, dir, digest)
	pr.CloseWithError(err) // stops the download when extraction failed
	if ferr := <-fetched; ferr != nil && err == nil {
		err = ferr
	}
	if err != nil {
		return nil, fmt.Errorf("fetch image %s: %w", digest, err)
	}
	f.log.Info("image fetched from the controller", "digest", digest, "bytes", n, "ms", time.Since(start).Milliseconds())
	return images.Unpack(ctx, dir, digest)
}

var blobName = regexp.MustCompile(`^blobs/sha256/[0-9a-f]{64}$`)

// extractLayout writes the tar stream r of an OCI layout into dir. It
// takes only the layout's own files (oci-layout, index.json and
// blobs/sha256/<hex>, regular files), checks every blob against its name
// and the presence of the manifest of digest: what is unpacked then is
// exactly what digest names, whatever the stream held.
func extractLayout(r io.Reader, dir, digest string) (int64, error) {
	want, ok := strings.CutPrefix(digest, "sha256:")
	if !ok {
		return 0, fmt.Errorf("digest %q is not sha256", digest)
	}
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o700); err != nil {
		return 0, err
	}
	var total int64
	tr := tar.NewReader(r)
	manifest := false
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return total, fmt.Errorf("read layout: %w", err)
		}
		if h.Typeflag != tar.TypeReg || (h.Name != "oci-layout" && h.Name != "index.json" && !blobName.MatchString(h.Name)) {
			return total, fmt.Errorf("layout holds %q (type %c): not part of an OCI layout", h.Name, h.Typeflag)
		}
		sum, err := writeFile(filepath.Join(dir, filepath.FromSlash(h.Name)), tr)
		if err != nil {
			return total, err
		}
		total += h.Size
		if name, isBlob := strings.CutPrefix(h.Name, "blobs/sha256/"); isBlob {
			if sum != name {
				return total, fmt.Errorf("blob %s has sha256 %s: corrupted or tampered with", name, sum)
			}
			manifest = manifest || name == want
		}
	}
	if !manifest {
		return total, fmt.Errorf("layout lacks the manifest %s", digest)
	}
	return total, nil
}

func writeFile(path string, r io.Reader) (string, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(f, h), r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
