package httpapi_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/docs"
	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/openapi"
)

// specPath is the repository's copy of the interface specification; where
// the shared original sits beside the checkout, the copy must equal it.
const specPath = "../../test/spec/interface.md"

func readSpec(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	if orig, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "spec", "interface.md")); err == nil && string(orig) != string(b) {
		t.Errorf("test/spec/interface.md differs from ../shared/spec/interface.md: copy the specification again")
	}
	return string(b)
}

// specSection is the text of the section of spec whose heading starts
// with heading, up to the next section of the same level.
func specSection(t *testing.T, spec, heading string) string {
	t.Helper()
	i := strings.Index(spec, "\n"+heading)
	if i < 0 {
		t.Fatalf("the specification has no section %q", heading)
	}
	rest := spec[i+1:]
	if j := strings.Index(rest[len(heading):], "\n## "); j >= 0 {
		rest = rest[:len(heading)+j]
	}
	return rest
}

// tableRows are the cells of every markdown table row of text, header and
// separator rows left out.
func tableRows(text string) [][]string {
	var out [][]string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		out = append(out, cells)
	}
	return out
}

// specOperation is one method and concrete path of the spec's endpoint
// table (its parameters filled in with a sample value).
type specOperation struct{ method, path string }

var httpMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}

// specOperations reads section 4's tables: a row's path cell may list
// several paths ("/skill.md, /llms.txt"), paths relative to the first
// ("/api/v1/artifacts/direct, /direct/complete") and another method after
// a semicolon ("...; GET /multipart/parts"). SERVICE is Skiff's name.
func specOperations(t *testing.T, section string) []specOperation {
	t.Helper()
	param := regexp.MustCompile(`:[a-z_]+`)
	var out []specOperation
	for _, row := range tableRows(section) {
		if len(row) < 2 || !slices.Contains(httpMethods, row[0]) {
			continue
		}
		method, base := row[0], ""
		for _, segment := range strings.Split(row[1], ";") {
			segment = strings.TrimSpace(segment)
			if m, rest, ok := strings.Cut(segment, " "); ok && slices.Contains(httpMethods, m) {
				method, segment = m, rest
			}
			for _, p := range strings.Split(segment, ",") {
				p = strings.ReplaceAll(strings.TrimSpace(p), "service", "skiff")
				switch {
				case base == "":
					base = p[:strings.LastIndex(p, "/")]
				case !strings.HasPrefix(p, "/api/") && strings.HasPrefix(base, "/api/v1/") && strings.Count(base, "/") > 2:
					p = base + p // relative to the first path of the row
				}
				out = append(out, specOperation{method, param.ReplaceAllString(p, "p1")})
			}
		}
	}
	if len(out) < 60 {
		t.Fatalf("read %d operations from the specification's section 4; the table's shape changed", len(out))
	}
	return out
}

// patternMatches reports whether a net/http or OpenAPI path pattern
// matches the concrete path.
func patternMatches(pattern, path string) bool {
	if pattern == "/{$}" {
		return path == "/"
	}
	var re strings.Builder
	re.WriteString("^")
	for _, seg := range strings.Split(strings.TrimPrefix(pattern, "/"), "/") {
		re.WriteString("/")
		switch {
		case strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "...}"):
			re.WriteString(".+")
		case strings.HasPrefix(seg, "{"):
			re.WriteString("[^/]+")
		default:
			re.WriteString(regexp.QuoteMeta(seg))
		}
	}
	re.WriteString("$")
	return regexp.MustCompile(re.String()).MatchString(path)
}

// Every operation of the specification's endpoint table (section 4) is
// served by a route and described in openapi.json.
func TestSpecEndpointTableIsServedAndDescribed(t *testing.T) {
	t.Parallel()
	ops := specOperations(t, specSection(t, readSpec(t), "## 4."))
	t.Logf("%d operations in the specification's endpoint table", len(ops))
	e := apitest.Start(t, apitest.Options{})
	routes := e.Server.Routes()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapi.Document, &doc); err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if !slices.ContainsFunc(routes, func(r httpapi.Route) bool {
			return r.Method == op.method && patternMatches(r.Pattern, op.path)
		}) {
			t.Errorf("the specification's %s %s has no route", op.method, op.path)
		}
		described := false
		for p, methods := range doc.Paths {
			if _, ok := methods[strings.ToLower(op.method)]; ok && patternMatches(p, op.path) {
				described = true
			}
		}
		if !described {
			t.Errorf("the specification's %s %s is not in openapi.json", op.method, op.path)
		}
	}
}

// The reader turns the table's shorthand into every operation it names.
func TestSpecOperationsReadsTheShorthand(t *testing.T) {
	t.Parallel()
	section := "| Method | Path | Response |\n|---|---|---|\n" +
		"| GET | /skill.md, /llms.txt | x |\n" +
		"| POST | /api/v1/artifacts/direct, /direct/complete; GET /multipart/parts | x |\n" +
		"| GET | /service-host | x |\n| PUT | /api/v1/projects/:name/kv/:key | x |\n" +
		strings.Repeat("| GET | /health | x |\n", 60)
	got := specOperations(t, section)[:6]
	want := []specOperation{{"GET", "/skill.md"}, {"GET", "/llms.txt"}, {"POST", "/api/v1/artifacts/direct"},
		{"POST", "/api/v1/artifacts/direct/complete"}, {"GET", "/api/v1/artifacts/multipart/parts"}, {"GET", "/skiff-host"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if !patternMatches("/api/v1/projects/{name}/kv/{key...}", "/api/v1/projects/p1/kv/p1") || patternMatches("/api/v1/jobs/{id}", "/api/v1/jobs/p1/tasks") {
		t.Error("patternMatches: wrong answer on a parameter")
	}
}

// docs/limits.md has a row for every limit of the specification's section
// 8, with Skiff's value.
func TestLimitsPageStatesEverySpecLimit(t *testing.T) {
	t.Parallel()
	spec := tableRows(specSection(t, readSpec(t), "## 8."))
	page, err := fs.ReadFile(docs.Pages, "limits.md")
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string][]string{}
	for _, row := range tableRows(string(page)) {
		ours[row[0]] = row
	}
	n := 0
	for _, row := range spec {
		if row[0] == "Limit" {
			continue
		}
		n++
		got, ok := ours[row[0]]
		if !ok {
			t.Errorf("docs/limits.md has no row for the specification's limit %q (%s)", row[0], row[1])
			continue
		}
		if len(got) < 2 || got[1] == "" {
			t.Errorf("docs/limits.md states no value for %q", row[0])
		}
	}
	if n < 25 {
		t.Errorf("read %d limits from the specification's section 8; the table's shape changed", n)
	}
}
