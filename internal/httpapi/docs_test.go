package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/docs"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/project"
	"github.com/skiffhq/skiff/internal/testenv"
)

func TestDocs(t *testing.T) {
	runSuite(t, []apiCase{
		{"discovery_addresses", testDiscoveryAddresses},
		{"docs_index_and_pages", testDocsIndexAndPages},
		{"docs_links_resolve", testDocsLinksResolve},
		{"llms_txt", testLLMsTxt},
		{"docs_commands_run", testDocsCommandsRun},
	}, nil)
}

// Every markdown file of docs/ is published: none is forgotten.
func TestDocsCatalogHasEveryPage(t *testing.T) {
	t.Parallel()
	files, err := fs.Glob(docs.Pages, "*.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, p := range docs.Catalog() {
		listed[p.File] = true
	}
	for _, f := range files {
		if !listed[f] {
			t.Errorf("docs/%s is not in docs.Catalog(), so it is not served", f)
		}
	}
}

// discovery is every address of the specification's section 1 (and the
// landing page) with the content type it must answer a plain client.
var discovery = []struct{ path, contentType, contains string }{
	{"/", "text/html; charset=utf-8", "Join the waitlist"},
	{"/skill.md", "text/markdown; charset=utf-8", "# Skiff skill"},
	{"/llms.txt", "text/markdown; charset=utf-8", "# Skiff"},
	{"/llms-full.txt", "text/markdown; charset=utf-8", "## Versioning rules"},
	{"/api/v1/docs", "application/json", `"pages"`},
	{"/api/v1/docs/python-sdk", "text/markdown; charset=utf-8", "# Python SDK"},
	{"/api/v1/docs/workflows", "text/markdown; charset=utf-8", "## map_reduce"},
	{"/openapi.json", "application/json", `"openapi"`},
	{"/docs", "text/markdown; charset=utf-8", "# Skiff documentation"},
	{"/docs/pricing", "text/markdown; charset=utf-8", "| CPU core |"},
	{"/docs/changelog", "text/markdown; charset=utf-8", "## Versioning rules"},
	{"/docs/hosting", "text/markdown; charset=utf-8", "--trusted-proxy"},
	{"/docs/projects/project-manifest", "text/markdown; charset=utf-8", "skiff.project.json"},
}

