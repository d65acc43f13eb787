// Package mcp is Skiff's Model Context Protocol server: typed tools over the
// API for agent hosts. It speaks to Skiff only through the public Go client
// (package client), as the CLI does, so that the remote server (mounted at
// /mcp by httpapi, calling the API it is part of with the caller's token)
// and the local one (`skiff mcp` over stdio, with the CLI's saved login)
// share one tool set; the local one adds the tools that need the user's
// disk (push a directory, download an artifact).
package mcp

import (
	"fmt"
	"log/slog"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skiffhq/skiff/client"
	"github.com/skiffhq/skiff/docs"
	"github.com/skiffhq/skiff/internal/docsite"
)

// Config configures the tool set.
type Config struct {
	// Version is reported to the agent host as the server's version.
	Version string
	// Local adds the tools that read and write the user's disk
	// (push_directory, download_artifact): only for `skiff mcp`, never for
	// the remote server, whose disk is not the caller's.
	Local bool
	// Logger logs the SDK's transport errors (nil: none).
	Logger *slog.Logger
}

// Session is what one server's tools act through.
type Session struct {
	// Client calls the API with the caller's credential.
	Client *client.Client
	// PublicURL is where the caller reaches the server, for the links the
	// tools hand back ("": the client's address).
	PublicURL string
}

func (s Session) publicURL() string {
	if s.PublicURL != "" {
		return strings.TrimRight(s.PublicURL, "/")
	}
	return s.Client.BaseURL()
}

// Tools builds MCP servers: the schemas, the instructions and the docs
// catalog are made once and shared by every server it builds.
type Tools struct {
	cfg          Config
	instructions string
	site         *docsite.Site
	schemas      *schemas
	cache        *sdk.SchemaCache
}

// New reads the instructions (skill.md) and the docs catalog and derives
// the tools' input schemas.
func New(cfg Config) (*Tools, error) {
	site, err := docsite.New(docs.Pages, docs.Catalog())
	if err != nil {
		return nil, fmt.Errorf("mcp: docs: %w", err)
	}
	e, ok := site.Entry("skill")
	if !ok {
		return nil, fmt.Errorf("mcp: docs catalog has no skill page")
	}
	skill, err := site.Markdown(e)
	if err != nil {
		return nil, fmt.Errorf("mcp: skill.md: %w", err)
	}
	sc, err := newSchemas()
	if err != nil {
		return nil, err
	}
	return &Tools{cfg: cfg, instructions: instructionsPreamble + string(skill), site: site, schemas: sc,
		cache: sdk.NewSchemaCache()}, nil
}

// instructionsPreamble maps skill.md's HTTP walk-through onto the tools.
const instructionsPreamble = `This server is Skiff, a compute job service: push a project (a Dockerfile
and a runner), submit jobs to it, wait for them and read their results. The
tools below are the API of the guide that follows; call wait_for_job after
submit_job, and read a failed call's recommended_action. A 402 answer carries
a quote: top up the account (topup_quote, then pay it) and call the same tool
again with the same idempotency_key. The guide's pages are resources
(skiff://docs/{slug}).

`

// Server returns an MCP server whose tools act through sess.
func (t *Tools) Server(sess Session) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "skiff", Title: "Skiff", Version: t.cfg.Version},
		&sdk.ServerOptions{Instructions: t.instructions, Logger: quiet(t.cfg.Logger), SchemaCache: t.cache})
	t.addProjectTools(s, sess)
	t.addJobTools(s, sess)
	t.addResultTools(s, sess)
	t.addAccountTools(s, sess)
	t.addArtifactTools(s, sess)
	if t.cfg.Local {
		t.addLocalTools(s, sess)
	}
	t.addDocResources(s, sess)
	return s
}
