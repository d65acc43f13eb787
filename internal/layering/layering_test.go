package layering_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/skiffhq/skiff"

// adapters are the packages under internal/ allowed to reach the outside
// world's protocols and the store engines, each with its reason. Every
// other package under internal/ is held to the domain rule. A path covers
// its subpackages; the longest listed path decides.
var adapters = map[string]string{
	"cli":                     "the composition root: it wires engines, HTTP and the domain together",
	"server":                  "the composition root: it builds the controller from the engines, HTTP and the domain, once",
	"httpapi":                 "the HTTP adapter of the public API and of agentproto's controller side",
	"agent/agenthttp":         "the host's HTTP client of agentproto (agent.Controller over HTTP)",
	"agent/datasrc":           "fetches a revision's data sources (URLs, the Hugging Face hub) over HTTP(S) (agent.DataSources)",
	"pricefeed":               "polls the operator's HTTP price feed for billing",
	"bench":                   "skiff bench's harness: an HTTP client of the API and bare runsc runs",
	"payment/facilitatorhttp": "the HTTP client of an x402 facilitator (payment.Facilitator)",
	"payment/evmrpc":          "the JSON-RPC client of an EVM node (payment.Chain)",
	"metrics":                 "the Prometheus exposition (client_golang serves it over HTTP; its collectors reach database/sql)",
	"artifact/externalhttp":   "fetches external artifact URLs over HTTP(S) (artifact.Fetcher)",
	"artifact/s3blob":         "the S3-compatible blob store (minio-go speaks HTTP)",
	"artifact/blobtest":       "the blob stores' conformance suite: it reads signed URLs over HTTP",
	"artifact/s3test":         "starts a real S3-compatible server (versitygw) for the tests",
	"store/sqlite":            "a store engine",
	"store/postgres":          "a store engine (and pgtest, its test server)",
	"store/sqldb":             "the SQL both store engines share",
	"store/storetest":         "the conformance suite and the tests' store openers, which open the engines",
	"layering":                "this test, which runs the go command",
}

// forbidden are what a domain package must not depend on, even through
// another package: a prefix ending in "/" covers subpackages only.
var forbidden = []struct{ path, why string }{
	{"net/http", "HTTP is an adapter"},
	{"net/http/", "HTTP is an adapter"},
	{"database/sql", "SQL lives in the store engines"},
	{module + "/internal/store/sqlite", "domain code sees the store seam, never an engine"},
	{module + "/internal/store/postgres", "domain code sees the store seam, never an engine"},
	{module + "/internal/store/sqldb", "domain code sees the store seam, never an engine"},
	{"modernc.org/sqlite", "domain code sees the store seam, never an engine"},
	{"github.com/jackc/pgx/", "domain code sees the store seam, never an engine"},
	{module + "/internal/httpapi", "domain code must not know its HTTP adapter"},
	{module + "/internal/cli", "domain code must not know the composition root"},
}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// listInternal is every package under internal/ with its direct imports and
// all its dependencies, test files excluded.
func listInternal(t *testing.T) []pkg {
	t.Helper()
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			t.Fatalf("no go command to list packages with: %v", err)
		}
	}
	cmd := exec.Command(gobin, "list", "-e", "-json=ImportPath,Imports,Deps,Error", module+"/internal/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			pkg
			Error *struct{ Err string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p.pkg)
	}
	return pkgs
}

// adapterOf is the listed adapter path that covers rel ("" when none).
func adapterOf(rel string) string {
	best := ""
	for a := range adapters {
		if (rel == a || strings.HasPrefix(rel, a+"/")) && len(a) > len(best) {
			best = a
		}
	}
	return best
}

func forbids(dep string) (string, bool) {
	for _, f := range forbidden {
		if dep == f.path || (strings.HasSuffix(f.path, "/") && strings.HasPrefix(dep, f.path)) {
			return f.why, true
		}
	}
	return "", false
}

