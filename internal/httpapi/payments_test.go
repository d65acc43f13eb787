package httpapi_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/payment"
	"github.com/skiffhq/skiff/paywire"
)

// Test chain: Base's chain id with a token of our own.
const (
	testAsset = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
	testPayTo = "0xF4aA3B4d4CFc4B4B0b2d34b7E3B0Dc0aa1b2606c"
)

// facilitator is a scripted x402 facilitator on loopback: it answers
// /verify and /settle over HTTP the way the reference one does (a verdict
// in a 200), checks the request's shape and the EIP-712 signature, and
// counts the settlements it executed. down makes it answer 503 without a
// verdict, as a proxy in front of a dead one does.
type facilitator struct {
	t       testing.TB
	srv     *httptest.Server
	mu      sync.Mutex
	down    bool
	decline string
	// settleDecline, when set, is /settle's answer while /verify passes
	// (the reference facilitator answers a spent nonce so).
	settleDecline string
	// dropSettle executes a settlement and then answers 502 without a
	// result, as when the answer is lost or the server dies meanwhile.
	dropSettle bool
	settled    map[string]string // payer|nonce -> signature|transaction
	verifys    int
	settles    int
}

func newFacilitator(t testing.TB) *facilitator {
	f := &facilitator{t: t, settled: map[string]string{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *facilitator) set(fn func(f *facilitator)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *facilitator) counts() (verifys, settles int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.verifys, f.settles
}

func (f *facilitator) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		http.Error(w, "upstream unavailable", http.StatusServiceUnavailable)
		return
	}
	var req struct {
		X402Version         int                    `json:"x402Version"`
		PaymentPayload      paywire.PaymentPayload `json:"paymentPayload"`
		PaymentRequirements paywire.Requirements   `json:"paymentRequirements"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.X402Version != 2 {
		f.t.Errorf("facilitator %s: bad request: %v", r.URL.Path, err)
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	a := req.PaymentPayload.Payload.Authorization
	asset, _ := paywire.ParseAddress(req.PaymentRequirements.Asset)
	chain, _ := strconv.ParseInt(strings.TrimPrefix(req.PaymentRequirements.Network, "eip155:"), 10, 64)
	d := paywire.Domain{Name: req.PaymentRequirements.Extra["name"].(string), Version: req.PaymentRequirements.Extra["version"].(string),
		ChainID: chain, VerifyingContract: asset}
	from, _ := paywire.ParseAddress(a.From)
	to, _ := paywire.ParseAddress(a.To)
	value, _ := new(big.Int).SetString(a.Value, 10)
	va, _ := new(big.Int).SetString(a.ValidAfter, 10)
	vb, _ := new(big.Int).SetString(a.ValidBefore, 10)
	nonce, _ := paywire.ParseBytes32(a.Nonce)
	sigErr := d.VerifyAuthorization(&paywire.Authorization{From: from, To: to, Value: value, ValidAfter: va, ValidBefore: vb, Nonce: nonce},
		req.PaymentPayload.Payload.Signature)
	key := strings.ToLower(a.From + "|" + a.Nonce)
	sig := req.PaymentPayload.Payload.Signature
	prev, done := f.settled[key]
	reason := f.decline
	switch {
	case sigErr != nil:
		reason = "invalid_exact_evm_signature"
	case a.Value != req.PaymentRequirements.Amount:
		reason = "invalid_exact_evm_authorization_value_mismatch"
	case done && (r.URL.Path == "/verify" || !strings.HasPrefix(prev, sig+"|")):
		reason = "invalid_exact_evm_nonce_already_used"
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/verify":
		f.verifys++
		_ = json.NewEncoder(w).Encode(map[string]any{"isValid": reason == "", "invalidReason": reason, "payer": a.From})
	case "/settle":
		f.settles++
		if reason == "" {
			reason = f.settleDecline
		}
		if reason != "" {
			_ = json.NewEncoder(w).Encode(map[string]any{"success": false, "errorReason": reason, "transaction": "",
				"network": req.PaymentRequirements.Network, "payer": a.From})
			return
		}
		// A repeated settle of a settled payload answers its transaction,
		// as an idempotent facilitator would. The reference one
		// (@x402/evm 2.27) answers nonce_already_used instead; the
		// service then asks the chain, which test/payments covers
		// (killed_between_settle_and_credit).
		tx := strings.TrimPrefix(prev, sig+"|")
		if !done {
			b := make([]byte, 32)
			_, _ = rand.Read(b)
			tx = "0x" + hex.EncodeToString(b)
			f.settled[key] = sig + "|" + tx
		}
		if f.dropSettle {
			http.Error(w, "bad gateway", http.StatusBadGateway)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"success": true, "transaction": tx,
			"network": req.PaymentRequirements.Network, "payer": a.From, "amount": a.Value})
	default:
		http.NotFound(w, r)
	}
}

// payEnv is a server with payments on, a scripted facilitator, and a
// signed-in wallet.
type payEnv struct {
	e      *apitest.Env
	fac    *facilitator
	wallet *testWallet
	token  string
	c      *apitest.Client
}

func startPayEnv(t *testing.T, eng apitest.Engine) *payEnv {
	t.Helper()
	return startPayEnvChain(t, eng, nil)
}

// startPayEnvChain is startPayEnv with chain as the payment service's node.
func startPayEnvChain(t *testing.T, eng apitest.Engine, chain payment.Chain) *payEnv {
	t.Helper()
	fac := newFacilitator(t)
	e := apitest.Start(t, apitest.Options{Store: eng.Open(t), AuthRatePerAddress: -1, AuthRatePerIP: -1, Chain: chain,
		Payments: &payment.Config{FacilitatorURL: fac.srv.URL, Network: "eip155:8453", Asset: testAsset,
			AssetName: "Test USD", AssetVersion: "2", PayTo: testPayTo}})
	w := newTestWallet(t, 9)
	v := signIn(t, e, w)
	return &payEnv{e: e, fac: fac, wallet: w, token: v.Token, c: e.Client(v.Token)}
}

// topupResponse is the 402 of a top-up.
type topupResponse struct {
	Quote           apiv1.Quote             `json:"quote"`
	PaymentRequired paywire.PaymentRequired `json:"payment_required"`
	MPP             struct {
		ID, Realm, Method, Intent, Expires string
		Request                            map[string]any
		EncodedRequest                     string `json:"encoded_request"`
	} `json:"mpp"`
	Code string `json:"code"`
}

func (p *payEnv) topup(t *testing.T, amount any) (topupResponse, *apitest.Response) {
	t.Helper()
	r := p.c.Post(t, "/api/v1/account/quotes/topup", map[string]any{"amount_usd": amount, "description": "credit"})
	var out topupResponse
	r.JSON(t, http.StatusPaymentRequired, &out)
	return out, r
}

// authorization signs an EIP-3009 authorization of value to payTo.
func (p *payEnv) authorization(t *testing.T, value string, nonce [32]byte, validBefore time.Time) (paywire.EVMAuthorization, string) {
	t.Helper()
	asset, _ := paywire.ParseAddress(testAsset)
	to, _ := paywire.ParseAddress(testPayTo)
	v, _ := new(big.Int).SetString(value, 10)
	a := paywire.Authorization{From: p.wallet.addr, To: to, Value: v, ValidAfter: big.NewInt(0),
		ValidBefore: big.NewInt(validBefore.Unix()), Nonce: nonce}
	d := paywire.Domain{Name: "Test USD", Version: "2", ChainID: 8453, VerifyingContract: asset}
	return paywire.EVMAuthorization{From: p.wallet.addr.Checksum(), To: testPayTo, Value: value, ValidAfter: "0",
		ValidBefore: strconv.FormatInt(validBefore.Unix(), 10), Nonce: "0x" + hex.EncodeToString(nonce[:])}, p.wallet.sign(d.TypedDataHash(&a))
}

// x402Header builds PAYMENT-SIGNATURE for a 402's requirements, as
// @x402/evm does.
func (p *payEnv) x402Header(t *testing.T, pr paywire.PaymentRequired) string {
	t.Helper()
	var nonce [32]byte
	_, _ = rand.Read(nonce[:])
	acc := pr.Accepts[0]
	a, sig := p.authorization(t, acc.Amount, nonce, p.e.Clock.Now().Add(time.Duration(acc.MaxTimeoutSeconds)*time.Second))
	return paywire.EncodeStd(paywire.PaymentPayload{X402Version: 2, Resource: &pr.Resource, Accepted: acc,
		Payload: paywire.ExactPayload{Signature: sig, Authorization: a}})
}

// mppCredential builds an MPP credential for a 402's challenge, as mppx
// does: nonce keccak256(id || realm), validBefore the challenge's expiry.
func (p *payEnv) mppCredential(t *testing.T, tr topupResponse) string {
	t.Helper()
	exp, err := time.Parse(time.RFC3339, tr.MPP.Expires)
	if err != nil {
		t.Fatal(err)
	}
	a, sig := p.authorization(t, tr.MPP.Request["amount"].(string), paywire.ChallengeHash(tr.MPP.ID, tr.MPP.Realm), exp)
	return paywire.EncodeURL(paywire.MPPCredential{
		Challenge: paywire.MPPChallenge{ID: tr.MPP.ID, Realm: tr.MPP.Realm, Method: tr.MPP.Method, Intent: tr.MPP.Intent,
			Request: tr.MPP.EncodedRequest, Expires: tr.MPP.Expires},
		Payload: paywire.MPPPayload{Type: "authorization", From: a.From, To: a.To, Value: a.Value, ValidAfter: a.ValidAfter,
			ValidBefore: a.ValidBefore, Nonce: a.Nonce, Signature: sig},
		Source: "did:pkh:eip155:8453:" + a.From,
	})
}

func payPath(quoteID string) string { return "/api/v1/account/quotes/" + quoteID + "/pay/x402" }

func (p *payEnv) payX402(t *testing.T, quoteID, header string) *apitest.Response {
	t.Helper()
	return p.c.Do(t, apitest.Request{Method: "POST", Path: payPath(quoteID), Header: http.Header{"PAYMENT-SIGNATURE": {header}}})
}

func (p *payEnv) payMPP(t *testing.T, path, cred string) *apitest.Response {
	t.Helper()
	return p.e.Client("").Do(t, apitest.Request{Method: "POST", Path: path, Header: http.Header{"Authorization": {"Payment " + cred}}})
}

func TestPaymentsNotConfigured(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t, apitest.Options{AuthRatePerAddress: -1, AuthRatePerIP: -1})
	v := signIn(t, e, newTestWallet(t, 10))
	c := e.Client(v.Token)
	env := c.Post(t, "/api/v1/account/quotes/topup", map[string]any{"amount_usd": 5}).Fail(t, http.StatusServiceUnavailable)
	if env.Code != "payments_not_configured" || env.Error != "x402 not configured" {
		t.Errorf("got %q %q, want payments_not_configured", env.Code, env.Error)
	}
	c.Post(t, payPath("qt_x"), nil).Fail(t, http.StatusServiceUnavailable)
}

func TestTopupQuote(t *testing.T) {
	forEngine(t, func(t *testing.T, eng apitest.Engine) {
		p := startPayEnv(t, eng)
		tr, r := p.topup(t, 12.5)
		q := tr.Quote
		if !strings.HasPrefix(q.ID, "qt_") || q.QuoteType != "x402_topup" || q.Status != "open" || q.AmountUSD != 12_500_000 ||
			!q.ExpiresAt.Equal(apitest.Epoch.Add(30*time.Minute)) {
			t.Errorf("quote: got %+v, want an open x402_topup of 12.5 expiring in 30 minutes", q)
		}
		// PAYMENT-REQUIRED: standard base64 of the x402 v2 PaymentRequired.
		raw, err := base64.StdEncoding.DecodeString(r.Header.Get("PAYMENT-REQUIRED"))
		if err != nil {
			t.Fatalf("PAYMENT-REQUIRED is not standard base64: %v", err)
		}
		var pr paywire.PaymentRequired
		if err := json.Unmarshal(raw, &pr); err != nil {
			t.Fatal(err)
		}
		acc := pr.Accepts[0]
		if pr.X402Version != 2 || pr.Resource.URL != p.e.URL+payPath(q.ID) || len(pr.Accepts) != 1 || acc.Scheme != "exact" ||
			acc.Network != "eip155:8453" || acc.Amount != "12500000" || acc.Asset != testAsset || acc.PayTo != testPayTo ||
			acc.Extra["name"] != "Test USD" || acc.Extra["version"] != "2" {
			t.Errorf("PAYMENT-REQUIRED: got %s", raw)
		}
		if tr.PaymentRequired.Accepts[0].Amount != "12500000" {
			t.Errorf("body payment_required: got %+v", tr.PaymentRequired)
		}
		// WWW-Authenticate: Payment, id = quote id.
		www := r.Header.Get("WWW-Authenticate")
		host := strings.TrimPrefix(p.e.URL, "http://")
		for _, part := range []string{`Payment id="` + q.ID + `"`, `realm="` + host + `"`, `method="evm"`, `intent="charge"`,
			`request="` + tr.MPP.EncodedRequest + `"`, `expires="2026-01-02T03:34:05Z"`} {
			if !strings.Contains(www, part) {
				t.Errorf("WWW-Authenticate %q lacks %s", www, part)
			}
		}
		req, _ := paywire.DecodeMPPRequest(tr.MPP.EncodedRequest)
		want := map[string]any{"amount": "12500000", "currency": testAsset, "recipient": testPayTo,
			"methodDetails": map[string]any{"chainId": 8453.0, "credentialTypes": []any{"authorization"}, "decimals": 6.0}}
		if b1, b2 := string(mustJSON(t, req)), string(mustJSON(t, want)); b1 != b2 {
			t.Errorf("MPP request: got %s, want %s", b1, b2)
		}
		if tr.MPP.ID != q.ID || tr.MPP.Method != "evm" || tr.MPP.Intent != "charge" || tr.MPP.Request["amount"] != "12500000" {
			t.Errorf("body mpp: got %+v", tr.MPP)
		}
		if bal := balanceOf(t, p.c); bal.OpenQuoteCount != 1 || bal.LedgerBalanceUSD != 0 {
			t.Errorf("balance after quote: got %+v, want one open quote, nothing credited", bal)
		}
		for name, amount := range map[string]any{"zero": 0, "below": 0.001, "above cap": 10000.01, "seven decimals": 1.0000001,
			"string": "5", "negative": -1, "missing": nil} {
			body := map[string]any{"amount_usd": amount}
			if amount == nil {
				body = map[string]any{}
			}
			env := p.c.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/account/quotes/topup", Body: body, Check: apitest.Unchecked}).
				Fail(t, http.StatusUnprocessableEntity)
			if env.Code != "invalid_amount" {
				t.Errorf("%s: got %q, want invalid_amount", name, env.Code)
			}
		}
		p.c.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/account/quotes/topup", Check: apitest.MustViolate,
			Body: map[string]any{"amount_usd": 1, "description": strings.Repeat("d", 501)}}).Fail(t, http.StatusUnprocessableEntity)
		p.e.Client("").Post(t, "/api/v1/account/quotes/topup", map[string]any{"amount_usd": 1}).Fail(t, http.StatusUnauthorized)
		if bal := balanceOf(t, p.c); bal.OpenQuoteCount != 1 {
			t.Errorf("refused top-ups made quotes: %+v", bal)
		}
	})
}

func TestPayX402(t *testing.T) {
	forEngine(t, func(t *testing.T, eng apitest.Engine) {
		p := startPayEnv(t, eng)
		tr, _ := p.topup(t, 2.25)
		qid := tr.Quote.ID

		// No credential: 402 with fresh challenges (stock clients retry this URL).
		r := p.c.Post(t, payPath(qid), nil)
		var again topupResponse
		r.JSON(t, http.StatusPaymentRequired, &again)
		if again.Quote.ID != qid || r.Header.Get("PAYMENT-REQUIRED") == "" || !strings.Contains(r.Header.Get("WWW-Authenticate"), qid) {
			t.Errorf("credential-less pay: got %s", r.Body)
		}

		h := p.x402Header(t, tr.PaymentRequired)
		r = p.payX402(t, qid, h)
		var paid apiv1.SettleResponse
		r.JSON(t, http.StatusCreated, &paid)
		if paid.Replay || paid.Quote.Status != "paid" || paid.Payment.Protocol != "x402" || paid.Balance.LedgerBalanceUSD != 2_250_000 ||
			paid.Payment.Payer != p.wallet.addr.Hex() || !strings.HasPrefix(paid.Payment.Transaction, "0x") {
			t.Errorf("settle: got %+v", paid)
		}
		raw, err := base64.StdEncoding.DecodeString(r.Header.Get("PAYMENT-RESPONSE"))
		var sr paywire.SettleResponse
		if err != nil || json.Unmarshal(raw, &sr) != nil || !sr.Success || sr.Transaction != paid.Payment.Transaction || sr.Network != "eip155:8453" {
			t.Errorf("PAYMENT-RESPONSE: got %s (%v)", raw, err)
		}
		led := ledgerOf(t, p.c, "?entry_type=x402_topup")
		if led.Total != 1 || led.Entries[0].AmountUSD != 2_250_000 || led.Entries[0].Reference != qid {
			t.Errorf("ledger: got %+v, want one x402_topup of 2.25 for the quote", led)
		}
		// Replay: 200, no facilitator call, no second credit.
		_, settlesBefore := p.fac.counts()
		r = p.payX402(t, qid, h)
		var rep apiv1.SettleResponse
		r.JSON(t, http.StatusOK, &rep)
		if _, settles := p.fac.counts(); !rep.Replay || settles != settlesBefore || rep.Balance.LedgerBalanceUSD != 2_250_000 ||
			r.Header.Get("PAYMENT-RESPONSE") == "" {
			t.Errorf("replay: got replay=%v, %d settles (want %d), balance %v", rep.Replay, settles, settlesBefore, rep.Balance.LedgerBalanceUSD)
		}
		// Another credential on the paid quote: refused, nothing credited.
		p.payX402(t, qid, p.x402Header(t, tr.PaymentRequired)).Fail(t, http.StatusConflict)
		if bal := balanceAgrees(t, p.c); bal.LedgerBalanceUSD != 2_250_000 {
			t.Errorf("balance: got %+v, want 2.25", bal)
		}
		var qr apiv1.QuoteResponse
		p.c.Get(t, "/api/v1/account/quotes/"+qid).JSON(t, http.StatusOK, &qr)
		if qr.Quote.Status != "paid" || qr.Quote.PaidAt == nil {
			t.Errorf("quote after payment: got %+v, want paid", qr.Quote)
		}
		// x402 needs the bearer of the quote's account: none is 401,
		// another account's is 404.
		p.e.Client("").Do(t, apitest.Request{Method: "POST", Path: payPath(qid), Header: http.Header{"PAYMENT-SIGNATURE": {h}}}).
			Fail(t, http.StatusUnauthorized)
		other := signIn(t, p.e, newTestWallet(t, 11))
		p.e.Client(other.Token).Do(t, apitest.Request{Method: "POST", Path: payPath(qid), Header: http.Header{"PAYMENT-SIGNATURE": {h}}}).
			Fail(t, http.StatusNotFound)
		p.payX402(t, "qt_unknown", h).Fail(t, http.StatusNotFound)

		// A stock x402 client retries /topup itself: the payload's
		// resource URL names the quote it pays.
		tr2, _ := p.topup(t, 1)
		var viaTopup apiv1.SettleResponse
		p.c.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/account/quotes/topup", Body: map[string]any{"amount_usd": 1},
			Header: http.Header{"PAYMENT-SIGNATURE": {p.x402Header(t, tr2.PaymentRequired)}}}).JSON(t, http.StatusCreated, &viaTopup)
		if viaTopup.Quote.ID != tr2.Quote.ID || viaTopup.Balance.LedgerBalanceUSD != 3_250_000 {
			t.Errorf("x402 retried on /topup: got quote %s balance %v, want %s and 3.25", viaTopup.Quote.ID, viaTopup.Balance.LedgerBalanceUSD, tr2.Quote.ID)
		}
		if qs := quotesOf(t, p.c, ""); qs.Total != 2 {
			t.Errorf("got %d quotes, want 2: the retried /topup made none", qs.Total)
		}
	})
}

func TestPayMPP(t *testing.T) {
	forEngine(t, func(t *testing.T, eng apitest.Engine) {
		p := startPayEnv(t, eng)
		tr, _ := p.topup(t, 0.75)
		cred := p.mppCredential(t, tr)
		// Posted to /topup with no bearer: settles the quote it names.
		r := p.payMPP(t, "/api/v1/account/quotes/topup", cred)
		var paid apiv1.SettleResponse
		r.JSON(t, http.StatusCreated, &paid)
		if paid.Replay || paid.Quote.ID != tr.Quote.ID || paid.Payment.Protocol != "mpp" || paid.Balance.LedgerBalanceUSD != 750_000 {
			t.Errorf("settle: got %+v", paid)
		}
		raw, err := base64.RawURLEncoding.DecodeString(r.Header.Get("Payment-Receipt"))
		var rc paywire.MPPReceipt
		if err != nil || json.Unmarshal(raw, &rc) != nil || rc.Status != "success" || rc.Method != "evm" || rc.ChallengeID != tr.Quote.ID ||
			rc.Reference != paid.Payment.Transaction || rc.ChainID != 8453 {
			t.Errorf("Payment-Receipt: got %s (%v)", raw, err)
		}
		if led := ledgerOf(t, p.c, "?entry_type=mpp_topup"); led.Total != 1 || led.Entries[0].AmountUSD != 750_000 {
			t.Errorf("ledger: got %+v, want one mpp_topup of 0.75", led)
		}
		// Replay on the pay path: 200 with the settlement only. Without
		// the account's bearer a copy of the credential learns nothing of
		// the account now (issue 28): no balance, no account.
		var rep apiv1.SettleResponse
		p.payMPP(t, payPath(tr.Quote.ID), cred).JSON(t, http.StatusOK, &rep)
		if !rep.Replay || rep.Quote.ID != tr.Quote.ID || rep.Payment.Transaction != paid.Payment.Transaction ||
			rep.Balance != nil || rep.Account != nil {
			t.Errorf("replay without a bearer: got %+v, want the settlement only", rep)
		}
		// A credential for another quote on this URL: 422.
		tr2, _ := p.topup(t, 1)
		env := p.payMPP(t, payPath(tr2.Quote.ID), cred).Fail(t, http.StatusUnprocessableEntity)
		if env.Code != "challenge_mismatch" {
			t.Errorf("other quote's credential: got %q, want challenge_mismatch", env.Code)
		}
		// Another type of credential: 422.
		var c paywire.MPPCredential
		b, _ := base64.RawURLEncoding.DecodeString(p.mppCredential(t, tr2))
		_ = json.Unmarshal(b, &c)
		c.Payload.Type = "transaction"
		if env := p.payMPP(t, payPath(tr2.Quote.ID), paywire.EncodeURL(c)).Fail(t, http.StatusUnprocessableEntity); env.Code != "unsupported_credential_type" {
			t.Errorf("type transaction: got %q", env.Code)
		}
		// A nonce not bound to the quote: 422.
		c.Payload.Type = "authorization"
		c.Payload.Nonce = "0x" + strings.Repeat("11", 32)
		if env := p.payMPP(t, payPath(tr2.Quote.ID), paywire.EncodeURL(c)).Fail(t, http.StatusUnprocessableEntity); env.Code != "nonce_mismatch" {
			t.Errorf("unbound nonce: got %q", env.Code)
		}
		// Second quote pays normally afterwards.
		p.payMPP(t, payPath(tr2.Quote.ID), p.mppCredential(t, tr2)).Want(t, http.StatusCreated)
		if bal := balanceAgrees(t, p.c); bal.LedgerBalanceUSD != 1_750_000 {
			t.Errorf("balance: got %+v, want 1.75", bal)
		}
	})
}

// Every bad credential gets its status and changes nothing: no ledger
// entry, the quote still payable.
func TestPayBadInput(t *testing.T) {
	forEngine(t, func(t *testing.T, eng apitest.Engine) {
		p := startPayEnv(t, eng)
		tr, _ := p.topup(t, 3)
		qid := tr.Quote.ID
		good := p.x402Header(t, tr.PaymentRequired)
		var payload paywire.PaymentPayload
		b, _ := base64.StdEncoding.DecodeString(good)
		_ = json.Unmarshal(b, &payload)
		mutate := func(fn func(pp *paywire.PaymentPayload)) string {
			c := payload
			c.Accepted.Extra = payload.Accepted.Extra
			fn(&c)
			return paywire.EncodeStd(c)
		}
		// A high-s twin of the good signature.
		sig, _ := hex.DecodeString(payload.Payload.Signature[2:])
		n, _ := new(big.Int).SetString("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141", 16)
		s := new(big.Int).Sub(n, new(big.Int).SetBytes(sig[32:64]))
		s.FillBytes(sig[32:64])
		sig[64] ^= 1
		highS := "0x" + hex.EncodeToString(sig)
		var usedNonce [32]byte
		for name, tc := range map[string]struct {
			header string
			code   string
		}{
			"malformed base64": {"%%%not-base64", "invalid_payment_payload"},
			"url-safe base64":  {strings.NewReplacer("+", "-", "/", "_").Replace(good) + "-_", "invalid_payment_payload"},
			"truncated json":   {base64.StdEncoding.EncodeToString(b[:len(b)/2]), "invalid_payment_payload"},
			"oversize":         {strings.Repeat("A", paywire.MaxHeaderBytes+8), "invalid_payment_payload"},
			"wrong chain":      {mutate(func(pp *paywire.PaymentPayload) { pp.Accepted.Network = "eip155:1" }), "network_mismatch"},
			"wrong payee":      {mutate(func(pp *paywire.PaymentPayload) { pp.Payload.Authorization.To = testAsset }), "payee_mismatch"},
			"wrong asset":      {mutate(func(pp *paywire.PaymentPayload) { pp.Accepted.Asset = testPayTo }), "asset_mismatch"},
			"tampered amount":  {mutate(func(pp *paywire.PaymentPayload) { pp.Payload.Authorization.Value = "300000000" }), "amount_mismatch"},
			"accepted amount":  {mutate(func(pp *paywire.PaymentPayload) { pp.Accepted.Amount = "1" }), "amount_mismatch"},
			"expired auth":     {mutate(func(pp *paywire.PaymentPayload) { pp.Payload.Authorization.ValidBefore = "1000" }), "authorization_expired"},
			"not yet valid":    {mutate(func(pp *paywire.PaymentPayload) { pp.Payload.Authorization.ValidAfter = "99999999999" }), "authorization_not_yet_valid"},
			"high-s signature": {mutate(func(pp *paywire.PaymentPayload) { pp.Payload.Signature = highS }), "invalid_signature"},
			"other signer":     {mutate(func(pp *paywire.PaymentPayload) { pp.Payload.Authorization.From = testPayTo }), "invalid_signature"},
			"bad nonce":        {mutate(func(pp *paywire.PaymentPayload) { pp.Payload.Authorization.Nonce = "0x12" }), "invalid_payment_payload"},
			"changed nonce": {mutate(func(pp *paywire.PaymentPayload) {
				pp.Payload.Authorization.Nonce = "0x" + hex.EncodeToString(usedNonce[:])
			}), "invalid_signature"},
			"x402 version one": {mutate(func(pp *paywire.PaymentPayload) { pp.X402Version = 1 }), "invalid_payment_payload"},
			"malformed mpp":    {"", "malformed_mpp_credential"},
			"mpp truncated":    {"", "malformed_mpp_credential"},
		} {
			t.Run(name, func(t *testing.T) {
				var r *apitest.Response
				switch name {
				case "malformed mpp":
					r = p.payMPP(t, payPath(qid), "!!!")
				case "mpp truncated":
					r = p.payMPP(t, payPath(qid), base64.RawURLEncoding.EncodeToString([]byte(`{"challenge":{"id":"`+qid)))
				default:
					r = p.payX402(t, qid, tc.header)
				}
				env := r.Fail(t, http.StatusUnprocessableEntity)
				if env.Code != tc.code {
					t.Errorf("got code %q (%s), want %s", env.Code, env.Error, tc.code)
				}
			})
		}
		if verifys, settles := p.fac.counts(); verifys != 0 || settles != 0 {
			t.Errorf("refused credentials reached the facilitator: %d verify, %d settle", verifys, settles)
		}
		if led := ledgerOf(t, p.c, ""); led.Total != 0 {
			t.Errorf("refusals wrote %d ledger entries", led.Total)
		}
		// The quote is still payable.
		p.payX402(t, qid, good).Want(t, http.StatusCreated)
		// A reused authorization (payer, nonce) on another quote of the
		// same amount: refused, not credited.
		tr2, _ := p.topup(t, 3)
		reuse := mutate(func(pp *paywire.PaymentPayload) { pp.Resource = &tr2.PaymentRequired.Resource })
		env := p.payX402(t, tr2.Quote.ID, reuse).Fail(t, http.StatusUnprocessableEntity)
		if env.Code != "nonce_already_used" {
			t.Errorf("reused nonce: got %q (%s), want nonce_already_used", env.Code, env.Error)
		}
		if bal := balanceAgrees(t, p.c); bal.LedgerBalanceUSD != 3_000_000 {
			t.Errorf("balance: got %+v, want 3", bal)
		}
	})
}

