package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/openapi"
)

// No error response of openapi.json requires details but the 402 shortfall
// (PaymentRequired), which always carries its quote there: the spec makes
// details optional, and a contract fuzzer generated from the document
// flagged answers that left it out where the document required it.
func TestErrorResponsesRequireDetailsOnlyWhereAlwaysSent(t *testing.T) {
	t.Parallel()
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapi.Document, &doc); err != nil {
		t.Fatal(err)
	}
	requiresDetails := func(raw json.RawMessage) bool {
		return strings.Contains(string(raw), `"required":["details"]`) ||
			strings.Contains(string(raw), `"details"],`) || strings.Contains(string(raw), `,"details"]`)
	}
	for name, raw := range doc.Components.Schemas {
		compact := compactJSON(t, raw)
		if name != "PaymentRequired" && requiresDetails(compact) {
			t.Errorf("schema %s requires details; only PaymentRequired may", name)
		}
	}
	for path, ops := range doc.Paths {
		for method, raw := range ops {
			var op struct {
				Responses map[string]json.RawMessage `json:"responses"`
			}
			if json.Unmarshal(raw, &op) != nil {
				continue
			}
			for code, r := range op.Responses {
				if code >= "400" && requiresDetails(compactJSON(t, r)) {
					t.Errorf("%s %s %s requires details inline", method, path, code)
				}
			}
		}
	}
}

func compactJSON(t *testing.T, raw json.RawMessage) json.RawMessage {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return b
}

// The two answers the fuzzer found disagree with the document are
// validated against it (the test client checks every response).
func testErrorBodiesMatchDocument(t *testing.T, f *fixture) {
	env := f.member.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/projects/" + fixtureProject + "/init",
		Body: map[string]any{"max_nodes": 0}, Check: apitest.Unchecked}).Fail(t, http.StatusUnprocessableEntity)
	if env.Code != "invalid_max_nodes" {
		t.Errorf("init with max_nodes 0: got %q", env.Code)
	}
	env = f.member.Do(t, apitest.Request{Method: "PATCH", Path: "/api/v1/jobs/job_nosuchjob/requirements",
		Body: map[string]any{"cpu": 2}}).Fail(t, http.StatusNotFound)
	if env.Code == "" || env.RecommendedAction == "" {
		t.Errorf("requirements of an unknown job: got %+v, want a code and a recommended_action", env)
	}
}
