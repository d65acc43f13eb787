package layering_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
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
	"cli":                     "the command line: it opens the store for operator commands, and its client commands speak HTTP",
	"server":                  "the composition root: it builds the controller from the engines, HTTP and the domain, once",
	"httpapi":                 "the HTTP adapter of the public API and of agentproto's controller side",
	"mcp":                     "the MCP server: its tools call the API over HTTP through the Go client, and serve MCP's Streamable HTTP transport",
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
	{module + "/internal/cli", "domain code must not know the command line"},
	{module + "/internal/server", "domain code must not know the composition root"},
}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// listModule is every package of the module with its direct imports and
// all its dependencies, test files excluded.
func listModule(t *testing.T) []pkg {
	t.Helper()
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			t.Fatalf("no go command to list packages with: %v", err)
		}
	}
	cmd := exec.Command(gobin, "list", "-e", "-json=ImportPath,Imports,Deps,Error", module+"/...")
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
			if strings.Contains(p.Error.Err, "no non-test Go files") {
				continue // a test-only package (test/e2e): the test tier, below
			}
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
		rel, internal := strings.CutPrefix(p.ImportPath, module+"/internal/")
		if internal && adapterOf(rel) == "" {
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

// watchSources stats every Go file of the module and go.mod. The go
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
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		_, err = os.Stat(path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// boundaries are the rules across the module, beside the domain rule: a
// package matching from must not depend, directly or through anything, on
// a package matching one of deps. A path ending in "/..." covers the
// package and its subpackages.
type boundary struct {
	from, deps []string
	why        string
}

var boundaries = []boundary{
	{
		from: []string{module + "/apiv1/...", module + "/client/...", module + "/paywire/..."},
		deps: []string{module + "/internal/..."},
		why:  "a public package (the API's wire types, the Go client, the payment wire) must build without the server: users import it",
	},
	{
		from: []string{module + "/internal/agentproto/..."},
		deps: []string{module + "/internal/..."},
		why:  "the host protocol's wire is a leaf: both sides import it, it imports neither",
	},
	{
		from: []string{module + "/internal/agent/...", module + "/internal/sandbox/...", module + "/internal/gpu/...", module + "/internal/ociimage/..."},
		deps: []string{module + "/internal/store/...", module + "/internal/job/...", module + "/internal/jobview/...", module + "/internal/billing/...",
			module + "/internal/payment/...", module + "/internal/project/...", module + "/internal/artifact/...", module + "/internal/fleet/...",
			module + "/internal/httpapi/...", module + "/internal/server/...", module + "/internal/auth/..."},
		why: "the host side runs on machines the controller does not trust and reaches the controller only through agentproto; it never holds the store, money or other tenants' rows",
	},
	{
		from: []string{module + "/internal/job/...", module + "/internal/billing/...", module + "/internal/project/..."},
		deps: []string{module + "/internal/agentproto/...", module + "/internal/agent/...", module + "/internal/fleet/..."},
		why:  "the job service, money and projects know nothing of hosts: fleet translates the host protocol into their terms at its edge",
	},
	{
		from: []string{module + "/internal/mcp/..."},
		deps: []string{module + "/internal/store/...", module + "/internal/job/...", module + "/internal/jobview/...",
			module + "/internal/billing/...", module + "/internal/payment/...", module + "/internal/project/...",
			module + "/internal/artifact/...", module + "/internal/auth/...", module + "/internal/httpapi/...", module + "/internal/server/..."},
		why: "the MCP tools act only through the public Go client, as the CLI's do, so the remote and the local server are one tool set and every call is the API's",
	},
}

// untested are the packages no rule holds, each with its reason.
var untested = map[string]string{
	module + "/test/...":    "the system tests (test/e2e, test/security, test/payments) run the whole binary and may import anything",
	module + "/cmd/...":     "main: it calls internal/cli",
	module + "/scripts/...": "the tools CI and make run (testreport)",
}

func matches(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

// boundaryViolations is every dependency that crosses a boundary, as "pkg:
// dep (why)" lines, each reported once where it enters: not again for a
// dependency that comes through another reported one.
func boundaryViolations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		for _, b := range boundaries {
			if !slices.ContainsFunc(b.from, func(f string) bool { return matches(f, p.ImportPath) }) {
				continue
			}
			bad := func(dep string) bool {
				if slices.ContainsFunc(b.from, func(f string) bool { return matches(f, dep) }) &&
					!slices.ContainsFunc(b.deps, func(d string) bool { return matches(d, dep) && !matches(d, p.ImportPath) }) {
					return false // within the boundary itself
				}
				return slices.ContainsFunc(b.deps, func(d string) bool { return matches(d, dep) })
			}
			for _, dep := range p.Deps {
				if !bad(dep) {
					continue
				}
				how := "through a dependency"
				if slices.Contains(p.Imports, dep) {
					how = "directly"
				}
				out = append(out, p.ImportPath+" imports "+dep+" "+how+": "+b.why)
			}
		}
	}
	return out
}

// TestModuleImports fails when a domain package (anything under internal/
// that is not a listed adapter) depends on net/http, a store engine,
// database/sql, httpapi or the composition root, or when any package of
// the module crosses one of the boundaries.
func TestModuleImports(t *testing.T) {
	t.Parallel()
	watchSources(t)
	pkgs := listModule(t)
	if len(pkgs) < 40 {
		t.Fatalf("go list found %d packages in the module, want the whole tree", len(pkgs))
	}
	for _, v := range domainViolations(pkgs) {
		t.Error(v)
	}
	for _, v := range boundaryViolations(pkgs) {
		t.Error(v)
	}
	// Every package is held to a rule or listed with a reason.
	for _, p := range pkgs {
		if strings.HasPrefix(p.ImportPath, module+"/internal/") || slices.ContainsFunc(boundaries, func(b boundary) bool {
			return slices.ContainsFunc(b.from, func(f string) bool { return matches(f, p.ImportPath) })
		}) {
			continue
		}
		if !slices.ContainsFunc(slices.Collect(maps.Keys(untested)), func(u string) bool { return matches(u, p.ImportPath) }) &&
			!publicLeaf(p) {
			t.Errorf("%s is held to no layering rule: add it to a boundary, or to untested with its reason", p.ImportPath)
		}
	}
	// Every exemption exempts something: an adapter entry under which no
	// package needs the exemption is stale (or was never needed) and goes.
	for a := range adapters {
		needed := false
		for _, p := range pkgs {
			rel, ok := strings.CutPrefix(p.ImportPath, module+"/internal/")
			if ok && (rel == a || strings.HasPrefix(rel, a+"/")) && adapterOf(rel) == a && slices.ContainsFunc(p.Deps, func(d string) bool {
				_, no := forbids(d)
				return no
			}) {
				needed = true
				break
			}
		}
		if !needed {
			t.Errorf("adapter %q is listed but no package internal/%s needs the exemption: remove it", a, a)
		}
	}
}

// publicLeaf reports whether p, outside internal/ and no listed boundary,
// imports nothing of the module's internal packages (docs, openapi, the
// examples and SDK fixtures): such a package needs no rule of its own.
func publicLeaf(p pkg) bool {
	return !slices.ContainsFunc(p.Deps, func(d string) bool { return strings.HasPrefix(d, module+"/internal/") })
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

// The boundaries themselves: the public client reaching internal/, the
// host side reaching the store through a package that looked harmless, and
// the wire importing anything of the module are each reported; a public
// package using another public one, and the host using agentproto, are not.
func TestBoundaryViolations(t *testing.T) {
	t.Parallel()
	const in = module + "/internal/"
	pkgs := []pkg{
		{ImportPath: module + "/client", Imports: []string{module + "/apiv1", in + "payment"},
			Deps: []string{module + "/apiv1", in + "payment", in + "store"}},
		{ImportPath: module + "/paywire", Imports: []string{"math/big"}, Deps: []string{"math/big"}},
		{ImportPath: in + "agent/datasrc", Imports: []string{in + "artifact", in + "agentproto"},
			Deps: []string{in + "agentproto", in + "artifact", in + "store"}},
		{ImportPath: in + "agent", Imports: []string{in + "agentproto", in + "sandbox"}, Deps: []string{in + "agentproto", in + "sandbox"}},
		{ImportPath: in + "agentproto", Imports: []string{in + "clock"}, Deps: []string{in + "clock"}},
		{ImportPath: in + "fleet", Imports: []string{in + "store", in + "job"}, Deps: []string{in + "store", in + "job"}},
	}
	got := boundaryViolations(pkgs)
	want := []string{
		module + "/client imports " + in + "payment directly: " + boundaries[0].why,
		module + "/client imports " + in + "store through a dependency: " + boundaries[0].why,
		in + "agent/datasrc imports " + in + "artifact directly: " + boundaries[2].why,
		in + "agent/datasrc imports " + in + "store through a dependency: " + boundaries[2].why,
		in + "agentproto imports " + in + "clock directly: " + boundaries[1].why,
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
