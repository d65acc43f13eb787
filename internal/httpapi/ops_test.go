package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/openapi"
)

func testOps(t *testing.T, f *fixture) {
	for _, path := range []string{"/health", "/live"} {
		var h apiv1.Health
		f.anon.Get(t, path).JSON(t, http.StatusOK, &h)
		if h != (apiv1.Health{Status: "ok", App: "skiff"}) {
			t.Errorf("GET %s: got %+v, want {ok skiff}", path, h)
		}
	}

	ready := f.anon.Get(t, "/ready").Object(t, http.StatusOK)
	checks, _ := ready["checks"].(map[string]any)
	wantKeys(t, "/ready checks", checks, "repo", "api_supervisor", "controller_core")
	for k, v := range checks {
		if v != true {
			t.Errorf("/ready check %s: got %v, want true", k, v)
		}
	}

	doc := f.anon.Get(t, "/openapi.json").Want(t, http.StatusOK)
	if !bytes.Equal(doc.Body, openapi.Document) {
		t.Errorf("GET /openapi.json: got %d bytes, want openapi/openapi.json (%d bytes)", len(doc.Body), len(openapi.Document))
	}

	// Public endpoints answer HEAD as GET, without a body; so do the others
	// for a caller with a key.
	for _, tc := range []struct {
		c    *apitest.Client
		path string
	}{
		{f.anon, "/health"}, {f.anon, "/live"}, {f.anon, "/ready"}, {f.anon, "/openapi.json"},
		{f.member, "/api/v1/projects"}, {f.member, "/api/v1/projects/alpha/status"},
	} {
		r := tc.c.Do(t, apitest.Request{Method: http.MethodHead, Path: tc.path}).Want(t, http.StatusOK)
		if len(r.Body) != 0 {
			t.Errorf("HEAD %s: got a %d-byte body, want none", tc.path, len(r.Body))
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("HEAD %s: got Content-Type %q, want application/json", tc.path, ct)
		}
	}

	// Every answer carries a request id; a caller's own (sane) one is kept.
	r := f.anon.Do(t, apitest.Request{Method: http.MethodGet, Path: "/health", Header: http.Header{"X-Request-Id": {"req-from-caller"}}})
	if got := r.Header.Get("X-Request-Id"); got != "req-from-caller" {
		t.Errorf("got X-Request-Id %q, want the caller's req-from-caller", got)
	}
	r = f.anon.Do(t, apitest.Request{Method: http.MethodGet, Path: "/health", Header: http.Header{"X-Request-Id": {strings.Repeat("x", 65)}}})
	if got := r.Header.Get("X-Request-Id"); !strings.HasPrefix(got, "req_") {
		t.Errorf("got X-Request-Id %q for an over-long caller id, want a fresh req_ id", got)
	}
}

func testReadyNotReady(t *testing.T, f *fixture) {
	for _, tc := range []struct {
		name           string
		draining, core bool
		failing        string
	}{
		{"draining", true, true, "api_supervisor"},
		{"core not started", false, false, "controller_core"},
	} {
		f.e.Server.SetDraining(tc.draining)
		f.e.Server.SetCoreStarted(tc.core)
		env := f.anon.Get(t, "/ready").Fail(t, http.StatusServiceUnavailable)
		if env.Code != "not_ready" {
			t.Errorf("%s: got code %q, want not_ready", tc.name, env.Code)
		}
		checks, _ := env.Details["checks"].(map[string]any)
		for _, k := range []string{"repo", "api_supervisor", "controller_core"} {
			if want := k != tc.failing; checks[k] != want {
				t.Errorf("%s: got details.checks.%s = %v, want %v", tc.name, k, checks[k], want)
			}
		}
		h := f.anon.Do(t, apitest.Request{Method: http.MethodHead, Path: "/ready"}).Want(t, http.StatusServiceUnavailable)
		if len(h.Body) != 0 {
			t.Errorf("%s: HEAD /ready got a body, want none", tc.name)
		}
		// Liveness does not depend on readiness.
		f.anon.Get(t, "/health").Want(t, http.StatusOK)
	}
	f.e.Server.SetDraining(false)
	f.e.Server.SetCoreStarted(true)
	f.anon.Get(t, "/ready").Want(t, http.StatusOK)
}

