// Package docsite publishes the repository's markdown documentation
// (package docs): each page as markdown for agents and as HTML for people,
// rendered with goldmark, with a table of contents, plus the llms.txt
// index, the one-file llms-full.txt and the JSON index's entries. The HTTP
// layer only chooses which to answer.
package docsite

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"regexp"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"

	"github.com/skiffhq/skiff/docs"
)

// Entry is a published page with the title and summary read from it.
type Entry struct {
	docs.Page
	Title   string // the page's first "# " heading
	Summary string // the first paragraph after it, as plain text
}

// MarkdownPath is where the page's markdown is served whatever the Accept
// header says.
func (e Entry) MarkdownPath() string { return "/api/v1/docs/" + e.Slug }

// Site holds the pages and the renderer.
type Site struct {
	files   fs.FS
	entries []Entry
	bySlug  map[string]int
	md      goldmark.Markdown
	layout  *template.Template
}

// New reads every page of the catalog from files (docs.Pages in
// production). A page without a title is an error: it could not be listed.
func New(files fs.FS, catalog []docs.Page) (*Site, error) {
	s := &Site{files: files, bySlug: map[string]int{},
		md:     goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithParserOptions(parser.WithAutoHeadingID())),
		layout: template.Must(template.New("page").Parse(pageTemplate)),
	}
	for _, p := range catalog {
		src, err := fs.ReadFile(files, p.File)
		if err != nil {
			return nil, fmt.Errorf("docs page %s: %w", p.Slug, err)
		}
		title, summary := titleAndSummary(string(src))
		if title == "" {
			return nil, fmt.Errorf("docs page %s (%s) has no '# ' title", p.Slug, p.File)
		}
		s.bySlug[p.Slug] = len(s.entries)
		s.entries = append(s.entries, Entry{Page: p, Title: title, Summary: summary})
	}
	return s, nil
}

// Entries lists the pages in reading order.
func (s *Site) Entries() []Entry { return append([]Entry(nil), s.entries...) }

// Entry finds a page by slug.
func (s *Site) Entry(slug string) (Entry, bool) {
	i, ok := s.bySlug[slug]
	if !ok {
		return Entry{}, false
	}
	return s.entries[i], true
}

// EntryByPath finds a page by its HTML address.
func (s *Site) EntryByPath(path string) (Entry, bool) {
	for _, e := range s.entries {
		if e.Path == path {
			return e, true
		}
	}
	return Entry{}, false
}

// mdLink is a link to another page as the repository writes it
// ("jobs.md", "billing.md#holds"), so that the files read well on a code
// host too.
var mdLink = regexp.MustCompile(`\]\(([a-z0-9-]+)\.md(#[^)\s]*)?\)`)

// Markdown is the page as served: its source with links between pages
// turned into their served addresses.
func (s *Site) Markdown(e Entry) ([]byte, error) {
	src, err := fs.ReadFile(s.files, e.File)
	if err != nil {
		return nil, err
	}
	return s.rewriteLinks(src), nil
}

func (s *Site) rewriteLinks(src []byte) []byte {
	return mdLink.ReplaceAllFunc(src, func(m []byte) []byte {
		sub := mdLink.FindSubmatch(m)
		for _, e := range s.entries {
			if e.File == string(sub[1])+".md" {
				return []byte("](" + e.Path + string(sub[2]) + ")")
			}
		}
		return m
	})
}

// Heading is one entry of a page's table of contents.
type Heading struct {
	Level int
	ID    string
	Text  string
}

// Render turns a page's markdown (as Markdown returns it, or with live
// content filled in) into a whole HTML document: site navigation, a table
// of contents of its second- and third-level headings, and the page.
func (s *Site) Render(e Entry, markdown []byte) ([]byte, error) {
	doc := s.md.Parser().Parse(text.NewReader(markdown))
	var toc []Heading
	err := ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		h, ok := n.(*ast.Heading)
		if !entering || !ok || h.Level < 2 || h.Level > 3 {
			return ast.WalkContinue, nil
		}
		id, _ := h.AttributeString("id")
		idb, _ := id.([]byte)
		toc = append(toc, Heading{Level: h.Level, ID: string(idb), Text: plainText(h, markdown)})
		return ast.WalkSkipChildren, nil
	})
	if err != nil {
		return nil, err
	}
	var body bytes.Buffer
	if err := s.md.Renderer().Render(&body, markdown, doc); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	err = s.layout.Execute(&out, pageData{
		Title: e.Title, HTMLTitle: htmlTitle(e.Title), Summary: e.Summary, Current: e.Slug, Pages: s.entries, TOC: toc,
		Body: template.HTML(body.String()), MarkdownPath: e.MarkdownPath(), CSS: template.CSS(SiteCSS),
	})
	return out.Bytes(), err
}

