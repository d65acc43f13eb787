package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"net/url"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/testenv"
)

// apiCase is one test of the handler suite; each gets a fresh server and
// store, so it may move the clock or change the server's state.
type apiCase struct {
	name string
	run  func(t *testing.T, f *fixture)
}

// apiSuite is every handler test. TestAPI runs it against each store engine.
func apiSuite() []apiCase {
	return []apiCase{
		{"ops", testOps},
		{"ready_not_ready", testReadyNotReady},
		{"register", testRegister},
		{"balance", testBalance},
		{"projects_crud", testProjectsCRUD},
		{"project_readiness", testProjectReadiness},
		{"kv", testKV},
		{"kv_list", testKVList},
		{"kv_ttl", testKVTTL},
		{"unauthenticated", testUnauthenticated},
		{"viewer_cannot_write", testViewerCannotWrite},
		{"other_account_is_not_found", testOtherAccountIsNotFound},
		{"project_create_bad_input", testProjectCreateBadInput},
		{"project_update_bad_input", testProjectUpdateBadInput},
		{"kv_bad_input", testKVBadInput},
		{"oversized_bodies", testOversizedBodies},
		{"unknown_route", testUnknownRoute},
		{"wrong_method", testWrongMethod},
	}
}

func TestAPI(t *testing.T) {
	runSuite(t, apiSuite(), nil)
}

// runSuite runs each case against every store engine, in parallel, each on
// a fresh fixture that prepare (when not nil) adds to.
func runSuite(t *testing.T, cases []apiCase, prepare func(*testing.T, *fixture)) {
	runSuiteWith(t, cases, prepare, nil)
}

// runSuiteWith is runSuite over artifact blob stores that newBlob opens (nil:
// the default local store).
func runSuiteWith(t *testing.T, cases []apiCase, prepare func(*testing.T, *fixture), newBlob func(testing.TB) artifact.Blob) {
	t.Parallel()
	for _, eng := range apitest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			t.Parallel()
			if eng.Skip != "" {
				testenv.Skip(t, eng.Skip)
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					f := setupBlob(t, eng, newBlob)
					if prepare != nil {
						prepare(t, f)
					}
					tc.run(t, f)
				})
			}
		})
	}
}

// funded is a runSuite preparation: the fixture's project has a published
// revision and its account holds micros of credit.
// onEnginesWithTool runs fn in parallel on each engine with a fresh fixture
// built with opts and funded, when the command tool is installed (its
// path is passed on); without it the test is skipped (failed under
// SKIFF_TEST_REQUIRE_ALL) with why.
func onEnginesWithTool(t *testing.T, tool, why string, opts apitest.Options, fn func(t *testing.T, f *fixture, path string)) {
	t.Parallel()
	path, err := exec.LookPath(tool)
	if err != nil {
		testenv.Skip(t, why)
	}
	for _, eng := range apitest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			t.Parallel()
			if eng.Skip != "" {
				testenv.Skip(t, eng.Skip)
			}
			f := setupWith(t, eng, opts)
			funded(100_000_000)(t, f)
			fn(t, f, path)
		})
	}
}

func funded(micros int64) func(*testing.T, *fixture) {
	return func(t *testing.T, f *fixture) {
		publish(t, f, fixtureProject)
		grant(t, f.e, f.acct.ID, micros)
	}
}

// fundedAccount is another account beside the fixture's: name, owning
// project with a published revision, holding micros of credit (none when
// 0). It returns the account and its member's client.
func fundedAccount(tb testing.TB, e *apitest.Env, name, project string, micros int64) (*apitest.Account, *apitest.Client) {
	tb.Helper()
	acct := e.NewAccount(tb, name)
	c := e.Client(acct.Member)
	c.Post(tb, "/api/v1/projects", map[string]any{"name": project}).Want(tb, http.StatusCreated)
	publishFor(tb, e, acct.ID, project)
	if micros > 0 {
		grant(tb, e, acct.ID, micros)
	}
	return acct, c
}

