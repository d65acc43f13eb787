package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/client"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/payment"
)

// scriptedFacilitator stands in for an x402 facilitator (the chain cannot
// run here): it approves every payment the server sends it and counts the
// settlements. The server checks the signature, amount and payee itself
// before it asks.
type scriptedFacilitator struct {
	mu      sync.Mutex
	settles int
}

func (f *scriptedFacilitator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		PaymentPayload payment.PaymentPayload `json:"paymentPayload"`
		Requirements   payment.Requirements   `json:"paymentRequirements"`
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

func payOptions(t *testing.T) (apitest.Options, *scriptedFacilitator) {
	fac := &scriptedFacilitator{}
	srv := httptest.NewServer(fac)
	t.Cleanup(srv.Close)
	return apitest.Options{AuthRatePerAddress: -1, AuthRatePerIP: -1, Payments: &payment.Config{FacilitatorURL: srv.URL,
		Network: "eip155:8453", Asset: "0x5FbDB2315678afecb367f032d93F642f64180aa3", AssetName: "Test USD",
		AssetVersion: "2", PayTo: "0xF4aA3B4d4CFc4B4B0b2d34b7E3B0Dc0aa1b2606c"}}, fac
}

// A wallet signs in, tops up through x402, and a job the balance cannot
// cover is answered 402, paid and resent with the same Idempotency-Key:
// one job, one payment per quote.
func TestWalletTopupAndShortfall(t *testing.T) {
	opts, _ := payOptions(t)
	forEngine(t, opts, func(t *testing.T, e *apitest.Env) {
		ctx := t.Context()
		w, err := client.ParseWallet("0x" + strings.Repeat("17", 32))
		if err != nil {
			t.Fatal(err)
		}
		w.Now = e.Clock.Now
		v, err := client.New(e.URL, "").WalletSignIn(ctx, w, "")
		if err != nil {
			t.Fatal(err)
		}
		c := client.New(e.URL, v.Token, client.WithPayer(w))
		q, pr, err := c.TopupQuote(ctx, "2.5", "credit")
		if err != nil || q.AmountUSD != 2_500_000 || pr == nil || len(pr.Accepts) != 1 {
			t.Fatalf("quote: %+v %+v %v", q, pr, err)
		}
		paid, err := c.PayQuote(ctx, q.ID, nil)
		if err != nil || paid.Balance.AvailableUSD != 2_500_000 || paid.Replay {
			t.Fatalf("pay: %+v %v", paid, err)
		}
		// No payer: the 402 comes back as an error with its quote.
		if _, err := client.New(e.URL, v.Token).Topup(ctx, "1", ""); err != client.ErrNoPayer {
			t.Errorf("topup without payer: %v", err)
		}
		if _, err := c.CreateProject(ctx, &apiv1.ProjectWrite{Name: client.Ptr("p")}); err != nil {
			t.Fatal(err)
		}
		e.Publish(t, v.Account.ID, "p")
		// A job whose hold is more than the balance: 402, paid, resent.
		body := map[string]any{"project": "p", "runner_command": []string{"/runner"}, "timeout_s": 86400,
			"fan_out": map[string]any{"chunks": 50, "total": 50, "range_field": "r"}}
		noPay := client.New(e.URL, v.Token)
		_, err = noPay.SubmitJobRaw(ctx, body, "")
		ae, ok := client.AsError(err)
		if !ok || ae.Status != http.StatusPaymentRequired || ae.Quote == nil || ae.PaymentRequired == nil {
			t.Fatalf("shortfall without payer: %#v", err)
		}
		j, err := c.SubmitJobRaw(ctx, body, "key-1")
		if err != nil || j.ID == "" {
			t.Fatalf("shortfall paid and resent: %+v %v", j, err)
		}
		jobs, err := client.Collect(c.Jobs(ctx, client.JobFilter{}))
		if err != nil || len(jobs) != 1 {
			t.Errorf("jobs after the paid resend: %d %v, want 1", len(jobs), err)
		}
		ledger, err := client.Collect(c.Ledger(ctx, "x402_topup"))
		if err != nil || len(ledger) != 2 {
			t.Errorf("top-up entries: %+v %v, want 2 (the top-up and the shortfall)", ledger, err)
		}
	})
}

// Payments off: 503 payments_not_configured comes back at once (no wait
// would change it).
func TestPaymentsNotConfigured(t *testing.T) {
	forEngine(t, apitest.Options{}, func(t *testing.T, e *apitest.Env) {
		var tries int
		_, c := account(t, e, client.WithRetries(2, 0), client.WithSleep(func(_ context.Context, _ time.Duration) error {
			tries++
			return nil
		}))
		_, _, err := c.TopupQuote(t.Context(), "5", "")
		if ae, ok := client.AsError(err); !ok || ae.Status != http.StatusServiceUnavailable || ae.Code() != "payments_not_configured" {
			t.Errorf("topup: %#v", err)
		}
		if tries != 0 {
			t.Errorf("retries: %d, want none", tries)
		}
	})
}
