package client

import (
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"os"
	"path/filepath"

	"github.com/skiffhq/skiff/apiv1"
)

// PutArtifactFile uploads a file, streamed from disk (POST
// /api/v1/artifacts); jobID "" attaches it to no job. progress, when not
// nil, is called with the bytes sent so far.
func (c *Client) PutArtifactFile(ctx context.Context, path, jobID string, progress func(sent int64)) (*apiv1.Artifact, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	open := func() (io.ReadCloser, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		return &countingReader{r: f, progress: progress}, nil
	}
	return c.PutArtifact(ctx, filepath.Base(path), jobID, open, st.Size())
}

// PutArtifact uploads the bytes open gives (size -1 when unknown); open is
// called again for a retry.
func (c *Client) PutArtifact(ctx context.Context, filename, jobID string, open func() (io.ReadCloser, error), size int64) (*apiv1.Artifact, error) {
	h := http.Header{"Content-Type": {"application/octet-stream"}, "X-Artifact-Filename": {filename}}
	if jobID != "" {
		h.Set("X-Artifact-Job-Id", jobID)
	}
	var out apiv1.Artifact
	return &out, c.call(ctx, &request{method: http.MethodPost, path: "/api/v1/artifacts", open: open, length: size, header: h}, &out)
}

// GetArtifact opens an artifact's bytes; the caller closes them. size is
// the Content-Length (-1 when not sent).
func (c *Client) GetArtifact(ctx context.Context, id string) (body io.ReadCloser, size int64, err error) {
	resp, err := c.do(ctx, &request{method: http.MethodGet, path: "/api/v1/artifacts/" + esc(id),
		header: http.Header{"Accept": {"*/*"}}})
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode >= 300 {
		resp.Body.Close()
		return nil, 0, fmt.Errorf("artifact %s: the server answered %d (%s)", id, resp.StatusCode, resp.Header.Get("Location"))
	}
	return resp.Body, resp.ContentLength, nil
}

// ArtifactMeta reads an artifact's metadata.
func (c *Client) ArtifactMeta(ctx context.Context, id string) (*apiv1.Artifact, error) {
	var out apiv1.Artifact
	return &out, c.get(ctx, "/api/v1/artifacts/"+esc(id)+"/meta", nil, &out)
}

// DeleteArtifact deletes an artifact.
func (c *Client) DeleteArtifact(ctx context.Context, id string) (*apiv1.ArtifactDeleted, error) {
	var out apiv1.ArtifactDeleted
	return &out, c.call(ctx, &request{method: http.MethodDelete, path: "/api/v1/artifacts/" + esc(id)}, &out)
}

// Artifacts walks the account's artifacts, newest first.
func (c *Client) Artifacts(ctx context.Context) iter.Seq2[apiv1.Artifact, error] {
	return pages(ctx, c, nil, 200, func(ctx context.Context, q url.Values) ([]apiv1.Artifact, int, error) {
		var out apiv1.ArtifactList
		err := c.get(ctx, "/api/v1/artifacts", q, &out)
		return out.Artifacts, out.Total, err
	})
}

// ArtifactQuota reads the account's artifact quota.
func (c *Client) ArtifactQuota(ctx context.Context) (*apiv1.ArtifactQuota, error) {
	var out apiv1.ArtifactList
	return &out.Quota, c.get(ctx, "/api/v1/artifacts", url.Values{"limit": {"1"}}, &out)
}