func testRegister(t *testing.T, f *fixture) {
	for _, tc := range []struct {
		name  string
		c     *apitest.Client
		body  any
		check apitest.Check
	}{
		{"no body", f.anon, nil, apitest.MustMatch},
		{"empty object", f.anon, map[string]any{}, apitest.MustMatch},
		{"email and name", f.anon, map[string]any{"email": "a@example.com", "name": "A"}, apitest.MustMatch},
		{"with a member key", f.member, map[string]any{"email": "a@example.com"}, apitest.MustMatch},
		{"malformed JSON", f.anon, json.RawMessage(`{"email":`), apitest.MustViolate},
		{"wrong types", f.anon, map[string]any{"email": 5}, apitest.MustViolate},
		{"over 1 MiB", f.anon, map[string]any{"name": strings.Repeat("n", httpapi.MaxJSONBody)}, apitest.Unchecked},
	} {
		env := tc.c.Do(t, apitest.Request{Method: http.MethodPost, Path: "/api/v1/auth/register", Body: tc.body, Check: tc.check}).
			Fail(t, http.StatusForbidden)
		if env.Code != "self_service_registration_disabled" {
			t.Errorf("%s: got code %q, want self_service_registration_disabled", tc.name, env.Code)
		}
		if env.RecommendedAction == "" {
			t.Errorf("%s: got no recommended_action", tc.name)
		}
		wallet, _ := env.Details["wallet_auth"].(map[string]any)
		if wallet["challenge"] != "POST /api/v1/auth/wallet/challenge" || wallet["verify"] != "POST /api/v1/auth/wallet/verify" {
			t.Errorf("%s: got details.wallet_auth %v, want the challenge and verify endpoints", tc.name, env.Details["wallet_auth"])
		}
		waitlist, _ := env.Details["waitlist"].(map[string]any)
		if waitlist["endpoint"] != "POST /api/v1/waitlist" {
			t.Errorf("%s: got details.waitlist %v, want the waitlist endpoint", tc.name, env.Details["waitlist"])
		}
	}
}

func testBalance(t *testing.T, f *fixture) {
	ctx := t.Context()
	balance := func(c *apitest.Client) (apiv1.Account, map[string]any) {
		t.Helper()
		var body struct {
			Account apiv1.Account  `json:"account"`
			Balance map[string]any `json:"balance"`
		}
		r := c.Get(t, "/api/v1/account/balance")
		r.Want(t, http.StatusOK)
		d := json.NewDecoder(bytes.NewReader(r.Body))
		d.UseNumber()
		if err := d.Decode(&body); err != nil {
			t.Fatalf("decode balance: %v", err)
		}
		wantKeys(t, "balance", body.Balance, "ledger_balance_usd", "held_usd", "available_usd", "active_hold_count", "open_quote_count")
		return body.Account, body.Balance
	}
	wantBalance := func(what string, b map[string]any, ledger, held, available, holds, quotes string) {
		t.Helper()
		for k, want := range map[string]string{
			"ledger_balance_usd": ledger, "held_usd": held, "available_usd": available,
			"active_hold_count": holds, "open_quote_count": quotes,
		} {
			if got := b[k].(json.Number).String(); got != want {
				t.Errorf("%s: got %s = %s, want %s", what, k, got, want)
			}
		}
	}

	acct, b := balance(f.member)
	if acct.ID != f.acct.ID || acct.Name != "acme" || acct.Role != "member" || !acct.CreatedAt.Equal(apitest.Epoch) {
		t.Errorf("got account %+v, want id %s, name acme, role member, created_at %s", acct, f.acct.ID, apitest.Epoch)
	}
	wantBalance("new account", b, "0", "0", "0", "0", "0")

	var sum int64
	for _, micros := range []int64{25_000_000, 500_000, 1} {
		e, err := f.e.Billing.GrantCredit(ctx, f.acct.ID, micros, "beta")
		if err != nil {
			t.Fatalf("GrantCredit: %v", err)
		}
		if e.EntryType != "beta_credit_grant" || e.AmountMicros != micros {
			t.Errorf("got ledger entry %+v, want a beta_credit_grant of %d", e, micros)
		}
		sum += e.AmountMicros
	}
	// Another account's money is not ours.
	other := f.e.NewAccount(t, "other")
	if _, err := f.e.Billing.GrantCredit(ctx, other.ID, 7_000_000, "beta"); err != nil {
		t.Fatal(err)
	}
	want := apiv1.USD(sum).String()
	if want != "25.500001" {
		t.Fatalf("got ledger sum %s, want 25.500001", want)
	}
	_, b = balance(f.member)
	wantBalance("after grants", b, want, "0", want, "0", "0")

	acct, b = balance(f.viewer)
	if acct.Role != "viewer" || acct.ID != f.acct.ID {
		t.Errorf("viewer: got account %+v, want role viewer of %s", acct, f.acct.ID)
	}
	wantBalance("viewer", b, want, "0", want, "0", "0")

	_, b = balance(f.e.Client(other.Member))
	wantBalance("other account", b, "7", "0", "7", "0", "0")
}

