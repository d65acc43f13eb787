package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/payment"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/paywire"
)

// writeChallenges answers 402 with both ways to pay q: the PAYMENT-REQUIRED
// header (x402 v2) and a WWW-Authenticate Payment challenge (MPP), and the
// body {quote, payment_required, mpp} plus the envelope's fields.
func (s *Server) writeChallenges(w http.ResponseWriter, r *http.Request, q *store.Quote, reason string, extra map[string]any) {
	c := s.payments.ChallengesFor(q, reason)
	w.Header().Set(paywire.HeaderPaymentRequired, paywire.EncodeStd(c.PaymentRequired))
	w.Header().Add("WWW-Authenticate", c.MPP.WWWAuthenticate())
	body := map[string]any{
		"error":              reason,
		"code":               "payment_required",
		"recommended_action": "Pay the quote with an x402 client (PAYMENT-SIGNATURE) or an MPP client (Authorization: Payment) at " + s.payments.PayURL(q.ID) + ", then retry.",
		"request_id":         requestID(r.Context()),
		"quote":              billing.QuoteView(q),
		"payment_required":   c.PaymentRequired,
		"mpp":                c.MPPView,
	}
	for k, v := range extra {
		body[k] = v
	}
	writeJSON(w, http.StatusPaymentRequired, body)
}

// optionalPrincipal authenticates a bearer token when one is sent; an
// Authorization: Payment credential stands in for it (spec 5.8).
func (s *Server) optionalPrincipal(r *http.Request) (*store.Principal, string, error) {
	h := r.Header.Get("Authorization")
	if cred, ok := paywire.MPPCredentialFrom(h); ok {
		return nil, cred, nil
	}
	p, err := s.auth.Authenticate(r.Context(), h)
	return p, "", err
}

func (s *Server) topup(w http.ResponseWriter, r *http.Request) error {
	if !s.payments.Enabled() {
		return payment.NotConfigured()
	}
	p, mpp, err := s.optionalPrincipal(r)
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="skiff"`)
		return err
	}
	if mpp != "" {
		// An MPP credential posted to /topup settles the quote it names.
		return s.pay(w, r, payment.PayParams{MPP: mpp})
	}
	if p.Key.Role == store.RoleViewer {
		return fault.Forbidden("read_only_key", "Use a member key to change anything; viewer keys can only read.", "viewer keys are read-only")
	}
	if h := r.Header.Get(paywire.HeaderPaymentSignature); h != "" {
		// A stock x402 client retries the URL that answered 402: the
		// payload names the quote it pays in its echoed resource URL.
		qid, err := payment.QuoteIDFromPayload(h)
		if err != nil {
			return err
		}
		return s.pay(w, r, payment.PayParams{QuoteID: qid, AccountID: p.Account.ID, X402: h})
	}
	var body struct {
		AmountUSD   json.RawMessage `json:"amount_usd"`
		Description *string         `json:"description"`
	}
	raw, err := decodeJSON(w, r, &body, false)
	if err != nil {
		return err
	}
	_ = raw
	desc := ""
	if body.Description != nil {
		desc = *body.Description
	}
	q, err := s.payments.CreateTopup(r.Context(), p.Account.ID, body.AmountUSD, desc)
	if err != nil {
		return err
	}
	s.writeChallenges(w, r, q, "payment required: pay quote "+q.ID+" to add "+apiv1.USD(q.AmountMicros).String()+" USD", nil)
	return nil
}

func (s *Server) payX402(w http.ResponseWriter, r *http.Request) error {
	if !s.payments.Enabled() {
		return payment.NotConfigured()
	}
	pp := payment.PayParams{QuoteID: r.PathValue("quote_id"), X402: r.Header.Get(paywire.HeaderPaymentSignature)}
	h := r.Header.Get("Authorization")
	if cred, ok := paywire.MPPCredentialFrom(h); ok {
		pp.MPP = cred
	} else {
		p, err := s.auth.Authenticate(r.Context(), h)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="skiff"`)
			return err
		}
		pp.AccountID = p.Account.ID
	}
	if pp.MPP != "" && pp.X402 != "" {
		return fault.Invalid("two_credentials", "Send one credential: PAYMENT-SIGNATURE or Authorization: Payment.",
			"both an x402 and an MPP credential were sent")
	}
	return s.pay(w, r, pp)
}