// fixture is a running server with one account, "acme", owning project
// "alpha" that holds the shared-state key "k" = 1.
type fixture struct {
	eng     apitest.Engine
	newBlob func(testing.TB) artifact.Blob // nil: local disk
	e       *apitest.Env
	acct    *apitest.Account
	member  *apitest.Client
	viewer  *apitest.Client
	anon    *apitest.Client
}

const (
	fixtureProject = "alpha"
	fixtureKey     = "k"
)

func setup(t *testing.T, eng apitest.Engine) *fixture {
	t.Helper()
	return setupWith(t, eng, apitest.Options{})
}

// setupBlob is setup with the blob store newBlob makes (nil: local disk).
func setupBlob(t *testing.T, eng apitest.Engine, newBlob func(testing.TB) artifact.Blob) *fixture {
	t.Helper()
	var opts apitest.Options
	if newBlob != nil {
		opts.Blob = newBlob(t)
	}
	f := setupWith(t, eng, opts)
	f.newBlob = newBlob
	return f
}

// setupWith is setup with server options (the store is eng's).
func setupWith(t *testing.T, eng apitest.Engine, opts apitest.Options) *fixture {
	t.Helper()
	opts.Store = eng.Open(t)
	e := apitest.Start(t, opts)
	f := &fixture{eng: eng, e: e, acct: e.NewAccount(t, "acme"), anon: e.Client("")}
	f.member, f.viewer = e.Client(f.acct.Member), e.Client(f.acct.Viewer)
	f.member.Post(t, "/api/v1/projects", map[string]any{"name": fixtureProject}).Want(t, http.StatusCreated)
	f.member.Put(t, kvPath(fixtureProject, fixtureKey), map[string]any{"value": 1}).Want(t, http.StatusOK)
	return f
}

// state is everything the fixture's account can read: its projects with
// their readiness and shared state, and its jobs. Refused writes must leave
// it as it was.
func (f *fixture) state(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	list := f.member.Get(t, "/api/v1/projects")
	b.Write(list.Body)
	var l struct {
		Projects []struct{ Name string } `json:"projects"`
	}
	list.JSON(t, http.StatusOK, &l)
	for _, p := range l.Projects {
		b.Write(f.member.Get(t, "/api/v1/projects/"+p.Name).Want(t, http.StatusOK).Body)
		b.Write(f.member.Get(t, "/api/v1/projects/"+p.Name+"/kv?limit=1000").Want(t, http.StatusOK).Body)
	}
	b.Write(f.member.Get(t, "/api/v1/jobs?limit=200").Want(t, http.StatusOK).Body)
	b.Write(f.member.Get(t, "/api/v1/artifacts?limit=200").Want(t, http.StatusOK).Body)
	return b.String()
}

// unchanged fails t when the account's state differs from before.
func (f *fixture) unchanged(t *testing.T, before, what string) {
	t.Helper()
	if after := f.state(t); after != before {
		t.Errorf("%s changed stored state:\ngot  %s\nwant %s", what, after, before)
	}
}

func kvPath(project, key string) string {
	return "/api/v1/projects/" + project + "/kv/" + key
}

// fill turns a route pattern into a concrete path: {name} is the fixture's
// project, {key} its key, any other parameter "x".
func fill(pattern, name string) string {
	var out []string
	for _, seg := range strings.Split(apitest.Template(pattern), "/") {
		switch seg {
		case "{name}":
			seg = url.PathEscape(name)
		case "{key}":
			seg = fixtureKey
		default:
			if strings.HasPrefix(seg, "{") {
				seg = "x"
			}
		}
		out = append(out, seg)
	}
	return strings.Join(out, "/")
}

