package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/internal/httpapi/apitest"
)

// Every route that needs credentials answers 401 with the envelope and a
// WWW-Authenticate challenge when they are missing or bad, and changes
// nothing; every public route answers without them.
func testUnauthenticated(t *testing.T, f *fixture) {
	const v, m = apitest.MustViolate, apitest.MustMatch
	headers := []struct {
		name, value string
		check       apitest.Check
	}{
		{"no Authorization", "", v},
		{"scheme only", "Bearer", v},
		{"Basic", "Basic YWNtZTpzZWNyZXQ=", v},
		{"key without scheme", f.acct.Member, v},
		{"key under another scheme", "Token " + f.acct.Member, v},
		{"garbage token", "Bearer not-a-key", m},
		{"unknown flk_ key", "Bearer flk_" + strings.Repeat("A", 52), m},
		{"unknown fls_ session", "Bearer fls_" + strings.Repeat("B", 52), m},
		{"key with a suffix", "Bearer " + f.acct.Member + "x", m},
		{"key cut short", "Bearer " + f.acct.Member[:len(f.acct.Member)-1], m},
	}
	routes := authRoutes(t, f.e)
	if len(routes) == 0 {
		t.Fatal("got no authenticated routes")
	}
	for _, rt := range routes {
		for _, h := range headers {
			t.Run(rt.Method+" "+rt.Pattern+"/"+h.name, func(t *testing.T) {
				var before string
				if isWrite(rt) {
					before = f.state(t)
				}
				req := writeRequest(rt, fixtureProject, h.check)
				if h.value != "" {
					if req.Header == nil {
						req.Header = http.Header{}
					}
					req.Header.Set("Authorization", h.value)
				}
				r := f.anon.Do(t, req)
				env := r.Fail(t, http.StatusUnauthorized)
				if env.Code != "unauthenticated" {
					t.Errorf("got code %q, want unauthenticated", env.Code)
				}
				if got := r.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
					t.Errorf("got WWW-Authenticate %q, want a Bearer challenge", got)
				}
				if isWrite(rt) {
					f.unchanged(t, before, "an unauthenticated write")
				}
			})
		}
	}
	// The scheme is case-insensitive, and HEAD needs credentials like GET.
	f.anon.Do(t, apitest.Request{Method: "GET", Path: "/api/v1/projects", Header: http.Header{"Authorization": {"bearer " + f.acct.Member}}}).
		Want(t, http.StatusOK)
	f.anon.Do(t, apitest.Request{Method: "HEAD", Path: "/api/v1/projects", Check: v}).Want(t, http.StatusUnauthorized)

	for _, rt := range f.e.Server.Routes() {
		if op := f.e.Contract.Operation(rt); op == nil || !f.e.Contract.IsPublic(op) {
			continue
		}
		r := f.anon.Do(t, writeRequest(rt, fixtureProject, apitest.MustMatch))
		if r.Status == http.StatusUnauthorized {
			t.Errorf("public %s %s: got 401, want it to answer without credentials", rt.Method, rt.Pattern)
		}
	}
}

