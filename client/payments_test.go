package client_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/client"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
)

func payOptions(t *testing.T) (apitest.Options, *apitest.Facilitator) {
	fac := apitest.NewFacilitator(t)
	return apitest.Options{AuthRatePerAddress: -1, AuthRatePerIP: -1, Payments: fac.PaymentsConfig()}, fac
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

// A facilitator outage answers 503; the client sends the same credential
// again after the wait, and the quote is paid once.
func TestPayRetriesOutage(t *testing.T) {
	// A facilitator per server: each counts its own outage.
	facs := map[string]*apitest.Facilitator{}
	var mu sync.Mutex
	forEngineWith(t, func(t *testing.T) apitest.Options {
		opts, fac := payOptions(t)
		mu.Lock()
		facs[t.Name()] = fac
		mu.Unlock()
		return opts
	}, func(t *testing.T, e *apitest.Env) {
		mu.Lock()
		fac := facs[t.Name()]
		mu.Unlock()
		ctx := t.Context()
		w, err := client.ParseWallet(strings.Repeat("2b", 32))
		if err != nil {
			t.Fatal(err)
		}
		w.Now = e.Clock.Now
		v, err := client.New(e.URL, "").WalletSignIn(ctx, w, "")
		if err != nil {
			t.Fatal(err)
		}
		var waits int
		c := client.New(e.URL, v.Token, client.WithPayer(w), client.WithSleep(func(context.Context, time.Duration) error {
			waits++
			return nil
		}))
		fac.Down(1)
		paid, err := c.Topup(ctx, "1", "")
		if err != nil || paid.Balance.AvailableUSD != 1_000_000 {
			t.Fatalf("topup through an outage: %+v %v", paid, err)
		}
		if waits != 1 {
			t.Errorf("waits: %d, want 1 (one 503, then the same credential again)", waits)
		}
		ledger, err := client.Collect(c.Ledger(ctx, "x402_topup"))
		if err != nil || len(ledger) != 1 {
			t.Errorf("top-up entries: %d %v, want 1", len(ledger), err)
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
