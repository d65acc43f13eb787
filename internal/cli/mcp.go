package cli

import (
	"context"
	"log/slog"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skiffhq/skiff/internal/mcp"
)

// runMCP serves the MCP tools over stdio for an agent host that starts
// `skiff mcp` itself: stdout carries only the protocol, so nothing else may
// print there.
func runMCP(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("mcp [--url URL] [--token TOKEN]",
		`Serves Skiff's tools to an agent host over the Model Context Protocol on
stdin and stdout, acting with the saved login ('skiff login') or --url and
--token. Besides the tools of the remote server (POST /mcp), it can push a
local directory and download artifacts to local files. Add it to a host as
{"command": "skiff", "args": ["mcp"]} (docs/mcp.md).`)
	var cf clientFlags
	fs.StringVar(&cf.url, "url", "", "the server's address (default: the one 'skiff login' saved)")
	fs.StringVar(&cf.token, "token", "", "API key or session token (default: the one 'skiff login' saved)")
	pos, err := e.parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(fs, pos, 0, 0); err != nil {
		return err
	}
	c, _, err := e.client(&cf, true)
	if err != nil {
		return err
	}
	tools, err := mcp.New(mcp.Config{Version: Version, Local: true,
		Logger: slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return err
	}
	err = tools.Server(mcp.Session{Client: c}).Run(ctx, &sdk.StdioTransport{})
	if ctx.Err() != nil {
		return nil // interrupted: the host stopped us
	}
	return err
}