// A viewer key reads everything of its account but every write is 403 with
// the envelope, before the body is even looked at, and changes nothing.
func testViewerCannotWrite(t *testing.T, f *fixture) {
	var writes int
	for _, rt := range authRoutes(t, f.e) {
		path := fill(rt.Pattern, fixtureProject)
		if isStream(rt) {
			continue // streams never end by themselves: TestStreams has a viewer read one
		}
		if !isWrite(rt) {
			// A viewer reads what a member of the account reads.
			v := f.viewer.Do(t, apitest.Request{Method: rt.Method, Path: path})
			m := f.member.Do(t, apitest.Request{Method: rt.Method, Path: path})
			vb := strings.Replace(string(v.Body), `"role":"viewer"`, `"role":"member"`, 1)
			if v.Status != m.Status || (v.Status < 400 && vb != string(m.Body)) {
				t.Errorf("viewer GET %s: got %d %s, want the member's %d %s", path, v.Status, v.Body, m.Status, m.Body)
			}
			continue
		}
		if rt.Method == http.MethodPost && path == "/api/v1/auth/logout" {
			// Logout revokes the presented wallet session and nothing
			// else: a viewer API key is no session, so it is told so
			// (422) and nothing changes.
			before := f.state(t)
			if env := f.viewer.Do(t, writeRequest(rt, fixtureProject, apitest.MustMatch)).Fail(t, http.StatusUnprocessableEntity); env.Code != "not_a_session" {
				t.Errorf("viewer logout: got code %q, want not_a_session", env.Code)
			}
			f.unchanged(t, before, "a viewer key's logout")
			continue
		}
		writes++
		malformed := writeRequest(rt, fixtureProject, apitest.Unchecked)
		malformed.Body = raw(`{"value": `)
		for _, req := range []struct {
			name string
			req  apitest.Request
		}{
			{"well-formed", writeRequest(rt, fixtureProject, apitest.MustMatch)},
			{"malformed", malformed},
		} {
			t.Run(rt.Method+" "+rt.Pattern+"/"+req.name, func(t *testing.T) {
				before := f.state(t)
				env := f.viewer.Do(t, req.req).Fail(t, http.StatusForbidden)
				if env.Code != "read_only_key" {
					t.Errorf("got code %q, want read_only_key", env.Code)
				}
				if env.RecommendedAction == "" {
					t.Errorf("got no recommended_action")
				}
				f.unchanged(t, before, "a viewer's write")
			})
		}
	}
	if writes == 0 {
		t.Fatal("got no write routes")
	}
	// The same writes work with a member key of the account.
	f.member.Put(t, "/api/v1/projects/alpha", map[string]any{"setup_timeout_s": 999}).Want(t, http.StatusOK)
}

// Another account's project answers exactly as a project that does not
// exist: same status, same body apart from request_id, and nothing changes.
func testOtherAccountIsNotFound(t *testing.T, f *fixture) {
	other := f.e.NewAccount(t, "mallory")
	intruders := map[string]*apitest.Client{
		"member": f.e.Client(other.Member), "viewer": f.e.Client(other.Viewer), "admin": f.e.Client(other.Admin),
	}
	type answer struct {
		status int
		body   map[string]any
	}
	ask := func(t *testing.T) map[string]answer {
		t.Helper()
		out := map[string]answer{}
		for role, c := range intruders {
			for _, rt := range authRoutes(t, f.e) {
				if !strings.Contains(rt.Pattern, "{name}") {
					continue
				}
				id := role + " " + rt.Method + " " + rt.Pattern
				var before string
				if isWrite(rt) {
					before = f.state(t)
				}
				r := c.Do(t, writeRequest(rt, fixtureProject, apitest.MustMatch))
				if isWrite(rt) {
					f.unchanged(t, before, id)
				}
				env := r.Fail(t, r.Status)
				if r.Status/100 != 4 {
					t.Errorf("%s: got %d, want a refusal", id, r.Status)
				}
				if role != "viewer" || !isWrite(rt) {
					if r.Status != http.StatusNotFound || env.Code != "project_not_found" {
						t.Errorf("%s: got %d %q, want 404 project_not_found", id, r.Status, env.Code)
					}
				}
				out[id] = answer{r.Status, env.WithoutRequestID()}
			}
		}
		return out
	}

	owned := ask(t)
	if len(owned) == 0 {
		t.Fatal("got no project routes")
	}

	// Now make "alpha" unknown everywhere and ask again.
	f.member.Delete(t, "/api/v1/projects/alpha").Want(t, http.StatusOK)
	unknown := ask(t)
	for id, a := range owned {
		b := unknown[id]
		if a.status != b.status || string(mustJSON(t, a.body)) != string(mustJSON(t, b.body)) {
			t.Errorf("%s: another account's project answered %d %s; an unknown project answered %d %s; want them equal",
				id, a.status, mustJSON(t, a.body), b.status, mustJSON(t, b.body))
		}
	}
}
