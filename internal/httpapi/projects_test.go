package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
)

func testProjectsCRUD(t *testing.T, f *fixture) {
	c := f.member
	epoch := apitest.Epoch

	// The fixture's minimal project got every default.
	var p apiv1.Project
	raw := c.Get(t, "/api/v1/projects/alpha")
	raw.JSON(t, http.StatusOK, &p)
	if p.Name != "alpha" || p.RemoteDir != "" || len(p.Env) != 0 || p.SetupTimeoutS != 600 || p.RuntimeKind != "oci" ||
		p.RuntimeVersion != 1 || p.ImageRef != nil || p.ImageDigest != nil || p.ContentHash != nil ||
		!p.CreatedAt.Equal(epoch) || !p.UpdatedAt.Equal(epoch) {
		t.Errorf("got defaults %+v, want name alpha, setup_timeout_s 600, runtime_kind oci, runtime_version 1, nulls, times %s", p, epoch)
	}
	obj := raw.Object(t, http.StatusOK)
	for _, k := range []string{"image_ref", "image_digest", "content_hash", "manifest", "cache_policy"} {
		if v, ok := obj[k]; !ok || v != nil {
			t.Errorf("GET project: got %s = %v (present %v), want null", k, v, ok)
		}
	}
	if _, ok := obj["init_status"].(map[string]any); !ok {
		t.Errorf("GET project: got init_status %v, want an object", obj["init_status"])
	}

	// Create with every field; the answer echoes each.
	f.e.Clock.Advance(time.Minute)
	full := map[string]any{
		"name":            "beta_2-x",
		"env":             map[string]string{"MODE": "fast", "_X1": ""},
		"setup_timeout_s": 1200,
		"runtime_kind":    "oci",
		"manifest":        map[string]any{"version": 1, "runtime": map[string]any{"kind": "oci", "sandbox": "gvisor"}},
		"runtime_version": 3,
	}
	created := c.Post(t, "/api/v1/projects", full).Object(t, http.StatusCreated)
	for k, v := range full {
		w, _ := json.Marshal(v)
		g, _ := json.Marshal(created[k])
		if !jsonEqual(t, g, w) {
			t.Errorf("create: got %s = %s, want %s", k, g, w)
		}
	}
	if created["content_hash"] != nil || created["created_at"] != epoch.Add(time.Minute).Format(time.RFC3339) ||
		created["updated_at"] != created["created_at"] {
		t.Errorf("create: got content_hash %v, created_at %v, updated_at %v; want null and %s twice",
			created["content_hash"], created["created_at"], created["updated_at"], epoch.Add(time.Minute).Format(time.RFC3339))
	}
	if _, ok := created["init_status"]; ok {
		t.Errorf("create: got init_status, want it only on GET one project")
	}
	got := c.Get(t, "/api/v1/projects/beta_2-x").Object(t, http.StatusOK)
	delete(got, "init_status")
	if g, w := mustJSON(t, got), mustJSON(t, created); !jsonEqual(t, g, w) {
		t.Errorf("GET after create:\ngot  %s\nwant %s", g, w)
	}

	// The fields Skiff refuses values of may be sent back empty, as GET
	// shows them, and the refusal of a value says what to do instead.
	c.Put(t, "/api/v1/projects/beta_2-x", map[string]any{"remote_dir": "", "image_ref": "", "image_digest": "",
		"cache_policy": map[string]any{}, "setup_timeout_s": 1200}).Want(t, http.StatusOK)
	refused := c.Put(t, "/api/v1/projects/beta_2-x", map[string]any{"image_ref": "ghcr.io/acme/beta:1"}).
		Fail(t, http.StatusUnprocessableEntity)
	if msg, _ := refused.Details["fields"].(map[string]any)["image_ref"].(string); !strings.Contains(msg, "not supported") || !strings.Contains(msg, "Dockerfile") {
		t.Errorf("image_ref refused with %q, want a message saying it is not supported and what to push instead", msg)
	}

	// A 64-character name is the longest allowed.
	long := strings.Repeat("z", 64)
	c.Post(t, "/api/v1/projects", map[string]any{"name": long}).Want(t, http.StatusCreated)

	// The same name again conflicts, and changes nothing.
	before := f.state(t)
	env := c.Post(t, "/api/v1/projects", map[string]any{"name": "alpha", "setup_timeout_s": 5}).Fail(t, http.StatusConflict)
	if env.Code != "project_exists" {
		t.Errorf("duplicate: got code %q, want project_exists", env.Code)
	}
	f.unchanged(t, before, "creating a duplicate")

	// Another account may use the same name.
	other := f.e.NewAccount(t, "other")
	f.e.Client(other.Member).Post(t, "/api/v1/projects", map[string]any{"name": "alpha"}).Want(t, http.StatusCreated)

	var list apiv1.ProjectList
	c.Get(t, "/api/v1/projects").JSON(t, http.StatusOK, &list)
	var names []string
	for _, p := range list.Projects {
		names = append(names, p.Name)
	}
	if list.Count != 3 || len(list.Projects) != 3 || !sameSet(names, []string{"alpha", "beta_2-x", long}) {
		t.Errorf("list: got count %d, names %v; want 3: alpha, beta_2-x, %s", list.Count, names, long)
	}
	for _, p := range list.Projects {
		if p.InitStatus != nil {
			t.Errorf("list: project %s has init_status, want it only on GET one project", p.Name)
		}
	}

	// PUT changes only what it sends; updated_at moves, created_at stays.
	f.e.Clock.Advance(time.Minute)
	upd := c.Put(t, "/api/v1/projects/beta_2-x", map[string]any{"setup_timeout_s": 30, "env": map[string]string{"ONLY": "this"}}).
		Object(t, http.StatusOK)
	want := map[string]any{}
	for k, v := range created {
		want[k] = v
	}
	want["setup_timeout_s"] = 30
	want["env"] = map[string]string{"ONLY": "this"}
	want["updated_at"] = epoch.Add(2 * time.Minute).Format(time.RFC3339)
	if g, w := mustJSON(t, upd), mustJSON(t, want); !jsonEqual(t, g, w) {
		t.Errorf("PUT:\ngot  %s\nwant %s", g, w)
	}
	got = c.Get(t, "/api/v1/projects/beta_2-x").Object(t, http.StatusOK)
	delete(got, "init_status")
	if g, w := mustJSON(t, got), mustJSON(t, want); !jsonEqual(t, g, w) {
		t.Errorf("GET after PUT:\ngot  %s\nwant %s", g, w)
	}
	// Sending the current name is allowed; an unknown project is 404.
	c.Put(t, "/api/v1/projects/beta_2-x", map[string]any{"name": "beta_2-x"}).Want(t, http.StatusOK)
	c.Put(t, "/api/v1/projects/nope", map[string]any{"setup_timeout_s": 30}).Fail(t, http.StatusNotFound)

	// DELETE removes the project and its shared state; the name is free again.
	var del apiv1.ProjectDeleted
	c.Delete(t, "/api/v1/projects/alpha").JSON(t, http.StatusOK, &del)
	if del != (apiv1.ProjectDeleted{Status: "deleted", Project: "alpha"}) {
		t.Errorf("DELETE: got %+v, want {deleted alpha}", del)
	}
	for _, path := range []string{"/api/v1/projects/alpha", "/api/v1/projects/alpha/status", kvPath("alpha", fixtureKey)} {
		if env := c.Get(t, path).Fail(t, http.StatusNotFound); env.Code != "project_not_found" {
			t.Errorf("GET %s after delete: got code %q, want project_not_found", path, env.Code)
		}
	}
	c.Delete(t, "/api/v1/projects/alpha").Fail(t, http.StatusNotFound)
	c.Get(t, "/api/v1/projects").JSON(t, http.StatusOK, &list)
	if list.Count != 2 {
		t.Errorf("list after delete: got count %d, want 2", list.Count)
	}
	c.Post(t, "/api/v1/projects", map[string]any{"name": "alpha"}).Want(t, http.StatusCreated)
	var kv apiv1.KVList
	c.Get(t, "/api/v1/projects/alpha/kv").JSON(t, http.StatusOK, &kv)
	if kv.Count != 0 || len(kv.Entries) != 0 {
		t.Errorf("kv of a re-created project: got %d entries, want none", kv.Count)
	}
	// The other account's project of the same name was never touched.
	f.e.Client(other.Member).Get(t, "/api/v1/projects/alpha").Want(t, http.StatusOK)
}

