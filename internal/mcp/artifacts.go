package mcp

import (
	"context"
	"fmt"
	"io"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skiffhq/skiff/apiv1"
)

// inlineLimit is the largest artifact read_artifact returns inline (and
// only when it is text); larger or binary ones come back as a link.
const inlineLimit = 64 << 10

type listArtifactsInput struct {
	JobID string `json:"job_id,omitempty" jsonschema:"only the artifacts this job produced"`
	Limit int    `json:"limit,omitempty" jsonschema:"the most artifacts to return, newest first (default 50)"`
}

type artifactInput struct {
	ArtifactID string `json:"artifact_id" jsonschema:"the artifact's id (art_...)"`
}

type artifactContent struct {
	Artifact *apiv1.Artifact `json:"artifact"`
	// Text is the content when it is UTF-8 text of at most inlineLimit
	// bytes; else Link says where to fetch it.
	Text       *string `json:"text,omitempty"`
	Link       string  `json:"link,omitempty"`
	LinkAuth   string  `json:"link_auth,omitempty"`
	NextAction string  `json:"next_action,omitempty"`
}

func (t *Tools) addArtifactTools(s *sdk.Server, sess Session) {
	c := sess.Client
	add(t, s, reads, "list_artifacts", "List artifacts",
		"The account's artifacts, newest first: uploads, files tasks wrote, spilled results and logs (GET /api/v1/artifacts).",
		func(ctx context.Context, _ *sdk.CallToolRequest, in listArtifactsInput) (any, error) {
			limit := in.Limit
			if limit <= 0 {
				limit = 50
			}
			var out []apiv1.Artifact
			for a, err := range c.Artifacts(ctx) {
				if err != nil {
					return nil, err
				}
				if in.JobID != "" && (a.JobID == nil || *a.JobID != in.JobID) {
					continue
				}
				out = append(out, a)
				if len(out) == limit {
					break
				}
			}
			return map[string]any{"artifacts": out, "count": len(out)}, nil
		})
	add(t, s, reads, "read_artifact", "Read an artifact",
		fmt.Sprintf("An artifact's metadata, with its content inline when it is text of at most %d KiB; otherwise a link to fetch it.", inlineLimit>>10),
		func(ctx context.Context, _ *sdk.CallToolRequest, in artifactInput) (any, error) {
			meta, err := c.ArtifactMeta(ctx, in.ArtifactID)
			if err != nil {
				return nil, err
			}
			out := artifactContent{Artifact: meta}
			if meta.Source == "local" && meta.Size <= inlineLimit {
				body, _, err := c.GetArtifact(ctx, in.ArtifactID)
				if err != nil {
					return nil, err
				}
				b, err := io.ReadAll(io.LimitReader(body, inlineLimit+1))
				body.Close()
				if err != nil {
					return nil, fmt.Errorf("read artifact %s: %w", in.ArtifactID, err)
				}
				if len(b) <= inlineLimit && isText(b) {
					text := string(b)
					out.Text = &text
					return out, nil
				}
			}
			switch {
			case meta.SignedURL != "":
				out.Link = meta.SignedURL
				out.LinkAuth = "none: the URL is signed until signed_url_expires_at"
			case meta.URL != nil:
				out.Link = *meta.URL
				out.LinkAuth = "none: an external URL"
			default:
				out.Link = sess.publicURL() + meta.Links.Content
				out.LinkAuth = "Authorization: Bearer <your Skiff token>"
			}
			out.NextAction = "Fetch the link"
			if t.cfg.Local {
				out.NextAction += ", or call download_artifact to write it to a file"
			}
			out.NextAction += "."
			return out, nil
		})
}

// isText says whether b reads as text: valid UTF-8 without NUL bytes.
func isText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range b {
		if c == 0 {
			return false
		}
	}
	return true
}