// writeRequest is a well-formed request for a route, one that would change
// something if a write were allowed.
func writeRequest(rt httpapi.Route, name string, check apitest.Check) apitest.Request {
	req := apitest.Request{Method: rt.Method, Path: fill(rt.Pattern, name), Check: check}
	switch rt.Method + " " + rt.Pattern {
	case "POST /api/v1/projects":
		req.Body = map[string]any{"name": "intruder"}
	case "PUT /api/v1/projects/{name}":
		req.Body = map[string]any{"setup_timeout_s": 999, "env": map[string]string{"CHANGED": "1"}}
	case "PUT /api/v1/projects/{name}/kv/{key...}":
		req.Body = map[string]any{"value": "changed"}
	case "POST /api/v1/waitlist":
		req.Body = map[string]any{"email": "someone@example.com"}
	case "POST /api/v1/feedback":
		req.Body = map[string]any{"type": "bug", "title": "t", "description": "d"}
	case "POST /api/v1/fleet/enrollments/redeem":
		req.Body = map[string]any{"code": "cek_" + strings.Repeat("A", 52), "cpus": 1, "memory_gb": 1}
	case "POST /api/v1/jobs":
		req.Body = map[string]any{"project": name, "runner_command": []string{"/runner"}}
	case "POST /mcp":
		req.Body = map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
		req.Header = http.Header{"Accept": {"application/json, text/event-stream"}}
	case "POST /api/v1/auth/wallet/challenge":
		req.Body = map[string]any{"wallet_address": "0x" + strings.Repeat("0", 40)}
	case "POST /api/v1/auth/wallet/verify":
		req.Body = map[string]any{"challenge_id": "wch_x", "wallet_address": "0x" + strings.Repeat("0", 40), "signature": "0x"}
	case "POST /api/v1/jobs/batch":
		req.Body = map[string]any{"jobs": []any{map[string]any{"project": name, "runner_command": []string{"/runner"}}}}
	case "PATCH /api/v1/jobs/{id}/requirements":
		req.Body = map[string]any{"cpu": 2}
	case "POST /api/v1/artifacts/external":
		req.Body = map[string]any{"filename": "d.csv", "url": "https://93.184.215.14/d.csv"}
	case "POST /api/v1/artifacts":
		req.Body = []byte("artifact bytes")
		req.Header = http.Header{"Content-Type": {"application/octet-stream"}, "X-Artifact-Filename": {"a.txt"}}
	case "POST /api/v1/projects/{name}/push":
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(make([]byte, 1024)) // an empty tar archive
		_ = zw.Close()
		req.Body = b.Bytes()
		req.Header = http.Header{"Content-Type": {"application/gzip"}}
	}
	return req
}

// isWrite says whether a route changes state; viewers may not call it.
func isWrite(rt httpapi.Route) bool { return rt.Method != http.MethodGet }

// authRoutes are the routes that need credentials, per the document.
func authRoutes(t *testing.T, e *apitest.Env) []httpapi.Route {
	t.Helper()
	var out []httpapi.Route
	for _, rt := range e.Server.Routes() {
		op := e.Contract.Operation(rt)
		if op == nil {
			continue // TestRoutesMatchOpenAPIOperations reports it
		}
		if !e.Contract.IsPublic(op) {
			out = append(out, rt)
		}
	}
	return out
}

// isStream reports whether a route answers with an event stream.
func isStream(rt httpapi.Route) bool {
	return strings.HasSuffix(rt.Pattern, "/stream") || rt.Pattern == "/api/v1/jobs/watch"
}

// jsonEqual compares two JSON texts by value.
func jsonEqual(t *testing.T, got, want []byte) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("decode %q: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("decode %q: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

func compact(t *testing.T, s []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, s); err != nil {
		t.Fatalf("compact %q: %v", s, err)
	}
	return b.String()
}

// keysOf lists an object's keys.
func keysOf(m map[string]any) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// wantKeys fails t unless m has exactly the keys want.
func wantKeys(t *testing.T, what string, m map[string]any, want ...string) {
	t.Helper()
	got := keysOf(m)
	for _, k := range want {
		if !got[k] {
			t.Errorf("%s: missing field %q; got %v", what, k, m)
		}
		delete(got, k)
	}
	for k := range got {
		t.Errorf("%s: got unexpected field %q", what, k)
	}
}