// readinessFields are the fields spec 2.3 names for the readiness object,
// and the warm capacity Skiff adds (issue 18).
var readinessFields = []string{
	"project_ready", "can_accept_new_jobs", "ready_for_jobs", "init_state", "availability_status", "progress_phase",
	"pending_init", "requested_state", "content_hash", "status_message", "next_action", "latest_issue",
	"last_ready_at", "latest_activity_at", "latest_failure_at",
	"ready_replicas", "initializing_replicas", "failed_replicas", "stale_replicas", "total_replicas",
	"queue_depth", "queued_tasks", "active_jobs", "active_tasks",
	"warm_sandboxes_ready", "warm_sandboxes_target",
}

func testProjectReadiness(t *testing.T, f *fixture) {
	check := func(what string, r map[string]any, extra ...string) {
		t.Helper()
		wantKeys(t, what, r, append(append([]string{}, readinessFields...), extra...)...)
		for k, want := range map[string]any{
			"project_ready": false, "can_accept_new_jobs": false, "ready_for_jobs": false, "pending_init": false,
			"init_state": "not_initialized", "availability_status": "cold", "progress_phase": "idle",
			"requested_state": nil, "content_hash": nil, "latest_issue": nil,
			"last_ready_at": nil, "latest_activity_at": nil, "latest_failure_at": nil,
			"ready_replicas": 0.0, "initializing_replicas": 0.0, "failed_replicas": 0.0, "stale_replicas": 0.0,
			"total_replicas": 0.0, "queue_depth": 0.0, "queued_tasks": 0.0, "active_jobs": 0.0, "active_tasks": 0.0,
		} {
			if r[k] != want {
				t.Errorf("%s: got %s = %v, want %v", what, k, r[k], want)
			}
		}
		if s, _ := r["status_message"].(string); s == "" {
			t.Errorf("%s: got empty status_message", what)
		}
		if s, _ := r["next_action"].(string); !strings.Contains(s, "/api/v1/projects/alpha/push") {
			t.Errorf("%s: got next_action %q, want it to name the push endpoint", what, s)
		}
	}
	for _, c := range []*apitest.Client{f.member, f.viewer} {
		st := c.Get(t, "/api/v1/projects/alpha/status").Object(t, http.StatusOK)
		check("status", st, "project")
		if st["project"] != "alpha" {
			t.Errorf("status: got project %v, want alpha", st["project"])
		}

		det := c.Get(t, "/api/v1/projects/alpha/status/details").Object(t, http.StatusOK)
		check("status/details", det, "project", "diagnostics")
		if d, ok := det["diagnostics"].([]any); !ok || len(d) != 0 {
			t.Errorf("status/details: got diagnostics %v, want []", det["diagnostics"])
		}

		p := c.Get(t, "/api/v1/projects/alpha").Object(t, http.StatusOK)
		is, _ := p["init_status"].(map[string]any)
		check("init_status", is)
	}
	for _, path := range []string{"/api/v1/projects/nope/status", "/api/v1/projects/nope/status/details"} {
		f.member.Get(t, path).Fail(t, http.StatusNotFound)
	}
}

