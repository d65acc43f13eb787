package client

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/skiffhq/skiff/apiv1"
)

// PushResult is what a push answered: a build under way (Accepted, 202)
// or the published revision unchanged (Unchanged, 200).
type PushResult struct {
	Accepted  *apiv1.PushRecord
	Unchanged *apiv1.PushUnchanged
}

// PushRef is the push's reference, whichever the answer.
func (r *PushResult) PushRef() string {
	if r.Accepted != nil {
		return r.Accepted.PushRef
	}
	return r.Unchanged.PushRef
}

// WriteTarball writes dir as a gzip tarball to w, leaving out what its
// .dockerignore names. Entries are sorted and dated 0 with their mode kept,
// so the same content gives the same bytes (and the server sees it
// unchanged). It returns the files written.
func WriteTarball(w io.Writer, dir string) (files int, err error) {
	ig, err := loadIgnore(dir)
	if err != nil {
		return 0, fmt.Errorf("read .dockerignore: %w", err)
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if ig.ignored(rel) {
			if d.IsDir() && !ig.mayReinclude() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		var link string
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		} else if !info.Mode().IsRegular() && !info.IsDir() {
			return nil // sockets, devices: not project content
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		h.Name = rel
		if info.IsDir() {
			h.Name += "/"
		}
		h.ModTime, h.AccessTime, h.ChangeTime = time.Unix(0, 0), time.Time{}, time.Time{}
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			if err != nil {
				return err
			}
			files++
		}
		return nil
	})
	if err != nil {
		return files, fmt.Errorf("pack %s: %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		return files, err
	}
	return files, gz.Close()
}

func (ig *ignorer) mayReinclude() bool {
	for _, r := range ig.rules {
		if r.negate {
			return true
		}
	}
	return false
}

// PushDir packs dir (see WriteTarball) and streams it to the project's push
// endpoint: the tarball is never held in memory. progress, when not nil,
// is called with the bytes sent so far.
func (c *Client) PushDir(ctx context.Context, project, dir string, progress func(sent int64)) (*PushResult, error) {
	if _, err := os.Stat(filepath.Join(dir, "Dockerfile")); err != nil {
		return nil, fmt.Errorf("%s has no Dockerfile: a project is built from its Dockerfile (see 'skiff init')", dir)
	}
	open := func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() {
			_, err := WriteTarball(pw, dir)
			pw.CloseWithError(err)
		}()
		return &countingReader{r: pr, progress: progress}, nil
	}
	return c.push(ctx, project, open, -1)
}

// PushTarball sends a gzip tarball already made; open must give the same
// bytes each time it is called (a retry calls it again).
func (c *Client) PushTarball(ctx context.Context, project string, open func() (io.ReadCloser, error), size int64) (*PushResult, error) {
	return c.push(ctx, project, open, size)
}

func (c *Client) push(ctx context.Context, project string, open func() (io.ReadCloser, error), size int64) (*PushResult, error) {
	resp, err := c.do(ctx, &request{method: http.MethodPost, path: "/api/v1/projects/" + esc(project) + "/push",
		open: open, length: size, header: http.Header{"Content-Type": {"application/gzip"}}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := &PushResult{}
	if resp.StatusCode == http.StatusOK {
		out.Unchanged = &apiv1.PushUnchanged{}
		err = json.NewDecoder(resp.Body).Decode(out.Unchanged)
	} else {
		out.Accepted = &apiv1.PushRecord{}
		err = json.NewDecoder(resp.Body).Decode(out.Accepted)
	}
	if err != nil {
		return nil, fmt.Errorf("decode push answer: %w", err)
	}
	return out, nil
}

// PushStatus reads one push (ref "" is the latest).
func (c *Client) PushStatus(ctx context.Context, project, ref string) (*apiv1.PushRecord, error) {
	p := "/api/v1/projects/" + esc(project) + "/push"
	if ref != "" {
		p = "/api/v1/projects/" + esc(project) + "/pushes/" + esc(ref)
	}
	var out apiv1.PushRecord
	return &out, c.get(ctx, p, nil, &out)
}

// WaitPush polls a push every interval until it is terminal (published or
// failed), calling onUpdate with each new state.
func (c *Client) WaitPush(ctx context.Context, project, ref string, interval time.Duration, onUpdate func(*apiv1.PushRecord)) (*apiv1.PushRecord, error) {
	var last string
	for {
		rec, err := c.PushStatus(ctx, project, ref)
		if err != nil {
			return nil, err
		}
		if key := rec.Status + "\x00" + rec.LogTail; key != last && onUpdate != nil {
			onUpdate(rec)
			last = key
		}
		if rec.Terminal {
			return rec, nil
		}
		if err := c.sleep(ctx, interval); err != nil {
			return nil, err
		}
	}
}

// countingReader reports the bytes read through it.
type countingReader struct {
	r        io.ReadCloser
	n        int64
	progress func(int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.progress != nil && n > 0 {
		c.progress(c.n)
	}
	return n, err
}

func (c *countingReader) Close() error { return c.r.Close() }
