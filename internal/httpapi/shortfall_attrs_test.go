package httpapi_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/paywire"
)

// shortfallQuote reads the quote of a 402 and the body's own x402
// requirements.
type shortfallQuote struct {
	Details struct {
		Quote struct {
			ID    string `json:"id"`
			Attrs struct {
				X402 *paywire.PaymentRequired `json:"x402_payment_required"`
			} `json:"attrs"`
		} `json:"quote"`
	} `json:"details"`
	PaymentRequired paywire.PaymentRequired `json:"payment_required"`
}

// A shortfall quote (the 402 of a job submit or a project init) is stored
// with attrs.x402_payment_required, as a top-up quote is: the 402's quote
// and GET /account/quotes/{id} show what paying it takes.
func TestShortfallQuotesCarryX402Requirements(t *testing.T) {
	forEngine(t, func(t *testing.T, eng apitest.Engine) {
		p := startPayEnv(t, eng)
		_, c := fundedAccount(t, p.e, "poor", "thin", 10_000) // 0.01 USD
		for _, tc := range []struct {
			what, path string
			body       any
			amount     string
		}{
			{"job submit", "/api/v1/jobs", map[string]any{"project": "thin", "runner_command": []string{"/r"}}, "23750"},
			{"project init", "/api/v1/projects/thin/init", map[string]any{}, "4990000"},
		} {
			r := c.Post(t, tc.path, tc.body)
			r.Fail(t, http.StatusPaymentRequired)
			var got shortfallQuote
			if err := json.Unmarshal(r.Body, &got); err != nil {
				t.Fatal(err)
			}
			q := got.Details.Quote
			x := q.Attrs.X402
			if x == nil || len(x.Accepts) != 1 || x.Accepts[0].Amount != tc.amount ||
				!reflect.DeepEqual(x.Accepts, got.PaymentRequired.Accepts) || x.Resource.URL != got.PaymentRequired.Resource.URL ||
				x.Resource.URL != p.e.URL+payPath(q.ID) {
				t.Errorf("%s 402: quote attrs %s, want x402_payment_required for %s as the body's payment_required %s",
					tc.what, mustJSON(t, q.Attrs), tc.amount, mustJSON(t, got.PaymentRequired))
				continue
			}
			var stored struct {
				Quote struct {
					Attrs struct {
						X402 *paywire.PaymentRequired `json:"x402_payment_required"`
					} `json:"attrs"`
				} `json:"quote"`
			}
			c.Get(t, "/api/v1/account/quotes/"+q.ID).JSON(t, http.StatusOK, &stored)
			if sx := stored.Quote.Attrs.X402; sx == nil || len(sx.Accepts) != 1 || !reflect.DeepEqual(sx.Accepts, x.Accepts) {
				t.Errorf("%s: stored quote attrs %+v, want the 402's", tc.what, stored.Quote.Attrs)
			}
		}
	})
}