// badProjectBodies are refused on create; each names the answer it gets.
type badBody struct {
	name   string
	body   any
	status int
	code   string
	field  string // for invalid_project: the key in details.fields
	check  apitest.Check
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func commonBadProjectBodies() []badBody {
	const v = apitest.MustViolate
	const u = apitest.Unchecked
	long := strings.Repeat("a", 65)
	return []badBody{
		{"truncated JSON", raw(`{"setup_timeout_s": 5`), 400, "malformed_json", "", v},
		{"not JSON", raw(`setup_timeout_s=5`), 400, "malformed_json", "", v},
		{"trailing garbage", raw(`{"setup_timeout_s": 5} {}`), 400, "malformed_json", "", u},
		{"empty body", "", 400, "empty_body", "", v},
		{"not UTF-8", []byte("{\"name\": \"ok\", \"manifest\": {\"k\": \"a\xffb\"}}"), 400, "malformed_json", "", u},
		{"not UTF-8 in a key", []byte("{\"name\": \"ok\", \"cache_policy\": {\"k\xfe\": 1}}"), 400, "malformed_json", "", u},
		{"array body", raw(`[{"name": "x"}]`), 422, "not_an_object", "", v},
		{"null body", raw(`null`), 422, "not_an_object", "", v},
		{"string body", raw(`"alpha"`), 422, "not_an_object", "", v},
		{"name not a string", raw(`{"name": 5}`), 422, "wrong_type", "name", v},
		{"env not an object", raw(`{"name": "ok", "env": "A=1"}`), 422, "wrong_type", "env", v},
		{"env value not a string", raw(`{"name": "ok", "env": {"A": 1}}`), 422, "wrong_type", "env", v},
		{"setup_timeout_s a string", raw(`{"name": "ok", "setup_timeout_s": "600"}`), 422, "wrong_type", "setup_timeout_s", v},
		{"setup_timeout_s a fraction", raw(`{"name": "ok", "setup_timeout_s": 1.5}`), 422, "wrong_type", "setup_timeout_s", v},
		{"runtime_version a boolean", raw(`{"name": "ok", "runtime_version": true}`), 422, "wrong_type", "runtime_version", v},
		{"remote_dir a number", raw(`{"name": "ok", "remote_dir": 5}`), 422, "wrong_type", "remote_dir", v},
		{"manifest a string", raw(`{"name": "ok", "manifest": "x"}`), 422, "invalid_project", "manifest", v},
		{"manifest an array", raw(`{"name": "ok", "manifest": [1]}`), 422, "invalid_project", "manifest", v},
		{"cache_policy a number", raw(`{"name": "ok", "cache_policy": 3}`), 422, "invalid_project", "cache_policy", v},
		{"name too long", map[string]any{"name": long}, 422, "invalid_project", "name", v},
		{"name empty", map[string]any{"name": ""}, 422, "invalid_project", "name", v},
		{"name upper case", map[string]any{"name": "Alpha"}, 422, "invalid_project", "name", v},
		{"name with a space", map[string]any{"name": "al pha"}, 422, "invalid_project", "name", v},
		{"name with a dot", map[string]any{"name": "al.pha"}, 422, "invalid_project", "name", v},
		{"setup_timeout_s 0", map[string]any{"name": "ok", "setup_timeout_s": 0}, 422, "invalid_project", "setup_timeout_s", v},
		{"setup_timeout_s negative", map[string]any{"name": "ok", "setup_timeout_s": -1}, 422, "invalid_project", "setup_timeout_s", v},
		{"setup_timeout_s too large", map[string]any{"name": "ok", "setup_timeout_s": 21601}, 422, "invalid_project", "setup_timeout_s", v},
		{"runtime_kind docker", map[string]any{"name": "ok", "runtime_kind": "docker"}, 422, "invalid_project", "runtime_kind", v},
		{"runtime_version 0", map[string]any{"name": "ok", "runtime_version": 0}, 422, "invalid_project", "runtime_version", v},
		{"runtime_version negative", map[string]any{"name": "ok", "runtime_version": -2}, 422, "invalid_project", "runtime_version", v},
		{"env key starting with a digit", map[string]any{"name": "ok", "env": map[string]string{"1BAD": "x"}}, 422, "invalid_project", "env.1BAD", u},
		{"env key with a hyphen", map[string]any{"name": "ok", "env": map[string]string{"BAD-KEY": "x"}}, 422, "invalid_project", "env.BAD-KEY", u},
		{"env key reserved", map[string]any{"name": "ok", "env": map[string]string{"SKIFF_TOKEN": "x"}}, 422, "invalid_project", "env.SKIFF_TOKEN", u},
		{"env value with NUL", map[string]any{"name": "ok", "env": map[string]string{"A": "x\x00y"}}, 422, "invalid_project", "env.A", u},
		// Ways of preparing a project Skiff does not have are refused, not
		// stored and ignored (docs/builds.md).
		{"remote_dir set", map[string]any{"name": "ok", "remote_dir": "/srv/x"}, 422, "invalid_project", "remote_dir", u},
		{"image_ref set", map[string]any{"name": "ok", "image_ref": "ghcr.io/acme/beta:1"}, 422, "invalid_project", "image_ref", u},
		{"image_digest set", map[string]any{"name": "ok", "image_digest": "sha256:" + strings.Repeat("ab", 32)}, 422, "invalid_project", "image_digest", u},
		{"cache_policy set", map[string]any{"name": "ok", "cache_policy": map[string]any{"mode": "shared"}}, 422, "invalid_project", "cache_policy", u},
		{"tarball field", map[string]any{"name": "ok", "tarball": "H4sIAAAA"}, 422, "invalid_project", "tarball", u},
		{"content_hash field", map[string]any{"name": "ok", "content_hash": "sha256:" + strings.Repeat("0", 64)}, 422, "invalid_project", "content_hash", u},
	}
}

func testProjectCreateBadInput(t *testing.T, f *fixture) {
	cases := append(commonBadProjectBodies(),
		badBody{"empty object", map[string]any{}, 422, "invalid_project", "name", apitest.MustViolate},
		badBody{"name null", raw(`{"name": null}`), 422, "invalid_project", "name", apitest.MustViolate},
		badBody{"name missing", map[string]any{"setup_timeout_s": 60}, 422, "invalid_project", "name", apitest.MustViolate},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := f.state(t)
			env := f.member.Do(t, apitest.Request{Method: http.MethodPost, Path: "/api/v1/projects", Body: tc.body, Check: tc.check}).
				Fail(t, tc.status)
			checkBadBody(t, tc, env)
			f.unchanged(t, before, "a refused create")
		})
	}
	// Several problems are reported together.
	env := f.member.Do(t, apitest.Request{Method: http.MethodPost, Path: "/api/v1/projects", Check: apitest.MustViolate,
		Body: map[string]any{"name": "Bad Name", "setup_timeout_s": 0, "runtime_kind": "docker", "env": map[string]string{"1X": ""}}}).
		Fail(t, http.StatusUnprocessableEntity)
	fields, _ := env.Details["fields"].(map[string]any)
	wantKeys(t, "details.fields", fields, "name", "setup_timeout_s", "runtime_kind", "env.1X")
}

