package fleet

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// layoutOf is the directory of the image's OCI layout on this machine,
// fetched from the shared image store first when there is one.
func (c *Controller) layoutOf(ctx context.Context, digest string) (string, error) {
	hex, ok := strings.CutPrefix(digest, "sha256:")
	if !ok {
		return "", fmt.Errorf("image digest %q is not sha256", digest)
	}
	if c.cfg.Images != nil {
		return c.cfg.Images.Layout(ctx, digest)
	}
	return filepath.Join(c.cfg.ImagesDir, hex), nil
}

// OpenImage streams the image of an open attempt of the host holding
// token, as the tar of its OCI layout (agentproto.AttemptImageURLPath): a
// host on a machine of its own has no other way to the image. Only the
// attempt's own image is served, and only while the attempt is open, so a
// removed host's credential or a finished attempt fetches nothing.
func (c *Controller) OpenImage(ctx context.Context, token, attemptID string) (io.ReadCloser, error) {
	a, err := c.openAttemptOf(ctx, token, attemptID)
	if err != nil {
		return nil, err
	}
	rs, err := c.jobs.RunSpecOf(ctx, a.JobID)
	if err != nil {
		return nil, err
	}
	dir, err := c.layoutOf(ctx, rs.ImageDigest)
	if err != nil {
		return nil, err
	}
	files, err := layoutFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", rs.ImageDigest, err)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeLayoutTar(pw, dir, files)) }()
	return pr, nil
}

// layoutFiles lists what a host needs of a layout: the layout marker, the
// index and the blobs (the builder's layouts hold nothing else).
func layoutFiles(dir string) ([]string, error) {
	files := []string{"oci-layout", "index.json"}
	blobs, err := os.ReadDir(filepath.Join(dir, "blobs", "sha256"))
	if err != nil {
		return nil, err
	}
	for _, b := range blobs {
		if b.Type().IsRegular() || b.Type()&os.ModeSymlink != 0 {
			files = append(files, "blobs/sha256/"+b.Name())
		}
	}
	return files, nil
}

// writeLayoutTar writes files of dir as a tar stream; links (the builder
// shares blobs between layouts by hard or symbolic links) go as the files
// they lead to.
func writeLayoutTar(w io.Writer, dir string, files []string) error {
	tw := tar.NewWriter(w)
	for _, name := range files {
		if err := addFile(tw, filepath.Join(dir, filepath.FromSlash(name)), name); err != nil {
			return err
		}
	}
	return tw.Close()
}

func addFile(tw *tar.Writer, path, name string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: st.Size(), Typeflag: tar.TypeReg, ModTime: st.ModTime()}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