func testDiscoveryAddresses(t *testing.T, f *fixture) {
	for _, d := range discovery {
		r := f.anon.Get(t, d.path).Want(t, http.StatusOK)
		if got := r.Header.Get("Content-Type"); got != d.contentType {
			t.Errorf("GET %s: Content-Type %q, want %q", d.path, got, d.contentType)
		}
		if !bytes.Contains(r.Body, []byte(d.contains)) {
			t.Errorf("GET %s: body lacks %q", d.path, d.contains)
		}
		if d.path == "/openapi.json" {
			continue // served by its own handler, cached by its own rules
		}
		etag := r.Header.Get("ETag")
		if !strings.HasPrefix(etag, `"`) {
			t.Errorf("GET %s: ETag %q, want a quoted entity tag", d.path, etag)
			continue
		}
		h := f.anon.Do(t, apitest.Request{Method: "HEAD", Path: d.path}).Want(t, http.StatusOK)
		if h.Header.Get("ETag") != etag || h.Header.Get("Content-Type") != d.contentType || len(h.Body) != 0 {
			t.Errorf("HEAD %s: ETag %q, Content-Type %q, %d body bytes; want GET's headers and no body", d.path,
				h.Header.Get("ETag"), h.Header.Get("Content-Type"), len(h.Body))
		}
		nm := f.anon.Do(t, apitest.Request{Method: "GET", Path: d.path, Header: http.Header{"If-None-Match": {etag}}})
		if nm.Status != http.StatusNotModified || len(nm.Body) != 0 {
			t.Errorf("GET %s with If-None-Match %s: got %d with %d bytes, want 304 and no body", d.path, etag, nm.Status, len(nm.Body))
		}
	}
	// Browsers get HTML from the same addresses.
	for _, path := range []string{"/docs", "/docs/pricing", "/docs/changelog", "/docs/hosting", "/docs/projects/project-manifest"} {
		r := f.anon.Do(t, apitest.Request{Method: "GET", Path: path,
			Header: http.Header{"Accept": {"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}}}).Want(t, http.StatusOK)
		if got := r.Header.Get("Content-Type"); got != "text/html; charset=utf-8" {
			t.Errorf("browser GET %s: Content-Type %q, want text/html", path, got)
		}
		if !bytes.Contains(r.Body, []byte(`<nav class="toc"`)) || !bytes.Contains(r.Body, []byte("<!DOCTYPE html>")) {
			t.Errorf("browser GET %s: want an HTML document with a table of contents", path)
		}
		if !strings.Contains(r.Header.Get("Vary"), "Accept") {
			t.Errorf("GET %s: Vary %q, want Accept (the answer depends on it)", path, r.Header.Get("Vary"))
		}
	}
	// The landing page shows the live rates the API charges: the default
	// market rate of a CPU core, 0.02 USD an hour, billed at 0.027.
	if land := f.anon.Get(t, "/").Body; !bytes.Contains(land, []byte("<th scope=\"row\">CPU core</th><td>0.02</td><td>0.027</td>")) ||
		!bytes.Contains(land, []byte("<code>cpu-small</code>")) {
		t.Errorf("landing page lacks the live CPU rate row and the presets:\n%s", land)
	}
	f.anon.Get(t, "/docs/no-such-page").Fail(t, http.StatusNotFound)
	f.anon.Get(t, "/api/v1/docs/no-such-page").Fail(t, http.StatusNotFound)
}

func testDocsIndexAndPages(t *testing.T, f *fixture) {
	var idx struct {
		Pages []struct {
			Slug, Title, Summary, URL string
			MarkdownURL               string `json:"markdown_url"`
		} `json:"pages"`
		Count int `json:"count"`
	}
	f.anon.Get(t, "/api/v1/docs").JSON(t, http.StatusOK, &idx)
	if idx.Count != len(docs.Catalog()) || len(idx.Pages) != idx.Count {
		t.Fatalf("index lists %d pages (count %d), want %d", len(idx.Pages), idx.Count, len(docs.Catalog()))
	}
	for _, p := range idx.Pages {
		if p.Title == "" || p.Summary == "" {
			t.Errorf("page %s: title %q summary %q, want both", p.Slug, p.Title, p.Summary)
		}
		for _, u := range []string{p.URL, p.MarkdownURL} {
			path, ok := strings.CutPrefix(u, f.e.URL)
			if !ok {
				t.Errorf("page %s: URL %q is not on this server %s", p.Slug, u, f.e.URL)
				continue
			}
			r := f.anon.Get(t, path).Want(t, http.StatusOK)
			if !bytes.Contains(r.Body, []byte("# "+p.Title)) {
				t.Errorf("GET %s: body lacks its title %q", path, p.Title)
			}
		}
	}
}

var (
	hrefRe = regexp.MustCompile(`href="([^"]*)"`)
	idRe   = regexp.MustCompile(`id="([^"]*)"`)
)

// Every internal link of every HTML page (and the landing page) leads
// somewhere: the path answers 200 and the fragment names an element.
func testDocsLinksResolve(t *testing.T, f *fixture) {
	html := func(path string) *apitest.Response {
		return f.anon.Do(t, apitest.Request{Method: "GET", Path: path, Header: http.Header{"Accept": {"text/html"}}})
	}
	pages := []string{"/"}
	for _, p := range docs.Catalog() {
		pages = append(pages, p.Path)
	}
	ids := map[string]map[string]bool{}
	idsOf := func(path string) map[string]bool {
		if ids[path] == nil {
			ids[path] = map[string]bool{}
			for _, m := range idRe.FindAllStringSubmatch(string(html(path).Body), -1) {
				ids[path][m[1]] = true
			}
		}
		return ids[path]
	}
	checked := 0
	for _, page := range pages {
		body := html(page).Want(t, http.StatusOK).Body
		for _, m := range hrefRe.FindAllStringSubmatch(string(body), -1) {
			href := strings.ReplaceAll(m[1], "&amp;", "&")
			if strings.HasPrefix(href, "http://") || strings.HasPrefix(href, "https://") {
				continue // external: not checked here
			}
			path, frag, _ := strings.Cut(href, "#")
			if path == "" {
				path = page
			}
			if !strings.HasPrefix(path, "/") {
				t.Errorf("%s links to %q: want an absolute path", page, href)
				continue
			}
			checked++
			if r := html(path); r.Status != http.StatusOK {
				t.Errorf("%s links to %s: got %d", page, href, r.Status)
				continue
			}
			if frag != "" && !idsOf(path)[frag] {
				t.Errorf("%s links to %s: no element with id %q there", page, href, frag)
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked %d links, want the pages' many links found", checked)
	}
}

func testLLMsTxt(t *testing.T, f *fixture) {
	body := string(f.anon.Get(t, "/llms.txt").Want(t, http.StatusOK).Body)
	lines := strings.Split(body, "\n")
	if lines[0] != "# Skiff" || !strings.HasPrefix(lines[2], "> ") {
		t.Errorf("llms.txt starts %q, want an H1 title then a blockquote summary (llmstxt.org)", strings.Join(lines[:3], "\n"))
	}
	link := regexp.MustCompile(`^- \[([^\]]+)\]\((\S+)\)(: .+)?$`)
	var n int
	for _, l := range lines {
		if !strings.HasPrefix(l, "- ") {
			continue
		}
		m := link.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("llms.txt list line %q is not '- [name](url): notes'", l)
			continue
		}
		n++
		path, ok := strings.CutPrefix(m[2], f.e.URL)
		if !ok {
			t.Errorf("llms.txt link %s is not on this server", m[2])
			continue
		}
		f.anon.Get(t, path).Want(t, http.StatusOK)
	}
	if n < len(docs.Catalog()) {
		t.Errorf("llms.txt has %d links, want at least one per page (%d)", n, len(docs.Catalog()))
	}
	if !strings.Contains(body, "\n## Optional\n") {
		t.Error("llms.txt has no Optional section")
	}
	full := string(f.anon.Get(t, "/llms-full.txt").Want(t, http.StatusOK).Body)
	for _, p := range docs.Catalog() {
		if !strings.Contains(full, "Source: "+f.e.URL+p.Path+"\n") {
			t.Errorf("llms-full.txt lacks page %s", p.Path)
		}
	}
	if strings.Contains(full, "<!-- skiff:rates -->") || !strings.Contains(full, "| CPU core |") {
		t.Error("llms-full.txt does not carry the live rates")
	}
}

// shBlock is one shell block of a page.
type shBlock struct {
	page, code string
	run        bool
	reason     string
}

// shBlocks reads the fenced blocks whose language is sh. A block is run
// unless its info string says "norun: <why>".
func shBlocks(t *testing.T) []shBlock {
	t.Helper()
	var out []shBlock
	for _, p := range docs.Catalog() {
		for _, fb := range pageBlocks(t, p.File) {
			if fb.lang != "sh" && fb.lang != "bash" && fb.lang != "shell" {
				continue
			}
			_, rest, _ := strings.Cut(fb.info, " ")
			b := shBlock{page: p.File, code: fb.code, run: true}
			if reason, ok := strings.CutPrefix(strings.TrimSpace(rest), "norun"); ok {
				b.run, b.reason = false, strings.TrimSpace(strings.TrimPrefix(reason, ":"))
			}
			out = append(out, b)
		}
	}
	return out
}

// readyBuilder stands in for buildah: the docs' pushes are real requests
// through the real push path, and this publishes what they pushed. Builds
// themselves are tested in internal/project and internal/build.
type readyBuilder struct{}

func (readyBuilder) Build(ctx context.Context, req project.BuildRequest) (*project.BuildResult, error) {
	if _, err := os.Stat(filepath.Join(req.ContextDir, "Dockerfile")); err != nil {
		return nil, &project.UserBuildError{Message: "no Dockerfile in the build context"}
	}
	return &project.BuildResult{ImageRef: "skiff.local/" + req.Tag, ImageDigest: "sha256:" + strings.Repeat("b", 64)}, nil
}

// Every shell command in the published pages runs against a real server:
// one bash per page, in reading order, sharing the server and a working
// directory, with SKIFF_URL and SKIFF_TOKEN set as the pages tell readers to.
func testDocsCommandsRun(t *testing.T, f *fixture) {
	for _, tool := range []string{"bash", "curl", "jq", "python3", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Skip(t, fmt.Sprintf("the docs' commands need %s: %v", tool, err))
		}
	}
	grant(t, f.e, f.acct.ID, 100_000_000)
	go func() { _ = f.e.Projects.RunBuilds(t.Context(), readyBuilder{}) }()
	dir := t.TempDir()
	// What the skill's "go build" step (not run here) leaves behind.
	if err := os.MkdirAll(filepath.Join(dir, "hello"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hello", "runner"), []byte("#!/runner\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	byPage := map[string][]shBlock{}
	var order []string
	var run, notRun int
	for _, b := range shBlocks(t) {
		if !b.run {
			notRun++
			if b.reason == "" {
				t.Errorf("%s: a block marked norun gives no reason:\n%s", b.page, b.code)
			}
			continue
		}
		run++
		if byPage[b.page] == nil {
			order = append(order, b.page)
		}
		byPage[b.page] = append(byPage[b.page], b)
	}
	for _, page := range order {
		var script strings.Builder
		script.WriteString("set -euo pipefail\n")
		for i, b := range byPage[page] {
			fmt.Fprintf(&script, "echo '>>> %s block %d' >&2\n%s\n", page, i+1, b.code)
		}
		cmd := exec.CommandContext(t.Context(), "bash", "-c", script.String())
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "SKIFF_URL="+f.e.URL, "SKIFF_TOKEN="+f.acct.Member, "SKIFF_WAIT_S=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("the commands of docs/%s failed: %v\n%s", page, err, out)
		}
	}
	if run < 20 {
		t.Errorf("ran %d shell blocks (%d marked norun); want the pages' commands found", run, notRun)
	}
	t.Logf("ran %d shell blocks of %d pages; %d marked norun with a reason", run, len(order), notRun)
	// The pages' requests left what they say they leave.
	var jobs struct {
		Total int `json:"total"`
	}
	f.member.Get(t, "/api/v1/jobs?limit=1").JSON(t, http.StatusOK, &jobs)
	if jobs.Total < 6 {
		t.Errorf("the docs' commands submitted %d jobs, want at least 6 (skill, 4 recipes, 402 recipe, python)", jobs.Total)
	}
	if l := waitlist(t, f.e.Store); len(l) < 2 {
		t.Errorf("waitlist has %d entries after the docs' commands, want 2", len(l))
	}
}