func testUnknownRoute(t *testing.T, f *fixture) {
	for _, tc := range []struct {
		c            *apitest.Client
		method, path string
	}{
		{f.anon, "GET", "/nope"},
		{f.anon, "GET", "/api/v1/nope"},
		{f.member, "GET", "/api/v1/projects/alpha/nope"},
		{f.member, "POST", "/api/v2/projects"},
		{f.member, "GET", "/api/v1/projects/alpha/status/details/more"},
		{f.anon, "DELETE", "/healthz"},
	} {
		before := f.state(t)
		env := tc.c.Do(t, apitest.Request{Method: tc.method, Path: tc.path, Check: apitest.MustViolate}).Fail(t, http.StatusNotFound)
		if env.Code != "route_not_found" {
			t.Errorf("%s %s: got code %q, want route_not_found", tc.method, tc.path, env.Code)
		}
		f.unchanged(t, before, tc.method+" "+tc.path)
	}
}

// Every path of the route table answers a method it does not serve with
// 405, the envelope and an Allow header naming exactly what it serves.
func testWrongMethod(t *testing.T, f *fixture) {
	served := map[string][]string{}
	var patterns []string
	for _, rt := range f.e.Server.Routes() {
		if served[rt.Pattern] == nil {
			patterns = append(patterns, rt.Pattern)
		}
		served[rt.Pattern] = append(served[rt.Pattern], rt.Method)
		if rt.Method == http.MethodGet {
			served[rt.Pattern] = append(served[rt.Pattern], http.MethodHead)
		}
	}
	for _, p := range patterns {
		want := slices.Sorted(slices.Values(served[p]))
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
			if slices.Contains(want, m) {
				continue
			}
			before := f.state(t)
			r := f.member.Do(t, apitest.Request{Method: m, Path: fill(p, fixtureProject), Check: apitest.MustViolate})
			env := r.Fail(t, http.StatusMethodNotAllowed)
			var allow []string
			for _, a := range strings.Split(r.Header.Get("Allow"), ",") {
				allow = append(allow, strings.TrimSpace(a))
			}
			slices.Sort(allow)
			if !slices.Equal(allow, want) {
				t.Errorf("%s %s: got Allow %q, want %v", m, p, r.Header.Get("Allow"), want)
			}
			var details []string
			for _, a := range env.Details["allowed_methods"].([]any) {
				details = append(details, a.(string))
			}
			slices.Sort(details)
			if !slices.Equal(details, want) {
				t.Errorf("%s %s: got details.allowed_methods %v, want %v", m, p, details, want)
			}
			if env.Code != "method_not_allowed" {
				t.Errorf("%s %s: got code %q, want method_not_allowed", m, p, env.Code)
			}
			f.unchanged(t, before, m+" "+p)
		}
	}
}