type pageData struct {
	Title, HTMLTitle, Summary, Current, MarkdownPath string
	Pages                                            []Entry
	TOC                                              []Heading
	Body                                             template.HTML
	CSS                                              template.CSS
}

// htmlTitle names the site after the page when that fits the 70
// characters search engines and tab strips show.
func htmlTitle(title string) string {
	if t := title + " - Skiff docs"; len(t) <= 70 {
		return t
	}
	return title
}

// plainText is a node's text without markup.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch t := c.(type) {
		case *ast.Text:
			b.Write(t.Segment.Value(src))
			if t.SoftLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(t.Value)
		case *ast.CodeSpan:
			for cc := t.FirstChild(); cc != nil; cc = cc.NextSibling() {
				if tt, ok := cc.(*ast.Text); ok {
					b.Write(tt.Segment.Value(src))
				}
			}
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	return strings.TrimSpace(b.String())
}

var (
	linkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	emphasis = regexp.MustCompile("[*_`]")
)

// titleAndSummary reads the first "# " heading and the paragraph after it.
func titleAndSummary(src string) (title, summary string) {
	lines := strings.Split(src, "\n")
	i := 0
	for ; i < len(lines); i++ {
		if t, ok := strings.CutPrefix(lines[i], "# "); ok {
			title = strings.TrimSpace(t)
			i++
			break
		}
	}
	for ; i < len(lines) && strings.TrimSpace(lines[i]) == ""; i++ {
	}
	var para []string
	for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
		para = append(para, strings.TrimSpace(lines[i]))
	}
	summary = strings.Join(para, " ")
	summary = linkText.ReplaceAllString(summary, "$1")
	summary = emphasis.ReplaceAllString(summary, "")
	if len(summary) > 300 {
		cut := strings.LastIndex(summary[:300], " ")
		summary = summary[:max(cut, 1)] + " ..."
	}
	return title, summary
}

// LLMsTxt is the llmstxt.org index: the site's name, a summary in a
// blockquote, and a list of links to each page's markdown with its summary.
// base is the server's absolute URL ("https://skiff.example.com").
func (s *Site) LLMsTxt(base string) []byte {
	var b bytes.Buffer
	b.WriteString("# Skiff\n\n")
	b.WriteString("> Skiff is a self-hostable compute job service: push a project (Dockerfile, skiff.project.json, code), " +
		"submit typed jobs (structured_runner, sweep, map_reduce, benchmark) that run in gVisor sandboxes, read JSON " +
		"results, and pay per second of runtime from a prepaid USD balance funded in USDC (x402 or MPP).\n\n")
	b.WriteString("Every endpoint is under /api/v1 and takes `Authorization: Bearer <token>`: a wallet session token (fls_) " +
		"or an API key (flk_). Failures answer {error, code, recommended_action, details}. Start with the skill.\n\n")
	b.WriteString("## Docs\n\n")
	for _, e := range s.entries {
		if e.Slug == "bench" || e.Slug == "changelog" || e.Slug == "hosting" {
			continue
		}
		fmt.Fprintf(&b, "- [%s](%s%s): %s\n", e.Title, base, e.MarkdownPath(), e.Summary)
	}
	fmt.Fprintf(&b, "- [OpenAPI 3.1 description](%s/openapi.json): every endpoint, header, status and error envelope\n", base)
	fmt.Fprintf(&b, "- [Everything in one file](%s/llms-full.txt): all of the pages above, concatenated\n", base)
	b.WriteString("\n## Optional\n\n")
	for _, slug := range []string{"changelog", "hosting", "bench"} {
		if e, ok := s.Entry(slug); ok {
			fmt.Fprintf(&b, "- [%s](%s%s): %s\n", e.Title, base, e.MarkdownPath(), e.Summary)
		}
	}
	return b.Bytes()
}