func TestPayExpiredQuote(t *testing.T) {
	forEngine(t, func(t *testing.T, eng apitest.Engine) {
		p := startPayEnv(t, eng)
		tr, _ := p.topup(t, 1)
		h := p.x402Header(t, tr.PaymentRequired)
		cred := p.mppCredential(t, tr)
		p.e.Clock.Advance(31 * time.Minute)
		if env := p.payX402(t, tr.Quote.ID, h).Fail(t, http.StatusGone); env.Code != "quote_expired" {
			t.Errorf("x402: got %q, want quote_expired", env.Code)
		}
		p.payMPP(t, payPath(tr.Quote.ID), cred).Fail(t, http.StatusGone)
		p.c.Post(t, payPath(tr.Quote.ID), nil).Fail(t, http.StatusGone)
		var qr apiv1.QuoteResponse
		p.c.Get(t, "/api/v1/account/quotes/"+tr.Quote.ID).JSON(t, http.StatusOK, &qr)
		if qr.Quote.Status != "expired" {
			t.Errorf("quote: got %s, want expired", qr.Quote.Status)
		}
		if led := ledgerOf(t, p.c, ""); led.Total != 0 {
			t.Errorf("got %d ledger entries, want none", led.Total)
		}
	})
}

func TestPayFacilitatorOutageAndDecline(t *testing.T) {
	forEngine(t, func(t *testing.T, eng apitest.Engine) {
		p := startPayEnv(t, eng)
		tr, _ := p.topup(t, 4)
		h := p.x402Header(t, tr.PaymentRequired)
		p.fac.set(func(f *facilitator) { f.down = true })
		if env := p.payX402(t, tr.Quote.ID, h).Fail(t, http.StatusServiceUnavailable); env.Code != "facilitator_unavailable" ||
			!strings.Contains(env.RecommendedAction, "same credential") {
			t.Errorf("outage: got %q %q", env.Code, env.RecommendedAction)
		}
		if led := ledgerOf(t, p.c, ""); led.Total != 0 {
			t.Errorf("outage wrote %d ledger entries", led.Total)
		}
		p.fac.set(func(f *facilitator) { f.down = false })
		var paid apiv1.SettleResponse
		p.payX402(t, tr.Quote.ID, h).JSON(t, http.StatusCreated, &paid)
		if paid.Balance.LedgerBalanceUSD != 4_000_000 {
			t.Errorf("after retry: got %+v", paid.Balance)
		}

		// Declined by the facilitator: 402 with PAYMENT-RESPONSE and fresh
		// challenges; the quote stays payable.
		tr2, _ := p.topup(t, 1)
		p.fac.set(func(f *facilitator) { f.decline = "invalid_exact_evm_insufficient_balance" })
		r := p.payX402(t, tr2.Quote.ID, p.x402Header(t, tr2.PaymentRequired))
		env := r.Fail(t, http.StatusPaymentRequired)
		raw, _ := base64.StdEncoding.DecodeString(r.Header.Get("PAYMENT-RESPONSE"))
		if env.Code != "payment_declined" || !strings.Contains(string(raw), "insufficient_balance") || r.Header.Get("PAYMENT-REQUIRED") == "" {
			t.Errorf("decline: got %q, PAYMENT-RESPONSE %s", env.Code, raw)
		}
		p.fac.set(func(f *facilitator) { f.decline = "" })
		p.payX402(t, tr2.Quote.ID, p.x402Header(t, tr2.PaymentRequired)).Want(t, http.StatusCreated)
		if bal := balanceAgrees(t, p.c); bal.LedgerBalanceUSD != 5_000_000 {
			t.Errorf("balance: got %+v, want 5", bal)
		}
	})
}

