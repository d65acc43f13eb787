package mcp

import (
	"context"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// docsURI is where a docs page is a resource: skiff://docs/{slug}.
const docsURI = "skiff://docs/"

// addDocResources offers every page of the documentation as a resource,
// read from the server (GET /api/v1/docs/{slug}) so that live content
// (the pricing page's rates) is the server's.
func (t *Tools) addDocResources(s *sdk.Server, sess Session) {
	read := func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		slug := strings.TrimPrefix(req.Params.URI, docsURI)
		if _, ok := t.site.Entry(slug); !ok {
			return nil, sdk.ResourceNotFoundError(req.Params.URI)
		}
		md, err := sess.Client.DocMarkdown(ctx, slug)
		if err != nil {
			return nil, err
		}
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{
			{URI: req.Params.URI, MIMEType: "text/markdown", Text: string(md)}}}, nil
	}
	for _, e := range t.site.Entries() {
		s.AddResource(&sdk.Resource{URI: docsURI + e.Slug, Name: e.Slug, Title: e.Title, Description: e.Summary,
			MIMEType: "text/markdown"}, read)
	}
}
