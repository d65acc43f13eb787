package docsite

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/skiffhq/skiff/docs"
)

func TestSite(t *testing.T) {
	t.Parallel()
	files := fstest.MapFS{
		"a.md": {Data: []byte("# Page A\n\nThe **first** page, see [B](b.md#two).\nMore.\n\nRest.\n\n## One\n\ntext\n\n### Sub `code`\n\n## Two\n")},
		"b.md": {Data: []byte("# Page B\n\nSecond.\n\n## Two\n\nBack to [A](a.md) and [out](https://example.com/x.md).\n")},
	}
	site, err := New(files, []docs.Page{{Slug: "a", File: "a.md", Path: "/docs/a"}, {Slug: "b", File: "b.md", Path: "/docs/x/b"}})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := site.Entry("a")
	if a.Title != "Page A" || a.Summary != "The first page, see B. More." {
		t.Errorf("entry a = %q / %q, want the title and the first paragraph as plain text", a.Title, a.Summary)
	}
	md, err := site.Markdown(a)
	if err != nil || !strings.Contains(string(md), "[B](/docs/x/b#two)") {
		t.Errorf("markdown of a = %s, %v; want the link to b.md served as /docs/x/b#two", md, err)
	}
	b, _ := site.Entry("b")
	mdb, _ := site.Markdown(b)
	if !strings.Contains(string(mdb), "[A](/docs/a)") || !strings.Contains(string(mdb), "(https://example.com/x.md)") {
		t.Errorf("markdown of b = %s; want a.md rewritten and the external link kept", mdb)
	}
	html, err := site.Render(a, md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<title>Page A - Skiff docs</title>`, `<li class="toc-2"><a href="#one">One</a></li>`,
		`<li class="toc-3"><a href="#sub-code">Sub code</a></li>`, `<h2 id="two">Two</h2>`,
		`<a href="/docs/a" aria-current="page">Page A</a>`, `href="/api/v1/docs/a"`} {
		if !strings.Contains(string(html), want) {
			t.Errorf("rendered page lacks %s:\n%s", want, html)
		}
	}
	if _, err := New(fstest.MapFS{"c.md": {Data: []byte("no title\n")}}, []docs.Page{{Slug: "c", File: "c.md"}}); err == nil {
		t.Error("a page without a title was accepted")
	}
	if got := htmlTitle(strings.Repeat("x", 68)); got != strings.Repeat("x", 68) {
		t.Errorf("htmlTitle of a long title = %q, want the title alone", got)
	}
}