// Identical requests racing credit once.
func TestPayConcurrentIdenticalRequests(t *testing.T) {
	forEngine(t, func(t *testing.T, eng apitest.Engine) {
		p := startPayEnv(t, eng)
		tr, _ := p.topup(t, 6)
		h := p.x402Header(t, tr.PaymentRequired)
		var wg sync.WaitGroup
		statuses := make([]int, 6)
		for i := range statuses {
			wg.Go(func() {
				statuses[i] = p.c.Do(t, apitest.Request{Method: "POST", Path: payPath(tr.Quote.ID),
					Header: http.Header{"PAYMENT-SIGNATURE": {h}}, Check: apitest.Unchecked}).Status
			})
		}
		wg.Wait()
		created := 0
		for _, s := range statuses {
			if s == http.StatusCreated {
				created++
			}
		}
		if created != 1 {
			t.Errorf("statuses %v: want exactly one 201", statuses)
		}
		if led := ledgerOf(t, p.c, ""); led.Total != 1 {
			t.Errorf("got %d ledger entries, want 1", led.Total)
		}
		if bal := balanceAgrees(t, p.c); bal.LedgerBalanceUSD != 6_000_000 {
			t.Errorf("balance: got %+v, want 6", bal)
		}
	})
}

// Settled by the facilitator but not credited (the answer lost, or the
// server killed in between): the recorded intent is finished on start, once,
// and the payer's retry answers a replay.
func TestPayReconcileAfterLostSettle(t *testing.T) {
	forEngine(t, func(t *testing.T, eng apitest.Engine) {
		p := startPayEnv(t, eng)
		tr, _ := p.topup(t, 7)
		cred := p.mppCredential(t, tr)
		p.fac.set(func(f *facilitator) { f.dropSettle = true })
		p.payMPP(t, payPath(tr.Quote.ID), cred).Fail(t, http.StatusServiceUnavailable)
		if bal := balanceAgrees(t, p.c); bal.LedgerBalanceUSD != 0 {
			t.Fatalf("credited before the settle answered: %+v", bal)
		}
		// Another credential cannot take the quote meanwhile.
		p.payX402(t, tr.Quote.ID, p.x402Header(t, tr.PaymentRequired)).Fail(t, http.StatusConflict)
		p.fac.set(func(f *facilitator) { f.dropSettle = false })
		// What the server runs at start.
		for range 2 {
			if _, _, err := p.e.Payments.Reconcile(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		if led := ledgerOf(t, p.c, "?entry_type=mpp_topup"); led.Total != 1 || led.Entries[0].AmountUSD != 7_000_000 {
			t.Errorf("ledger after reconcile: got %+v, want one mpp_topup of 7", led)
		}
		var rep apiv1.SettleResponse
		p.payMPP(t, payPath(tr.Quote.ID), cred).JSON(t, http.StatusOK, &rep)
		if !rep.Replay || rep.Quote.Status != "paid" || rep.Balance != nil {
			t.Errorf("retry after reconcile: got %+v, want the settlement only (no bearer)", rep)
		}
		if bal := balanceAgrees(t, p.c); bal.LedgerBalanceUSD != 7_000_000 {
			t.Errorf("balance after reconcile: got %+v, want 7", bal)
		}
		// Without a restart, the payer's own retry finishes it too.
		tr2, _ := p.topup(t, 1)
		cred2 := p.mppCredential(t, tr2)
		p.fac.set(func(f *facilitator) { f.dropSettle = true })
		p.payMPP(t, payPath(tr2.Quote.ID), cred2).Fail(t, http.StatusServiceUnavailable)
		p.fac.set(func(f *facilitator) { f.dropSettle = false })
		p.payMPP(t, payPath(tr2.Quote.ID), cred2).Want(t, http.StatusCreated)
		if bal := balanceAgrees(t, p.c); bal.LedgerBalanceUSD != 8_000_000 {
			t.Errorf("balance: got %+v, want 8", bal)
		}
	})
}

// A job submit's shortfall quote carries both challenges; paid, the same
// request (same Idempotency-Key) is admitted.
func TestShortfallPaidThenResent(t *testing.T) {
	forEngine(t, func(t *testing.T, eng apitest.Engine) {
		p := startPayEnv(t, eng)
		_, c := fundedAccount(t, p.e, "poor", "thin", 10_000) // 0.01 USD; the job holds 0.03375
		body := []byte(`{"project": "thin", "runner_command": ["/r"]}`)
		key := http.Header{"Idempotency-Key": {"order-8"}}
		send := func() *apitest.Response {
			return c.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/jobs", Body: body, Header: key})
		}
		r := send()
		env := r.Fail(t, http.StatusPaymentRequired)
		var tr topupResponse
		if err := json.Unmarshal(r.Body, &tr); err != nil {
			t.Fatal(err)
		}
		quote, _ := env.Details["quote"].(map[string]any)
		if env.Code != "insufficient_balance" || quote["quote_type"] != "job_shortfall" || tr.MPP.ID != quote["id"] ||
			tr.PaymentRequired.Accepts[0].Amount != "23750" || r.Header.Get("PAYMENT-REQUIRED") == "" ||
			!strings.Contains(r.Header.Get("WWW-Authenticate"), `id="`+tr.MPP.ID+`"`) {
			t.Fatalf("shortfall 402: got %s", r.Body)
		}
		tr.Quote.ID = tr.MPP.ID
		var paid apiv1.SettleResponse
		p.payMPP(t, payPath(tr.MPP.ID), p.mppCredential(t, tr)).JSON(t, http.StatusCreated, &paid)
		if paid.Quote.QuoteType != "job_shortfall" || paid.Quote.Status != "paid" || paid.Balance.LedgerBalanceUSD != 33_750 {
			t.Errorf("paid shortfall: got %+v", paid)
		}
		var job apiv1.Job
		send().JSON(t, http.StatusCreated, &job)
		var again apiv1.Job
		r = send()
		r.JSON(t, http.StatusCreated, &again)
		if again.ID != job.ID || r.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("resend: got %s (replayed %q), want %s", again.ID, r.Header.Get("Idempotent-Replayed"), job.ID)
		}
		if bal := balanceAgrees(t, c); bal.HeldUSD != defaultRateMicros || bal.AvailableUSD != 0 {
			t.Errorf("balance: got %+v, want the job's hold of all of it", bal)
		}
	})
}

// countingChain is a stand-in for the chain node (no chain runs in these
// tests; test/payments runs a real one): it counts the lookups and
// answers that every authorization it is asked about was paid.
type countingChain struct {
	mu    sync.Mutex
	calls int
}

func (c *countingChain) Paid(context.Context, paywire.Address, paywire.Address, paywire.Address, *big.Int, [32]byte) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	return "0x" + strings.Repeat("ab", 32), nil
}

