package apitest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/skiffhq/skiff/internal/payment"
	"github.com/skiffhq/skiff/paywire"
)

// Facilitator stands in for an x402 facilitator (no chain runs in these
// tests): it approves every payment the server sends it and counts the
// settlements. The server checks the signature, amount and payee itself
// before it asks. internal/httpapi's payment tests use a stricter one.
type Facilitator struct {
	URL     string
	mu      sync.Mutex
	settles int
	down    int
}

// NewFacilitator serves a Facilitator on loopback until the test ends.
func NewFacilitator(t testing.TB) *Facilitator {
	f := &Facilitator{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// Down makes the next n requests answer 503, as in an outage.
func (f *Facilitator) Down(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = n
}

// Settles counts the settlements executed.
func (f *Facilitator) Settles() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.settles
}

// PaymentsConfig is a payment configuration that pays through f on Base's
// chain id with a test token.
func (f *Facilitator) PaymentsConfig() *payment.Config {
	return &payment.Config{FacilitatorURL: f.URL, Network: "eip155:8453", Asset: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
		AssetName: "Test USD", AssetVersion: "2", PayTo: "0xF4aA3B4d4CFc4B4B0b2d34b7E3B0Dc0aa1b2606c"}
}

func (f *Facilitator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	if f.down > 0 {
		f.down--
		f.mu.Unlock()
		http.Error(w, "upstream unavailable", http.StatusServiceUnavailable)
		return
	}
	f.mu.Unlock()
	var req struct {
		PaymentPayload paywire.PaymentPayload `json:"paymentPayload"`
		Requirements   paywire.Requirements   `json:"paymentRequirements"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	a := req.PaymentPayload.Payload.Authorization
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/verify" {
		_ = json.NewEncoder(w).Encode(map[string]any{"isValid": true, "payer": a.From})
		return
	}
	f.mu.Lock()
	f.settles++
	f.mu.Unlock()
	_ = json.NewEncoder(w).Encode(map[string]any{"success": true, "transaction": "0x" + strings.Repeat("ab", 32),
		"network": req.Requirements.Network, "payer": a.From, "amount": a.Value})
}
