package mcp

import (
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Handler serves the tools over MCP's Streamable HTTP transport, each
// request with the session connect makes for it (the caller's token, the
// server's address). It is stateless: any controller behind a load
// balancer answers any request, and a progress notification travels on
// the response of the call it is about. The caller authenticates first
// (httpapi does, as for the API). The SDK's DNS-rebinding guard (refusing
// a loopback connection whose Host is not loopback) is off: every request
// carries a bearer token a rebinding page cannot have, and a server behind
// a reverse proxy on loopback sees its public Host on every request.
func (t *Tools) Handler(connect func(*http.Request) Session) http.Handler {
	return sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server { return t.Server(connect(r)) },
		&sdk.StreamableHTTPOptions{Stateless: true, Logger: quiet(t.cfg.Logger), DisableLocalhostProtection: true})
}
