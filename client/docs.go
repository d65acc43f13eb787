package client

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/skiffhq/skiff/apiv1"
)

// DocMarkdown is one documentation page as the server publishes it
// (GET /api/v1/docs/{slug}), in markdown, live content filled in.
func (c *Client) DocMarkdown(ctx context.Context, slug string) ([]byte, error) {
	resp, err := c.do(ctx, &request{method: http.MethodGet, path: "/api/v1/docs/" + esc(slug)})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, fmt.Errorf("read docs page %s: %w", slug, err)
	}
	return b, nil
}

// Feedback sends a report (POST /api/v1/feedback); a client with a token
// ties it to its account.
func (c *Client) Feedback(ctx context.Context, f *apiv1.FeedbackRequest) (*apiv1.FeedbackResponse, error) {
	var out apiv1.FeedbackResponse
	return &out, c.call(ctx, &request{method: http.MethodPost, path: "/api/v1/feedback", body: f}, &out)
}
