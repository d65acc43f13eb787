package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/docs"
	"github.com/skiffhq/skiff/internal/docsite"
	"github.com/skiffhq/skiff/internal/fault"
)

// Content types of the discovery addresses.
const (
	typeMarkdown = "text/markdown; charset=utf-8"
	typeHTML     = "text/html; charset=utf-8"
	typeText     = "text/plain; charset=utf-8"
)

// newDocSite reads the embedded pages. They are compiled in, so a failure
// is a bug that every test would show at once.
func newDocSite() *docsite.Site {
	site, err := docsite.New(docs.Pages, docs.Catalog())
	if err != nil {
		panic(err)
	}
	return site
}

// pageMarkdown is a page as served, with live content filled in: the
// pricing page gets the current rates and presets.
func (s *Server) pageMarkdown(e docsite.Entry) ([]byte, error) {
	md, err := s.docs.Markdown(e)
	if err != nil {
		return nil, err
	}
	if e.Slug == "pricing" && s.jobs != nil {
		md = bytes.Replace(md, []byte(ratesMarker), []byte(rateTables(s.views.PresetList())), 1)
	}
	return md, nil
}

// docsPageAt serves the page whose HTML address is the request's path.
func (s *Server) docsPageAt(w http.ResponseWriter, r *http.Request) error {
	e, ok := s.docs.EntryByPath(r.URL.Path)
	if !ok {
		return fault.NotFound("page", r.URL.Path)
	}
	return s.servePage(w, r, e)
}

// docsPage serves /docs/{slug}.
func (s *Server) docsPage(w http.ResponseWriter, r *http.Request) error {
	e, ok := s.docs.Entry(r.PathValue("slug"))
	if !ok || e.Path != "/docs/"+e.Slug {
		return fault.New(fault.KindNotFound, "page_not_found", "GET /api/v1/docs lists every page.",
			"no documentation page %q", r.PathValue("slug"))
	}
	return s.servePage(w, r, e)
}

// servePage answers HTML to a client that asks for it (a browser) and
// markdown to everyone else (curl, agents).
func (s *Server) servePage(w http.ResponseWriter, r *http.Request, e docsite.Entry) error {
	md, err := s.pageMarkdown(e)
	if err != nil {
		return err
	}
	w.Header().Add("Vary", "Accept")
	if !prefersHTML(r) {
		serveBytes(w, r, typeMarkdown, md)
		return nil
	}
	page, err := s.docs.Render(e, md)
	if err != nil {
		return err
	}
	serveBytes(w, r, typeHTML, page)
	return nil
}

// docsMarkdown serves /api/v1/docs/{slug}: always markdown.
func (s *Server) docsMarkdown(w http.ResponseWriter, r *http.Request) error {
	e, ok := s.docs.Entry(r.PathValue("slug"))
	if !ok {
		return fault.New(fault.KindNotFound, "page_not_found", "GET /api/v1/docs lists every page.",
			"no documentation page %q", r.PathValue("slug"))
	}
	md, err := s.pageMarkdown(e)
	if err != nil {
		return err
	}
	serveBytes(w, r, typeMarkdown, md)
	return nil
}

// docsIndex answers GET /api/v1/docs: every page with its addresses.
func (s *Server) docsIndex(w http.ResponseWriter, r *http.Request) error {
	base := baseURL(r)
	idx := apiv1.DocsIndex{
		Pages:    []apiv1.DocsPage{},
		OpenAPI:  base + "/openapi.json",
		LLMsTxt:  base + "/llms.txt",
		LLMsFull: base + "/llms-full.txt",
		Skill:    base + "/skill.md",
	}
	for _, e := range s.docs.Entries() {
		idx.Pages = append(idx.Pages, apiv1.DocsPage{Slug: e.Slug, Title: e.Title, Summary: e.Summary,
			URL: base + e.Path, MarkdownURL: base + e.MarkdownPath()})
	}
	idx.Count = len(idx.Pages)
	var b bytes.Buffer
	writeJSONTo(&b, idx)
	serveBytes(w, r, "application/json", b.Bytes())
	return nil
}

// skill serves /skill.md.
func (s *Server) skill(w http.ResponseWriter, r *http.Request) error {
	e, _ := s.docs.Entry("skill")
	md, err := s.pageMarkdown(e)
	if err != nil {
		return err
	}
	serveBytes(w, r, typeMarkdown, md)
	return nil
}

// llmsTxt serves /llms.txt.
func (s *Server) llmsTxt(w http.ResponseWriter, r *http.Request) error {
	serveBytes(w, r, typeMarkdown, s.docs.LLMsTxt(baseURL(r)))
	return nil
}

// llmsFull serves /llms-full.txt: every page, in reading order, in one file.
func (s *Server) llmsFull(w http.ResponseWriter, r *http.Request) error {
	var b bytes.Buffer
	b.WriteString("# Skiff: the complete guide\n\n")
	b.WriteString("> Every page of the Skiff documentation in one file. Each page starts with a line `Source: <URL>`.\n\n")
	for _, e := range s.docs.Entries() {
		md, err := s.pageMarkdown(e)
		if err != nil {
			return err
		}
		b.WriteString("\n---\n\nSource: " + baseURL(r) + e.Path + "\n\n")
		b.Write(bytes.TrimSpace(md))
		b.WriteString("\n")
	}
	serveBytes(w, r, typeMarkdown, b.Bytes())
	return nil
}

// serveBytes answers a public document with an ETag: a request whose
// If-None-Match names it gets 304 and no body; HEAD gets the headers only
// (net/http drops the body). Range is not offered: the documents are small.
func serveBytes(w http.ResponseWriter, r *http.Request, contentType string, body []byte) {
	sum := sha256.Sum256(append([]byte(contentType+"\n"), body...))
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", "public, max-age=60")
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// etagMatches implements If-None-Match's weak comparison.
func etagMatches(header, etag string) bool {
	for t := range strings.SplitSeq(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

// prefersHTML reports whether the Accept header asks for HTML before
// markdown or plain text: browsers do, curl (*/*) and agents do not.
func prefersHTML(r *http.Request) bool {
	best, bestQ := "", -1.0
	for part := range strings.SplitSeq(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if _, err := fmtSscan(v, &q); err != nil {
				continue
			}
		}
		if q > bestQ && (mt == "text/html" || mt == "text/markdown" || mt == "text/plain" || mt == "application/xhtml+xml") {
			best, bestQ = mt, q
		}
	}
	return best == "text/html" || best == "application/xhtml+xml"
}

// baseURL is the server's address as the client reached it. The scheme is
// https when the connection is TLS; the Host header names the host.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func fmtSscan(s string, q *float64) (int, error) { return fmt.Sscan(s, q) }

func writeJSONTo(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