func testProjectUpdateBadInput(t *testing.T, f *fixture) {
	cases := append(commonBadProjectBodies(),
		badBody{"rename", map[string]any{"name": "gamma"}, 422, "rename_unsupported", "", apitest.Unchecked},
		badBody{"code field", map[string]any{"code": "print(1)"}, 422, "invalid_project", "code", apitest.Unchecked},
		badBody{"files field", map[string]any{"files": []string{"a"}}, 422, "invalid_project", "files", apitest.Unchecked},
		badBody{"dockerfile field", map[string]any{"dockerfile": "FROM x"}, 422, "invalid_project", "dockerfile", apitest.Unchecked},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := f.state(t)
			env := f.member.Do(t, apitest.Request{Method: http.MethodPut, Path: "/api/v1/projects/alpha", Body: tc.body, Check: tc.check}).
				Fail(t, tc.status)
			checkBadBody(t, tc, env)
			f.unchanged(t, before, "a refused update")
		})
	}
}

func checkBadBody(t *testing.T, tc badBody, env *apitest.Envelope) {
	t.Helper()
	if env.Code != tc.code {
		t.Errorf("got code %q, want %q (error %q)", env.Code, tc.code, env.Error)
	}
	if env.RecommendedAction == "" {
		t.Errorf("got no recommended_action")
	}
	switch tc.code {
	case "invalid_project":
		fields, _ := env.Details["fields"].(map[string]any)
		if _, ok := fields[tc.field]; !ok {
			t.Errorf("got details.fields %v, want a %q entry", env.Details["fields"], tc.field)
		}
	case "wrong_type":
		if got, _ := env.Details["field"].(string); !strings.HasPrefix(got, tc.field) {
			t.Errorf("got details.field %q, want %q", got, tc.field)
		}
	}
}