// domainViolations is what each non-adapter package depends on that it
// must not, as "pkg: dep (why)" lines. A dependency is reported once, where
// it enters the domain: not again for the domain packages above the one
// that imports it, and not for the subpackages of a reported one.
func domainViolations(pkgs []pkg) []string {
	all, domain := map[string]pkg{}, map[string]bool{}
	for _, p := range pkgs {
		all[p.ImportPath] = p
		if adapterOf(strings.TrimPrefix(p.ImportPath, module+"/internal/")) == "" {
			domain[p.ImportPath] = true
		}
	}
	var out []string
	for _, p := range pkgs {
		if !domain[p.ImportPath] {
			continue
		}
		var bad []string
		for _, dep := range p.Deps {
			if _, no := forbids(dep); no {
				bad = append(bad, dep)
			}
		}
		for _, dep := range bad {
			why, _ := forbids(dep)
			if slices.Contains(p.Imports, dep) {
				out = append(out, p.ImportPath+" imports "+dep+" directly: "+why)
				continue
			}
			if slices.ContainsFunc(bad, func(b string) bool { return strings.HasPrefix(dep, b+"/") }) {
				continue // part of a package reported already
			}
			if slices.ContainsFunc(p.Imports, func(imp string) bool {
				_, forbidden := forbids(imp)
				return (domain[imp] || forbidden) && slices.Contains(all[imp].Deps, dep)
			}) {
				continue // reported where it enters the domain
			}
			out = append(out, p.ImportPath+" imports "+dep+" through a dependency: "+why)
		}
	}
	return out
}

// watchSources stats every Go file under internal/ and go.mod. The go
// command caches a passing test by the files the test itself opens or
// stats; the imports that go list reads are invisible to it, so without
// this an edit that adds a forbidden import would be answered by a stale
// cached "ok".
func watchSources(t *testing.T) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	err = filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		_, err = os.Stat(path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDomainImports fails when a domain package (anything under internal/
// that is not a listed adapter) depends on net/http, a store engine,
// database/sql, httpapi or the composition root.
func TestDomainImports(t *testing.T) {
	t.Parallel()
	watchSources(t)
	pkgs := listInternal(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages under internal/, want the whole tree", len(pkgs))
	}
	for _, v := range domainViolations(pkgs) {
		t.Error(v)
	}
	// The exemptions must name packages that exist, so that a rename
	// cannot leave a stale entry exempting nothing (or the next package
	// to take the name).
	for a := range adapters {
		found := false
		for _, p := range pkgs {
			rel := strings.TrimPrefix(p.ImportPath, module+"/internal/")
			if rel == a || strings.HasPrefix(rel, a+"/") {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("adapter %q is listed but no package internal/%s exists", a, a)
		}
	}
}

// The rule itself: a domain package that picks up net/http, directly or
// through a dependency outside the domain, or an engine is reported, once;
// an adapter is not.
func TestDomainViolations(t *testing.T) {
	t.Parallel()
	const in = module + "/internal/"
	pkgs := []pkg{
		{ImportPath: in + "job", Imports: []string{"net/http"}, Deps: []string{"context", "net/http", "net/http/internal"}},
		{ImportPath: in + "fleet", Imports: []string{in + "job", in + "store/sqlite"},
			Deps: []string{in + "job", "net/http", "net/http/internal", in + "store/sqlite", "modernc.org/sqlite"}},
		{ImportPath: in + "job/expand", Imports: []string{"example.com/x"},
			Deps: []string{"example.com/x", "net/http/httptrace"}},
		{ImportPath: in + "newthing", Imports: []string{in + "httpapi"}, Deps: []string{in + "httpapi", "net/http"}},
		{ImportPath: in + "httpapi", Imports: []string{"net/http"}, Deps: []string{"net/http"}},
		{ImportPath: in + "store/sqlite", Imports: []string{"modernc.org/sqlite"}, Deps: []string{"modernc.org/sqlite"}},
		{ImportPath: in + "agent/agenthttp", Imports: []string{"net/http"}, Deps: []string{"net/http"}},
		{ImportPath: in + "agent", Imports: []string{"net/url"}, Deps: []string{"net/url", "net/netip"}},
	}
	got := domainViolations(pkgs)
	want := []string{
		in + "job imports net/http directly: HTTP is an adapter",
		in + "fleet imports " + in + "store/sqlite directly: domain code sees the store seam, never an engine",
		in + "job/expand imports net/http/httptrace through a dependency: HTTP is an adapter",
		in + "newthing imports " + in + "httpapi directly: domain code must not know its HTTP adapter",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