func (c *countingChain) lookups() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// The chain is asked only about a settlement this service sent before: a
// fresh credential the facilitator calls spent is declined without a
// lookup (a stranger cannot make the service search the chain's history
// for an authorization of their choosing), while the payer's retry of a
// settle whose answer was lost is found there and credited once.
func TestPayChainLookupOnlyForSentSettlements(t *testing.T) {
	forEngine(t, func(t *testing.T, eng apitest.Engine) {
		chain := &countingChain{}
		p := startPayEnvChain(t, eng, chain)
		tr, _ := p.topup(t, 2)
		p.fac.set(func(f *facilitator) { f.settleDecline = "invalid_exact_evm_nonce_already_used" })
		if env := p.payMPP(t, payPath(tr.Quote.ID), p.mppCredential(t, tr)).Fail(t, http.StatusPaymentRequired); env.Code != "payment_declined" {
			t.Errorf("fresh spent credential: got %q, want payment_declined", env.Code)
		}
		if n := chain.lookups(); n != 0 {
			t.Fatalf("a fresh credential the facilitator calls spent made %d chain lookups, want 0", n)
		}
		if bal := balanceAgrees(t, p.c); bal.LedgerBalanceUSD != 0 {
			t.Fatalf("credited a declined payment: %+v", bal)
		}

		tr2, _ := p.topup(t, 3)
		cred := p.mppCredential(t, tr2)
		p.fac.set(func(f *facilitator) { f.settleDecline, f.dropSettle = "", true })
		p.payMPP(t, payPath(tr2.Quote.ID), cred).Fail(t, http.StatusServiceUnavailable)
		// The settle went through but its answer was lost; the facilitator
		// now calls the nonce spent, as the reference one does.
		p.fac.set(func(f *facilitator) { f.settleDecline, f.dropSettle = "invalid_exact_evm_nonce_already_used", false })
		p.payMPP(t, payPath(tr2.Quote.ID), cred).Want(t, http.StatusCreated)
		if n := chain.lookups(); n != 1 {
			t.Errorf("the retry of a sent settlement made %d chain lookups, want 1", n)
		}
		if bal := balanceAgrees(t, p.c); bal.LedgerBalanceUSD != 3_000_000 {
			t.Errorf("balance: got %+v, want 3", bal)
		}
	})
}
