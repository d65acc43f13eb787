package httpapi_test

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/openapi"
)

// The document the server serves is openapi/openapi.json, and it is a valid
// OpenAPI 3.1 description.
func TestOpenAPIDocumentIsServedAndValid(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t, apitest.Options{})
	r := e.Client("").Get(t, "/openapi.json").Want(t, 200)
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("got Content-Type %q, want application/json", ct)
	}
	if !bytes.Equal(r.Body, openapi.Document) {
		t.Errorf("served document differs from openapi/openapi.json (%d bytes, want %d)", len(r.Body), len(openapi.Document))
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(r.Body)
	if err != nil {
		t.Fatalf("load /openapi.json: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("validate /openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Errorf("got openapi %q, want 3.1.x", doc.OpenAPI)
	}
	ids := map[string]string{}
	for _, op := range e.Contract.Operations() {
		o := doc.Paths.Value(op.Path).GetOperation(op.Method)
		if o.OperationID == "" {
			t.Errorf("%s has no operationId", op)
		}
		if prev, dup := ids[o.OperationID]; dup {
			t.Errorf("operationId %q is used by %s and %s", o.OperationID, prev, op)
		}
		ids[o.OperationID] = op.String()
		if o.Responses == nil || o.Responses.Len() == 0 {
			t.Errorf("%s describes no responses", op)
		}
		// Every failure an operation describes answers the envelope: JSON
		// with a required string "error" (some add fields the spec fixes).
		for code, ref := range o.Responses.Map() {
			if code[0] < '4' {
				continue
			}
			mt := ref.Value.Content.Get("application/json")
			if mt == nil || mt.Schema == nil || !requiresError(mt.Schema.Value) {
				t.Errorf("%s response %s is not application/json with a required string error", op, code)
			}
		}
	}
}

// Every route is described, and every described operation is served.
func TestRoutesMatchOpenAPIOperations(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t, apitest.Options{})
	routes := e.Server.Routes()
	if len(routes) == 0 {
		t.Fatal("got an empty route table")
	}
	for _, m := range e.Contract.RouteMismatches(routes) {
		t.Error(m)
	}
}

// The comparison itself catches both directions of drift.
func TestRouteMismatchesReportsDrift(t *testing.T) {
	t.Parallel()
	doc := []byte(`{"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {
		"/a/{name}/kv/{key}": {"parameters": [
			{"name": "name", "in": "path", "required": true, "schema": {"type": "string"}},
			{"name": "key", "in": "path", "required": true, "schema": {"type": "string"}}],
			"get": {"responses": {"200": {"description": "ok"}}},
			"delete": {"responses": {"200": {"description": "ok"}}}},
		"/b": {"get": {"responses": {"200": {"description": "ok"}}}, "head": {"responses": {"200": {"description": "ok"}}}},
		"/c": {"head": {"responses": {"200": {"description": "ok"}}}}}}`)
	routes := []httpapi.Route{
		{Method: "GET", Pattern: "/a/{name}/kv/{key...}"},
		{Method: "PUT", Pattern: "/a/{name}/kv/{key...}"},
		{Method: "GET", Pattern: "/b"},
	}
	c, err := apitest.LoadContract(doc, routes)
	if err != nil {
		t.Fatal(err)
	}
	got := c.RouteMismatches(routes)
	want := []string{
		"route PUT /a/{name}/kv/{key...} has no operation PUT /a/{name}/kv/{key} in openapi.json",
		"operation DELETE /a/{name}/kv/{key} in openapi.json has no route",
		"operation HEAD /c in openapi.json has no route",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("got mismatches\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestTemplate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"/health", "/health"},
		{"/api/v1/projects/{name}", "/api/v1/projects/{name}"},
		{"/api/v1/projects/{name}/kv/{key...}", "/api/v1/projects/{name}/kv/{key}"},
		{"GET /api/v1/projects/{name}/kv/{key...}", "/api/v1/projects/{name}/kv/{key}"},
	} {
		if got := apitest.Template(tc.in); got != tc.want {
			t.Errorf("Template(%q): got %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The validating client notices a response that breaks the document, so the
// handler tests can trust a quiet client.
func TestContractCatchesBadResponses(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t, apitest.Options{})
	c := e.Contract
	ctx := context.Background()
	for _, tc := range []struct {
		name, method, path string
		status             int
		body               string
		ok                 bool
		contentType        string // "" is application/json
		noRequestID        bool   // answer without the X-Request-Id every response carries
	}{
		{"health ok", "GET", "/health", 200, `{"status":"ok","app":"skiff"}`, true, "", false},
		{"health missing app", "GET", "/health", 200, `{"status":"ok"}`, false, "", false},
		{"undocumented status", "GET", "/health", 418, `{"error":"teapot"}`, false, "", false},
		{"envelope without error", "GET", "/api/v1/projects/p", 404, `{"code":"x"}`, false, "", false},
		{"readiness with a bad enum", "GET", "/api/v1/projects/p/status", 200, `{"init_state":"sleeping"}`, false, "", false},
		{"unknown route envelope", "GET", "/nope", 404, `{"error":"no endpoint"}`, true, "", false},
		{"unknown route not an envelope", "GET", "/nope", 404, `{"message":"no"}`, false, "", false},
		{"unknown route answering 200", "GET", "/nope", 200, `{"error":"x"}`, false, "", false},
		{"kv key with slashes", "GET", "/api/v1/projects/p/kv/a/b", 404, `{"error":"key not found"}`, true, "", false},
		{"head with a body", "HEAD", "/health", 200, `{}`, false, "", false},
		{"head without a body", "HEAD", "/health", 200, ``, true, "", false},
		{"undescribed media type", "GET", "/health", 200, `ok`, false, "text/markdown", false},
		{"undescribed plain text", "GET", "/health", 200, `ok`, false, "text/plain", false},
		{"no request id", "GET", "/health", 200, `{"status":"ok","app":"skiff"}`, false, "", true},
	} {
		req, err := httpRequest(ctx, tc.method, tc.path)
		if err != nil {
			t.Fatal(err)
		}
		ct := "application/json"
		if tc.contentType != "" {
			ct = tc.contentType
		}
		h := map[string][]string{"Content-Type": {ct}}
		if !tc.noRequestID {
			h["X-Request-Id"] = []string{"req_test"}
		}
		err = c.ValidateResponse(ctx, req, tc.status, h, []byte(tc.body))
		if (err == nil) != tc.ok {
			t.Errorf("%s: got error %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func httpRequest(ctx context.Context, method, path string) (*http.Request, error) {
	return http.NewRequestWithContext(ctx, method, "http://127.0.0.1"+path, nil)
}

// requiresError reports whether a schema requires a string "error" field,
// itself or through allOf.
func requiresError(s *openapi3.Schema) bool {
	if s == nil {
		return false
	}
	if slices.Contains(s.Required, "error") {
		if p := s.Properties["error"]; p != nil && p.Value != nil && p.Value.Type.Is("string") {
			return true
		}
	}
	for _, sub := range s.AllOf {
		if requiresError(sub.Value) {
			return true
		}
	}
	return false
}
