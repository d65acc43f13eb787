package mcp_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skiffhq/skiff/internal/httpapi/apitest"
)

// A submit the balance cannot cover is a tool error that carries the
// shortfall's quote and says what to do; nothing is admitted.
func TestRemoteShortfallCarriesQuote(t *testing.T) {
	onEngines(t, func(t *testing.T, e *apitest.Env) {
		acct := e.FundedAccount(t, "broke", "hello", 0)
		cs, err := connectRemote(t, e, acct.Member, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "submit_job", Arguments: map[string]any{
			"job": map[string]any{"project": "hello", "runner_command": []string{"/runner"}}, "idempotency_key": "broke-1"}})
		if err != nil {
			t.Fatal(err)
		}
		var te struct {
			Status int    `json:"status"`
			Code   string `json:"code"`
			Quote  struct {
				ID        string      `json:"id"`
				AmountUSD json.Number `json:"amount_usd"`
			} `json:"quote"`
			NextSteps []string `json:"next_steps"`
		}
		decode(t, res, &te)
		if !res.IsError || te.Status != http.StatusPaymentRequired || te.Quote.ID == "" || te.Quote.AmountUSD == "" {
			t.Fatalf("submit without funds: got isError %v, %s", res.IsError, text(res))
		}
		msg := text(res)
		for _, want := range []string{te.Quote.ID, "same idempotency_key", "/pay/x402"} {
			if !strings.Contains(msg, want) {
				t.Errorf("the tool error does not say %q:\n%s", want, msg)
			}
		}
		var jobs struct {
			Total int `json:"total"`
		}
		e.Client(acct.Member).Get(t, "/api/v1/jobs").JSON(t, http.StatusOK, &jobs)
		if jobs.Total != 0 {
			t.Errorf("jobs after a 402: got %d, want 0", jobs.Total)
		}
	})
}

// /mcp takes the API's bearer auth: no token, a wrong one or a host
// credential is refused with the envelope before any MCP is spoken, and
// the SDK's client cannot connect.
func TestRemoteRefusesBadToken(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t, apitest.Options{})
	initialize := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	for name, auth := range map[string]string{"none": "", "wrong": "Bearer flk_nope", "host credential": "Bearer skh_nope"} {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", e.URL+"/mcp", bytes.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var env struct {
			Error string `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&env)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || env.Error == "" || resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: got %d %+v, want 401 with the envelope and WWW-Authenticate", name, resp.StatusCode, env)
		}
	}
	if _, err := connectRemote(t, e, "flk_nope", nil); err == nil {
		t.Errorf("the SDK's client connected with a wrong token")
	}
	// A viewer key is read-only; MCP's tools write, so /mcp is a write.
	viewer := e.NewAccount(t, "viewer").Viewer
	req, _ := http.NewRequestWithContext(t.Context(), "POST", e.URL+"/mcp", bytes.NewReader(initialize))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+viewer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("viewer key: got %d, want 403", resp.StatusCode)
	}
}

// A request the SDK cannot read answers the API's error envelope, not
// plain text.
func TestRemoteMalformedRequestIsEnvelope(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t, apitest.Options{})
	acct := e.NewAccount(t, "malformed")
	for name, h := range map[string][2]string{
		"no event-stream in Accept": {"application/json", "application/json"},
		"not JSON":                  {"text/plain", "application/json, text/event-stream"},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", e.URL+"/mcp", strings.NewReader(`{}`))
		req.Header.Set("Content-Type", h[0])
		req.Header.Set("Accept", h[1])
		req.Header.Set("Authorization", "Bearer "+acct.Member)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var env map[string]any
		raw := new(bytes.Buffer)
		_, _ = raw.ReadFrom(resp.Body)
		resp.Body.Close()
		if err := json.Unmarshal(raw.Bytes(), &env); err != nil || resp.StatusCode != http.StatusBadRequest ||
			!strings.Contains(raw.String(), `"code":"mcp_bad_request"`) || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: got %d %s %s", name, resp.StatusCode, resp.Header.Get("Content-Type"), raw)
		}
	}
	// Other methods are the route table's 405.
	req, _ := http.NewRequestWithContext(t.Context(), "GET", e.URL+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+acct.Member)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") == "" {
		t.Errorf("GET /mcp: got %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}
