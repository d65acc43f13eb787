package httpapi

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strconv"

	"github.com/skiffhq/skiff/internal/fault"
)

// consoleFiles is the web console: plain HTML, CSS and ES modules, served
// as they are (no build step). Every page reads the public API with the
// bearer token the person signed in with; nothing here is private.
//
//go:embed console
var consoleFiles embed.FS

// consoleCSP allows the console's own files and API calls and nothing
// else: no inline script, no other origin, no framing. Charts are SVG made
// with the DOM, and styles set through the CSSOM, which style-src does not
// govern.
const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// consoleTypes are the content types of the files the console has; a file
// of another kind is not served.
var consoleTypes = map[string]string{
	".html": typeHTML,
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// consoleIndex serves GET /console: the single page, which routes on the
// URL fragment (#/jobs/job_...), so that no address names a token and the
// server needs one route.
func (s *Server) consoleIndex(w http.ResponseWriter, r *http.Request) error {
	return serveConsoleFile(w, r, "index.html")
}

// consoleFile serves GET /console/{file...}: one embedded file.
func (s *Server) consoleFile(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("file")
	if name == "" {
		name = "index.html"
	}
	return serveConsoleFile(w, r, name)
}

func serveConsoleFile(w http.ResponseWriter, r *http.Request, name string) error {
	ctype, known := consoleTypes[path.Ext(name)]
	// fs.ValidPath refuses "..", empty and absolute names: embed.FS would
	// too, but the answer should be the same 404 whatever the reason.
	if !known || !fs.ValidPath(name) {
		return consoleNotFound(name)
	}
	body, err := consoleFiles.ReadFile("console/" + name)
	if err != nil {
		return consoleNotFound(name)
	}
	h := w.Header()
	consoleHeaders(h)
	// The files are small and change with the binary: a browser revalidates
	// each load (304 by ETag) rather than run a stale module beside a fresh
	// one, which fingerprinted names would need a build step to avoid.
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	h.Set("ETag", etag)
	h.Set("Cache-Control", "no-cache")
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
	return nil
}

// consoleHeaders are the security headers of every console file.
func consoleHeaders(h http.Header) {
	h.Set("Content-Security-Policy", consoleCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
}

func consoleNotFound(name string) error {
	return fault.New(fault.KindNotFound, "console_file_not_found", "Open /console; its pages load the files they need.",
		"the console has no file %q", name)
}
