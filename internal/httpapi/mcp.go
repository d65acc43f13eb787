package httpapi

import (
	"bytes"
	"net"
	"net/http"
	"strings"

	"github.com/skiffhq/skiff/client"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/mcp"
)

// newMCP builds the remote MCP server's handler (POST /mcp, docs/mcp.md).
// Its tools call this server's API over loopback with the caller's own
// token, through the same Go client as `skiff mcp`, so the remote and the
// local server share one tool set and every call is the API's (its auth,
// limits, holds and error envelopes).
func (s *Server) newMCP() http.Handler {
	tools, err := mcp.New(mcp.Config{Version: s.version, Logger: s.log})
	if err != nil {
		panic(err) // the embedded docs are broken: a build error
	}
	return tools.Handler(func(r *http.Request) mcp.Session {
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		return mcp.Session{
			Client: client.New(selfURL(r), strings.TrimSpace(token),
				client.WithUserAgent("skiff-mcp/"+s.version), client.WithRetries(2, 5e9)),
			PublicURL: baseURL(r),
		}
	})
}

// selfURL is this server as the connection that carried r reached it: the
// listener's own address, so the tools' calls never leave the machine
// (a proxy's public address may not be reachable from behind it).
func selfURL(r *http.Request) string {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && a != nil {
		return "http://" + a.String()
	}
	return baseURL(r)
}

// mcpServe serves POST /mcp for an authenticated caller (the route's
// access checks the bearer token first, as for the API). The SDK answers
// a request it cannot read with a plain-text error; those become the
// API's error envelope.
func (s *Server) mcpServe(w http.ResponseWriter, r *http.Request) error {
	ew := &envelopeWriter{ResponseWriter: w}
	s.mcp.ServeHTTP(ew, r)
	if !ew.captured {
		return nil
	}
	msg := strings.TrimSpace(ew.body.String())
	action := "Speak MCP's Streamable HTTP transport: POST one JSON-RPC message (or a batch) as application/json, " +
		"with Accept: application/json, text/event-stream (docs/mcp.md)."
	switch {
	case ew.status == http.StatusRequestEntityTooLarge:
		return fault.New(fault.KindTooLarge, "mcp_body_too_large", "Send a smaller JSON-RPC message.", "%s", msg)
	case ew.status >= 500:
		return fault.Internal(fault.New(fault.KindInternal, "mcp_failed", "", "%s", msg))
	}
	return fault.New(fault.KindBadRequest, "mcp_bad_request", action, "%s", msg)
}

// envelopeWriter holds back a plain-text failure answer so that the caller
// can answer the envelope instead; every other answer (JSON-RPC over JSON
// or an event stream) passes through, flushes included.
type envelopeWriter struct {
	http.ResponseWriter
	captured bool
	status   int
	body     bytes.Buffer
}

func (w *envelopeWriter) WriteHeader(code int) {
	if code >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.captured, w.status = true, code
		w.Header().Del("Content-Type")
		w.Header().Del("X-Content-Type-Options")
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *envelopeWriter) Write(b []byte) (int, error) {
	if w.captured {
		return w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush on the real writer (the
// progress notifications of a running tool are flushed as they come).
func (w *envelopeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