// testOversizedBodies: a JSON body of exactly 1 MiB is read; one byte more
// is 413 with the envelope, and nothing changes.
func testOversizedBodies(t *testing.T, f *fixture) {
	padded := func(prefix string, size int) []byte {
		b := []byte(prefix + `"pad": "`)
		b = append(b, strings.Repeat("x", size-len(b)-2)...)
		return append(b, `"}`...)
	}
	exact := padded(`{"name": "exact", `, httpapi.MaxJSONBody)
	if len(exact) != httpapi.MaxJSONBody {
		t.Fatalf("got a %d-byte body, want %d", len(exact), httpapi.MaxJSONBody)
	}
	f.member.Do(t, apitest.Request{Method: http.MethodPost, Path: "/api/v1/projects", Body: exact}).Want(t, http.StatusCreated)

	for _, tc := range []struct {
		method, path string
		body         []byte
	}{
		{"POST", "/api/v1/projects", padded(`{"name": "big", `, httpapi.MaxJSONBody+1)},
		{"POST", "/api/v1/projects", padded(`{"name": "bigger", `, 3*httpapi.MaxJSONBody)},
		{"PUT", "/api/v1/projects/alpha", padded(`{"setup_timeout_s": 5, `, httpapi.MaxJSONBody+1)},
		{"PUT", kvPath("alpha", "big"), padded(`{"value": 1, `, httpapi.MaxJSONBody+1)},
		{"PUT", kvPath("alpha", fixtureKey), padded(`{"value": 2, `, 2*httpapi.MaxJSONBody)},
	} {
		before := f.state(t)
		env := f.member.Do(t, apitest.Request{Method: tc.method, Path: tc.path, Body: tc.body, Check: apitest.Unchecked}).
			Fail(t, http.StatusRequestEntityTooLarge)
		if env.Code != "body_too_large" {
			t.Errorf("%s %s: got code %q, want body_too_large", tc.method, tc.path, env.Code)
		}
		f.unchanged(t, before, tc.method+" "+tc.path+" with an oversized body")
	}
	// The server still serves after refusing them.
	f.member.Get(t, "/api/v1/projects/alpha").Want(t, http.StatusOK)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}