func (s *Server) pay(w http.ResponseWriter, r *http.Request, pp payment.PayParams) error {
	paid, err := s.payments.Pay(r.Context(), pp)
	var nc *payment.NoCredential
	var d *payment.Declined
	switch {
	case errors.As(err, &nc):
		s.writeChallenges(w, r, nc.Quote, "PAYMENT-SIGNATURE header is required", nil)
		return nil
	case errors.As(err, &d):
		w.Header().Set(paywire.HeaderPaymentResponse, paywire.EncodeStd(d.Response))
		s.writeChallenges(w, r, d.Quote, "payment declined: "+d.Reason, map[string]any{
			"code": "payment_declined", "payment_response": d.Response})
		return nil
	case err != nil:
		return err
	}
	st := paid.Settlement
	status := http.StatusCreated
	if paid.Replay {
		status = http.StatusOK
	}
	out := apiv1.SettleResponse{
		Quote: billing.QuoteView(paid.Quote),
		Payment: apiv1.Payment{Protocol: st.Protocol, Status: st.Status, Payer: st.Payer, Transaction: st.TransactionHash,
			Network: s.payments.Config().Network, AmountUSD: apiv1.USD(paid.Quote.AmountMicros), LedgerEntryID: st.LedgerEntryID,
			SettledAt: st.UpdatedAt},
		Replay: paid.Replay,
	}
	// An MPP credential stands in for the bearer only for its own
	// settlement: replayed without a bearer (anyone who saw it in a log or
	// a proxy can), it answers that settlement again and nothing of the
	// account as it is now.
	if !paid.Replay || pp.AccountID != "" {
		bal, err := s.billing.Balance(r.Context(), paid.Quote.AccountID)
		if err != nil {
			return err
		}
		acct, err := s.store.AccountGetByID(r.Context(), paid.Quote.AccountID)
		if err != nil {
			return err
		}
		out.Account = &apiv1.Account{ID: acct.ID, Name: acct.Name, Role: string(store.RoleMember), CreatedAt: acct.CreatedAt}
		out.Balance = &apiv1.Balance{LedgerBalanceUSD: apiv1.USD(bal.LedgerMicros), HeldUSD: apiv1.USD(bal.HeldMicros),
			AvailableUSD: apiv1.USD(bal.AvailableMicros()), ActiveHoldCount: bal.ActiveHoldCount, OpenQuoteCount: bal.OpenQuoteCount}
	}
	w.Header().Set(paid.Header, paid.HeaderValue)
	writeJSON(w, status, out)
	return nil
}

// payable adds both payment challenges to a 402 that carries a quote (the
// shortfall of a job submit, a requirements edit or a project init), so
// that x402 and MPP clients can pay it and resend the same request.
func (s *Server) payable(w http.ResponseWriter, err error) error {
	fe, ok := fault.As(err)
	if !ok || fe.Kind != fault.KindPaymentRequired || !s.payments.Enabled() {
		return err
	}
	qv, ok := fe.Details["quote"].(apiv1.Quote)
	if !ok || qv.Status != "open" {
		return err
	}
	q := &store.Quote{ID: qv.ID, QuoteType: qv.QuoteType, Status: qv.Status, AmountMicros: int64(qv.AmountUSD),
		Description: qv.Description, ExpiresAt: qv.ExpiresAt}
	c := s.payments.ChallengesFor(q, fe.Message)
	w.Header().Set(paywire.HeaderPaymentRequired, paywire.EncodeStd(c.PaymentRequired))
	w.Header().Add("WWW-Authenticate", c.MPP.WWWAuthenticate())
	out := *fe
	out.Fields = map[string]any{"payment_required": c.PaymentRequired, "mpp": c.MPPView}
	for k, v := range fe.Fields {
		out.Fields[k] = v
	}
	return &out
}
