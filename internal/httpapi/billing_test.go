package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/store"
)

// billingSuite is every test of the billing side of the API: the account's
// ledger, holds and quotes, job billing, idempotent submission, presets
// and pricing. TestBillingAPI runs it against each store engine, each case
// on a fresh server whose project "alpha" has a published revision and
// whose account "acme" holds 100 USD.
func billingSuite() []apiCase {
	return []apiCase{
		{"submit_shows_billing", testSubmitShowsBilling},
		{"shortfall_then_resend", testShortfallThenResend},
		{"idempotency_key", testIdempotencyKey},
		{"batch_idempotency", testBatchIdempotency},
		{"batch_shortfall_then_resend", testBatchShortfallThenResend},
		{"concurrent_resends", testConcurrentResends},
		{"account_lists", testAccountLists},
		{"account_list_bad_input", testAccountListBadInput},
		{"quotes", testQuotes},
		{"hold_capture", testHoldCapture},
		{"hold_captured_and_released", testHoldCapturedAndReleased},
		{"presets_and_pricing", testPresetsAndPricing},
		{"reprice_within_hold", testRepriceWithinHold},
		{"reprice_grows_hold", testRepriceGrowsHold},
		{"reprice_shortfall", testRepriceShortfall},
		{"reprice_running_attempt", testRepriceRunningAttempt},
		{"reprice_cancel_running", testRepriceCancelRunning},
	}
}

// The default rates price the default requirements (1 cpu, 2048 MB) at
// 0.025 USD per hour, billed 0.03375 (35% markup): 33750 micro-USD per
// hour, so an attempt of the default 3600 s timeout holds 0.03375 USD and
// one of 600 s 0.005625.
const (
	defaultRateMicros = 33750
	grantMicros       = 100_000_000
)

func TestBillingAPI(t *testing.T) {
	runSuite(t, billingSuite(), funded(grantMicros))
}

func grant(tb testing.TB, e *apitest.Env, accountID string, micros int64) {
	tb.Helper()
	e.Grant(tb, accountID, micros)
}

// jobBilling is the billing part of a job's summary.
type jobBilling struct {
	Estimate  billing.Estimate  `json:"billing_estimate"`
	Admission billing.Admission `json:"billing_admission"`
	Hold      *apiv1.JobHold    `json:"billing_hold"`
	Cost      apiv1.JobCost     `json:"cost"`
}

func billingOf(t *testing.T, summary json.RawMessage) jobBilling {
	t.Helper()
	var b jobBilling
	if err := json.Unmarshal(summary, &b); err != nil {
		t.Fatalf("summary %s: %v", summary, err)
	}
	return b
}

func balanceOf(t *testing.T, c *apitest.Client) apiv1.Balance {
	t.Helper()
	var b apiv1.BalanceResponse
	c.Get(t, "/api/v1/account/balance").JSON(t, http.StatusOK, &b)
	return b.Balance
}

func ledgerOf(t *testing.T, c *apitest.Client, query string) apiv1.LedgerPage {
	t.Helper()
	var p apiv1.LedgerPage
	c.Get(t, "/api/v1/account/ledger"+query).JSON(t, http.StatusOK, &p)
	if p.Count != len(p.Entries) {
		t.Errorf("ledger%s: got count %d for %d entries", query, p.Count, len(p.Entries))
	}
	return p
}

func holdsOf(t *testing.T, c *apitest.Client, query string) apiv1.HoldPage {
	t.Helper()
	var p apiv1.HoldPage
	c.Get(t, "/api/v1/account/holds"+query).JSON(t, http.StatusOK, &p)
	if p.Count != len(p.Holds) {
		t.Errorf("holds%s: got count %d for %d holds", query, p.Count, len(p.Holds))
	}
	return p
}

func quotesOf(t *testing.T, c *apitest.Client, query string) apiv1.QuotePage {
	t.Helper()
	var p apiv1.QuotePage
	c.Get(t, "/api/v1/account/quotes"+query).JSON(t, http.StatusOK, &p)
	if p.Count != len(p.Quotes) {
		t.Errorf("quotes%s: got count %d for %d quotes", query, p.Count, len(p.Quotes))
	}
	return p
}

// money is everything the account can read about its money; refused
// requests must leave it as it was.
func money(t *testing.T, c *apitest.Client) string {
	t.Helper()
	var b strings.Builder
	for _, path := range []string{"/api/v1/account/balance", "/api/v1/account/ledger?limit=200",
		"/api/v1/account/holds?limit=200", "/api/v1/account/quotes?limit=200", "/api/v1/jobs?limit=200"} {
		b.Write(c.Get(t, path).Want(t, http.StatusOK).Body)
	}
	return b.String()
}

// balanceAgrees checks the balance's five fields against the ledger, the
// holds and the quotes.
func balanceAgrees(t *testing.T, c *apitest.Client) apiv1.Balance {
	t.Helper()
	bal := balanceOf(t, c)
	var ledger, held apiv1.USD
	var active, open int64
	for _, e := range ledgerOf(t, c, "?limit=200").Entries {
		ledger += e.AmountUSD
	}
	for _, h := range holdsOf(t, c, "?limit=200").Holds {
		if h.Status == "active" {
			held += h.AmountUSD
			active++
		}
	}
	open = int64(quotesOf(t, c, "?status=open&limit=200").Total)
	want := apiv1.Balance{LedgerBalanceUSD: ledger, HeldUSD: held, AvailableUSD: ledger - held, ActiveHoldCount: active,
		OpenQuoteCount: open}
	if bal != want {
		t.Errorf("balance %+v does not agree with the ledger, holds and quotes: %+v", bal, want)
	}
	return bal
}

func testSubmitShowsBilling(t *testing.T, f *fixture) {
	c := f.member
	r := c.Post(t, "/api/v1/jobs", map[string]any{"project": fixtureProject, "runner_command": []string{"/r"},
		"fan_out":     map[string]any{"items": []any{map[string]any{}, map[string]any{}, map[string]any{}}},
		"max_retries": 2, "timeout_s": 600, "reliability_mode": "strict_complete"})
	var j apiv1.Job
	r.JSON(t, http.StatusCreated, &j)
	if r.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("a submission without a key: got Idempotent-Replayed %q", r.Header.Get("Idempotent-Replayed"))
	}
	b := billingOf(t, j.Summary)
	// 3 tasks x 3 attempts x 600 s at 33750 micro-USD per hour.
	est := b.Estimate
	if est.TaskCount != 3 || est.AttemptsPerTask != 3 || est.RuntimeCapS != 600 || est.BilledSecondsPerAttempt != 600 ||
		est.MarketRateUSDPerHour != 25_000 || est.MarkupPercent != 35 || est.RateUSDPerHour != defaultRateMicros ||
		est.PerAttemptUSD != 5625 || est.TotalUSD != 9*5625 || !est.Authoritative {
		t.Errorf("billing_estimate: got %+v, want 9 attempts of 600 s at 0.03375 USD per hour = 0.050625", est)
	}
	adm := b.Admission
	if adm.ResourceClass != "cpu-1c-2048mb" || adm.RuntimeClass != "standard" || adm.ReliabilityMode != "strict_complete" ||
		adm.EstimatedHoldUSD != 9*5625 || adm.AvailableUSD != grantMicros || !adm.BalanceSufficient {
		t.Errorf("billing_admission: got %+v", adm)
	}
	if b.Hold == nil || !strings.HasPrefix(b.Hold.ID, "hld_") || b.Hold.Status != "active" ||
		b.Hold.AmountUSD != 9*5625 || b.Hold.CapturedUSD != 0 || b.Hold.SettledAt != nil {
		t.Errorf("billing_hold: got %+v, want an active hold of 0.050625", b.Hold)
	}
	if b.Cost != (apiv1.JobCost{}) {
		t.Errorf("cost before any attempt: got %+v, want zeros", b.Cost)
	}

	// runtime_hint_s below the timeout caps the estimate; the minimum is
	// 60 s.
	hinted := submitJob(t, c, map[string]any{"runtime_hint_s": 10, "timeout_s": 600})
	if e := billingOf(t, hinted.Summary).Estimate; e.RuntimeCapS != 10 || e.BilledSecondsPerAttempt != 60 || e.TotalUSD != 563 {
		t.Errorf("hinted: got %+v, want a 10 s cap billed 60 s: 0.000563", e)
	}

	// The hold is listed, the balance holds it, and the views agree.
	holds := holdsOf(t, c, "?job_id="+j.ID)
	if holds.Total != 1 || holds.Holds[0].ID != b.Hold.ID || holds.Holds[0].AmountUSD != 9*5625 ||
		holds.Holds[0].ReleasedUSD != 0 || holds.Holds[0].JobID != j.ID {
		t.Errorf("holds of %s: got %+v", j.ID, holds)
	}
	bal := balanceAgrees(t, c)
	if bal.HeldUSD != 9*5625+563 || bal.AvailableUSD != grantMicros-9*5625-563 || bal.ActiveHoldCount != 2 {
		t.Errorf("balance: got %+v", bal)
	}
	var res apiv1.JobResult
	c.Get(t, "/api/v1/results/"+j.ID).JSON(t, http.StatusOK, &res)
	if !jsonEqual(t, res.Summary, getJob(t, c, j.ID).Summary) {
		t.Errorf("result summary %s differs from the job's %s", res.Summary, getJob(t, c, j.ID).Summary)
	}
	// List entries stay light: no summary, no billing.
	var raw struct {
		Jobs []map[string]any `json:"jobs"`
	}
	c.Get(t, "/api/v1/jobs").JSON(t, http.StatusOK, &raw)
	for _, e := range raw.Jobs {
		if _, ok := e["summary"]; ok {
			t.Errorf("job list entry has a summary: %v", e)
		}
	}
}

// A submission the balance cannot hold is a 402 with a job_shortfall quote
// for the difference and nothing else stored; after funding, the same
// request with the same Idempotency-Key is admitted once.
func testShortfallThenResend(t *testing.T, f *fixture) {
	poor, c := fundedAccount(t, f.e, "poor", "thin", 10_000) // 0.01 USD; the job holds 0.03375
	body := []byte(`{"project": "thin", "runner_command": ["/r"]}`)
	key := http.Header{"Idempotency-Key": {"order-7"}}
	send := func() *apitest.Response {
		return c.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/jobs", Body: body, Header: key})
	}
	before := money(t, c)
	env := send().Fail(t, http.StatusPaymentRequired)
	quote, _ := env.Details["quote"].(map[string]any)
	if env.Code != "insufficient_balance" || quote["quote_type"] != "job_shortfall" || quote["status"] != "open" ||
		env.Details["shortfall_usd"] != 0.02375 || quote["amount_usd"] != 0.02375 || env.Details["required_usd"] != 0.03375 ||
		!strings.Contains(env.RecommendedAction, "retry the same request") {
		t.Errorf("402: got %s %q %v, want insufficient_balance with a job_shortfall quote of 0.02375", env.Code,
			env.RecommendedAction, env.Details)
	}
	// Nothing but the quote was stored: no job, hold, ledger entry or key.
	after := money(t, c)
	if bal := balanceOf(t, c); bal.LedgerBalanceUSD != 10_000 || bal.HeldUSD != 0 || bal.OpenQuoteCount != 1 {
		t.Errorf("after the 402: got balance %+v, want 0.01, nothing held, one open quote", bal)
	}
	if holdsOf(t, c, "").Total != 0 || ledgerOf(t, c, "").Total != 1 {
		t.Errorf("the 402 stored a hold or a ledger entry:\nbefore %s\nafter  %s", before, after)
	}
	qs := quotesOf(t, c, "?quote_type=job_shortfall")
	if qs.Total != 1 || qs.Quotes[0].ID != quote["id"] || qs.Quotes[0].AmountUSD != 23_750 {
		t.Errorf("quotes: got %+v, want the shortfall quote", qs)
	}
	if _, l := listIDs(t, c, ""); l.Total != 0 {
		t.Errorf("got %d jobs stored, want none", l.Total)
	}

	// Funded, the same request is admitted; resent, it is replayed.
	grant(t, f.e, poor.ID, 1_000_000)
	r := send()
	var first apiv1.Job
	r.JSON(t, http.StatusCreated, &first)
	if r.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("first admission: got Idempotent-Replayed %q, want none", r.Header.Get("Idempotent-Replayed"))
	}
	admitted := money(t, c)
	for range 2 {
		r = send()
		var again apiv1.Job
		r.JSON(t, http.StatusCreated, &again)
		if again.ID != first.ID || r.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("resend: got job %s, Idempotent-Replayed %q; want %s, true", again.ID, r.Header.Get("Idempotent-Replayed"), first.ID)
		}
	}
	if got := money(t, c); got != admitted {
		t.Errorf("replays changed the account:\ngot  %s\nwant %s", got, admitted)
	}
	if holdsOf(t, c, "").Total != 1 {
		t.Errorf("got %d holds, want one", holdsOf(t, c, "").Total)
	}
	bal := balanceAgrees(t, c)
	if bal.HeldUSD != defaultRateMicros || bal.AvailableUSD != 1_010_000-defaultRateMicros {
		t.Errorf("balance: got %+v", bal)
	}
}

func testIdempotencyKey(t *testing.T, f *fixture) {
	c := f.member
	post := func(body string, header http.Header, check apitest.Check) *apitest.Response {
		return c.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/jobs", Body: []byte(body), Header: header, Check: check})
	}
	body := `{"project": "alpha", "runner_command": ["/r"], "tags": ["a"]}`
	var j apiv1.Job
	post(body, http.Header{"Idempotency-Key": {"k1"}}, apitest.MustMatch).JSON(t, http.StatusCreated, &j)
	before := money(t, c)

	// The same key with another body, even one that differs only in its
	// spacing, is a 409 that changes nothing.
	for _, other := range []string{`{"project": "alpha", "runner_command": ["/r"], "tags": ["b"]}`,
		`{"project":"alpha","runner_command":["/r"],"tags":["a"]}`} {
		env := post(other, http.Header{"Idempotency-Key": {"k1"}}, apitest.MustMatch).Fail(t, http.StatusConflict)
		if env.Code != "idempotency_key_reused" || !strings.Contains(env.Error, `"k1"`) || env.RecommendedAction == "" {
			t.Errorf("reused key: got %s %q", env.Code, env.Error)
		}
	}
	// Keys are the account's own: another account's same key is new.
	_, oc := fundedAccount(t, f.e, "other", "alpha", grantMicros)
	var oj apiv1.Job
	oc.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/jobs", Body: []byte(body), Header: http.Header{"Idempotency-Key": {"k1"}}}).
		JSON(t, http.StatusCreated, &oj)
	if oj.ID == j.ID {
		t.Error("another account's same key replayed this account's job")
	}

	// A key over 255 bytes, or two keys, is a 422; 255 bytes is fine.
	env := post(body, http.Header{"Idempotency-Key": {strings.Repeat("k", 256)}}, apitest.MustViolate).
		Fail(t, http.StatusUnprocessableEntity)
	if env.Code != "invalid_idempotency_key" {
		t.Errorf("long key: got %s", env.Code)
	}
	env = post(body, http.Header{"Idempotency-Key": {"a", "b"}}, apitest.Unchecked).Fail(t, http.StatusUnprocessableEntity)
	if env.Code != "invalid_idempotency_key" {
		t.Errorf("two keys: got %s", env.Code)
	}
	// A refused submission stores no key: fixed, the same key is admitted.
	env = post(`{"project": "alpha", "runner_command": ["/r"], "max_retries": 11}`,
		http.Header{"Idempotency-Key": {"k2"}}, apitest.MustViolate).Fail(t, http.StatusUnprocessableEntity)
	if env.Code != "invalid_job" {
		t.Errorf("invalid body: got %s", env.Code)
	}
	if got := money(t, c); got != before {
		t.Errorf("refused requests changed the account:\ngot  %s\nwant %s", got, before)
	}
	post(`{"project": "alpha", "runner_command": ["/r"], "max_retries": 1}`, http.Header{"Idempotency-Key": {"k2"}},
		apitest.MustMatch).Want(t, http.StatusCreated)
	post(body, http.Header{"Idempotency-Key": {strings.Repeat("k", 255)}}, apitest.MustMatch).Want(t, http.StatusCreated)
	// Without a key, the same body is a new job each time.
	var a, b apiv1.Job
	post(body, nil, apitest.MustMatch).JSON(t, http.StatusCreated, &a)
	post(body, nil, apitest.MustMatch).JSON(t, http.StatusCreated, &b)
	if a.ID == b.ID || a.ID == j.ID {
		t.Errorf("submissions without a key: got %s and %s", a.ID, b.ID)
	}
}

func testBatchIdempotency(t *testing.T, f *fixture) {
	c := f.member
	body := []byte(`{"jobs": [{"project": "alpha", "runner_command": ["/r"], "payload": {"n": 0}},
		{"project": "alpha", "runner_command": ["/r"], "max_retries": 11},
		{"project": "alpha", "runner_command": ["/r"], "payload": {"n": 2}}]}`)
	send := func(body []byte, key string) *apitest.Response {
		check := apitest.MustMatch
		if len(key) > 255 {
			check = apitest.MustViolate
		}
		return c.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/jobs/batch", Body: body,
			Header: http.Header{"Idempotency-Key": {key}}, Check: check})
	}
	var first apiv1.JobBatchResult
	r := send(body, "batch-1")
	r.JSON(t, http.StatusMultiStatus, &first)
	if first.Submitted != 2 || first.ErrorCount != 1 || first.Jobs[0].Replayed || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first batch: got %s", r.Body)
	}
	admitted := money(t, c)
	var again apiv1.JobBatchResult
	r = send(body, "batch-1")
	r.JSON(t, http.StatusMultiStatus, &again)
	if again.Submitted != 2 || again.ErrorCount != 1 || again.Jobs[0].ID != first.Jobs[0].ID || again.Jobs[1].ID != first.Jobs[1].ID ||
		!again.Jobs[0].Replayed || !again.Jobs[1].Replayed || again.Errors[0].Index != 1 || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("resent batch: got %s, want the same jobs replayed and the same refusal", r.Body)
	}
	if got := money(t, c); got != admitted {
		t.Errorf("the resent batch changed the account:\ngot  %s\nwant %s", got, admitted)
	}
	// Another body under the key admits nothing.
	env := send([]byte(`{"jobs": [{"project": "alpha", "runner_command": ["/r"]}]}`), "batch-1").Fail(t, http.StatusConflict)
	if env.Code != "idempotency_key_reused" || !strings.Contains(env.Error, `"batch-1"`) {
		t.Errorf("reused batch key: got %s %q", env.Code, env.Error)
	}
	if got := money(t, c); got != admitted {
		t.Errorf("the 409 changed the account:\ngot  %s\nwant %s", got, admitted)
	}
	// A batch key and a single submission's key never meet.
	var one apiv1.Job
	c.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/jobs", Body: []byte(`{"project": "alpha", "runner_command": ["/r"]}`),
		Header: http.Header{"Idempotency-Key": {"batch-1"}}}).JSON(t, http.StatusCreated, &one)
	if slices.ContainsFunc(first.Jobs, func(e apiv1.JobBatchEntry) bool { return e.ID == one.ID }) {
		t.Errorf("POST /jobs with a batch's key replayed a batch entry")
	}
	send(body, strings.Repeat("b", 256)).Fail(t, http.StatusUnprocessableEntity)
}

// A batch refused for want of funds stores no key: after funding, the
// same batch with the same key is admitted, then replayed.
func testBatchShortfallThenResend(t *testing.T, f *fixture) {
	poor, c := fundedAccount(t, f.e, "poor", "thin", 0)
	body := []byte(`{"jobs": [{"project": "thin", "runner_command": ["/r"]}, {"project": "thin", "runner_command": ["/r"], "tags": ["x"]}]}`)
	send := func() *apitest.Response {
		return c.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/jobs/batch", Body: body,
			Header: http.Header{"Idempotency-Key": {"nightly"}}})
	}
	var res apiv1.JobBatchResult
	send().JSON(t, http.StatusMultiStatus, &res)
	if res.Submitted != 0 || res.ErrorCount != 2 || res.Errors[0].Code != "insufficient_balance" {
		t.Fatalf("unfunded batch: got %+v", res)
	}
	grant(t, f.e, poor.ID, 1_000_000)
	send().JSON(t, http.StatusCreated, &res)
	if res.Submitted != 2 || res.Jobs[0].Replayed || res.Jobs[1].Replayed {
		t.Fatalf("funded batch: got %+v, want both admitted", res)
	}
	ids := []string{res.Jobs[0].ID, res.Jobs[1].ID}
	r := send()
	r.JSON(t, http.StatusCreated, &res)
	if res.Submitted != 2 || res.Jobs[0].ID != ids[0] || res.Jobs[1].ID != ids[1] || !res.Jobs[0].Replayed ||
		r.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("resent funded batch: got %s, want %v replayed", r.Body, ids)
	}
	if h := holdsOf(t, c, "?status=active"); h.Total != 2 {
		t.Errorf("got %d active holds, want 2", h.Total)
	}
	balanceAgrees(t, c)
}

// Resends racing each other admit each job once: the key is stored in the
// transaction that stores the job, so the losers replay the winner's.
func testConcurrentResends(t *testing.T, f *fixture) {
	c := f.member
	const n = 8
	single := []byte(`{"project": "alpha", "runner_command": ["/r"]}`)
	batch := []byte(`{"jobs": [{"project": "alpha", "runner_command": ["/r"]}, {"project": "alpha", "runner_command": ["/r"]}]}`)
	var wg sync.WaitGroup
	ids := make([][]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var j apiv1.Job
			r := c.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/jobs", Body: single, Header: http.Header{"Idempotency-Key": {"same"}}})
			if r.Status == http.StatusCreated && json.Unmarshal(r.Body, &j) == nil {
				ids[i] = append(ids[i], j.ID)
			}
			var res apiv1.JobBatchResult
			r = c.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/jobs/batch", Body: batch, Header: http.Header{"Idempotency-Key": {"same-batch"}}})
			if r.Status == http.StatusCreated && json.Unmarshal(r.Body, &res) == nil {
				for _, e := range res.Jobs {
					ids[i] = append(ids[i], e.ID)
				}
			}
		}()
	}
	wg.Wait()
	for i := range n {
		if len(ids[i]) != 3 || !slices.Equal(ids[i], ids[0]) {
			t.Errorf("resend %d: got jobs %v, want %v like every other", i, ids[i], ids[0])
		}
	}
	if _, l := listIDs(t, c, ""); l.Total != 3 {
		t.Errorf("got %d jobs, want 3", l.Total)
	}
	if h := holdsOf(t, c, ""); h.Total != 3 {
		t.Errorf("got %d holds, want 3", h.Total)
	}
	balanceAgrees(t, c)
}

func testAccountLists(t *testing.T, f *fixture) {
	c := f.member
	f.e.Clock.Advance(time.Second) // entries list by time, newest first
	grant(t, f.e, f.acct.ID, 2_500_000)
	f.e.Clock.Advance(time.Second)
	grant(t, f.e, f.acct.ID, 1)
	var jobs []string
	for i := range 3 {
		f.e.Clock.Advance(time.Second)
		jobs = append(jobs, submitJob(t, c, map[string]any{"tags": []string{fmt.Sprint(i)}}).ID)
	}
	f.member.Put(t, jobPath(jobs[0], "/cancel"), nil).Want(t, http.StatusOK)

	// The ledger, newest first, with the paged envelope.
	r := c.Get(t, "/api/v1/account/ledger")
	m := r.Object(t, http.StatusOK)
	wantKeys(t, "ledger page", m, "entries", "total", "count", "limit", "offset")
	l := ledgerOf(t, c, "")
	if l.Total != 3 || l.Count != 3 || l.Limit != 50 || l.Offset != 0 {
		t.Errorf("ledger: got total %d count %d limit %d offset %d, want 3 3 50 0", l.Total, l.Count, l.Limit, l.Offset)
	}
	for _, e := range m["entries"].([]any) {
		wantKeys(t, "ledger entry", e.(map[string]any), "id", "entry_type", "amount_usd", "reference", "description", "created_at")
	}
	if e := l.Entries[0]; e.EntryType != "beta_credit_grant" || e.AmountUSD != 1 || e.Reference != "operator" ||
		e.Description != "test credit" || !strings.HasPrefix(e.ID, "led_") {
		t.Errorf("newest entry: got %+v, want the 0.000001 grant", e)
	}
	if !strings.Contains(string(r.Body), `"amount_usd":0.000001`) || !strings.Contains(string(r.Body), `"amount_usd":2.5`) {
		t.Errorf("amounts are not exact decimals: %s", r.Body)
	}
	page := ledgerOf(t, c, "?limit=2&offset=1")
	if page.Total != 3 || page.Count != 2 || page.Entries[0].ID != l.Entries[1].ID || page.Entries[1].ID != l.Entries[2].ID {
		t.Errorf("ledger page 2: got %+v", page)
	}
	if p := ledgerOf(t, c, "?offset=3"); p.Count != 0 || p.Total != 3 || p.Entries == nil {
		t.Errorf("past the end: got %+v, want an empty page of 3", p)
	}
	if p := ledgerOf(t, c, "?entry_type=job_charge"); p.Total != 0 {
		t.Errorf("job charges before any job ran: got %d", p.Total)
	}
	if p := ledgerOf(t, c, "?entry_type=beta_credit_grant&unknown=1"); p.Total != 3 {
		t.Errorf("grants, unknown parameter ignored: got %d, want 3", p.Total)
	}

	// Holds: one per job, newest first; the cancelled job's was released.
	r = c.Get(t, "/api/v1/account/holds")
	m = r.Object(t, http.StatusOK)
	wantKeys(t, "holds page", m, "holds", "total", "count", "limit", "offset")
	for _, h := range m["holds"].([]any) {
		wantKeys(t, "hold", h.(map[string]any), "id", "job_id", "status", "amount_usd", "captured_usd", "released_usd",
			"created_at", "settled_at")
	}
	hs := holdsOf(t, c, "")
	if hs.Total != 3 || hs.Holds[0].JobID != jobs[2] || hs.Holds[2].JobID != jobs[0] {
		t.Fatalf("holds: got %+v, want three, newest first", hs)
	}
	rel := hs.Holds[2]
	if rel.Status != "released" || rel.CapturedUSD != 0 || rel.ReleasedUSD != defaultRateMicros || rel.SettledAt == nil {
		t.Errorf("cancelled job's hold: got %+v, want released in full", rel)
	}
	if p := holdsOf(t, c, "?status=active"); p.Total != 2 || p.Holds[0].Status != "active" {
		t.Errorf("active holds: got %+v", p)
	}
	if p := holdsOf(t, c, "?status=released&job_id="+jobs[0]); p.Total != 1 || p.Holds[0].ID != rel.ID {
		t.Errorf("released hold of %s: got %+v", jobs[0], p)
	}
	if p := holdsOf(t, c, "?job_id=job_nope"); p.Total != 0 {
		t.Errorf("holds of an unknown job: got %d", p.Total)
	}
	if p := holdsOf(t, c, "?limit=1&offset=1"); p.Count != 1 || p.Holds[0].JobID != jobs[1] || p.Total != 3 {
		t.Errorf("holds page: got %+v", p)
	}

	// Another account sees none of it; a viewer sees all of it.
	other := f.e.Client(f.e.NewAccount(t, "other").Member)
	if ledgerOf(t, other, "").Total != 0 || holdsOf(t, other, "").Total != 0 || quotesOf(t, other, "").Total != 0 {
		t.Error("another account sees this account's ledger, holds or quotes")
	}
	if ledgerOf(t, f.viewer, "").Total != 3 || holdsOf(t, f.viewer, "").Total != 3 {
		t.Error("a viewer key does not see the account's ledger and holds")
	}
	balanceAgrees(t, c)
}

// Malformed paging and unknown filter values are 422s that name the
// parameter, on every account list.
func testAccountListBadInput(t *testing.T, f *fixture) {
	before := money(t, f.member)
	for _, list := range []string{"ledger", "holds", "quotes"} {
		for _, tc := range []struct {
			query, code, field string
		}{
			{"limit=0", "invalid_limit", "limit"},
			{"limit=-1", "invalid_limit", "limit"},
			{"limit=201", "invalid_limit", "limit"},
			{"limit=99999999999999999999", "invalid_limit", "limit"},
			{"limit=ten", "invalid_limit", "limit"},
			{"limit=1.5", "invalid_limit", "limit"},
			{"limit=", "", ""}, // empty is the default
			{"offset=-1", "invalid_offset", "offset"},
			{"offset=NaN", "invalid_offset", "offset"},
			{"offset=99999999999", "invalid_offset", "offset"},
		} {
			path := "/api/v1/account/" + list + "?" + tc.query
			if tc.code == "" {
				f.member.Do(t, apitest.Request{Method: "GET", Path: path, Check: apitest.Unchecked}).Want(t, http.StatusOK)
				continue
			}
			env := f.member.Do(t, apitest.Request{Method: "GET", Path: path, Check: apitest.MustViolate}).
				Fail(t, http.StatusUnprocessableEntity)
			if env.Code != tc.code || env.Details["field"] != tc.field {
				t.Errorf("GET %s: got %s %v, want %s naming %s", path, env.Code, env.Details, tc.code, tc.field)
			}
		}
	}
	for _, tc := range []struct{ path, code, field string }{
		{"/api/v1/account/ledger?entry_type=refund", "invalid_entry_type", "entry_type"},
		{"/api/v1/account/ledger?entry_type=JOB_CHARGE", "invalid_entry_type", "entry_type"},
		{"/api/v1/account/holds?status=pending", "invalid_status", "status"},
		{"/api/v1/account/quotes?status=settled", "invalid_status", "status"},
		{"/api/v1/account/quotes?quote_type=mpp_topup", "invalid_quote_type", "quote_type"},
	} {
		env := f.member.Do(t, apitest.Request{Method: "GET", Path: tc.path, Check: apitest.MustViolate}).
			Fail(t, http.StatusUnprocessableEntity)
		if env.Code != tc.code || env.Details["field"] != tc.field || !strings.Contains(env.RecommendedAction, "Use one of") {
			t.Errorf("GET %s: got %s %v %q, want %s naming %s", tc.path, env.Code, env.Details, env.RecommendedAction, tc.code, tc.field)
		}
	}
	if after := money(t, f.member); after != before {
		t.Errorf("refused reads changed the account:\ngot  %s\nwant %s", after, before)
	}
}

// Quotes: listed with filters, fetched one by one, expired after their
// lifetime, and another account's is not found.
func testQuotes(t *testing.T, f *fixture) {
	c := f.member
	// Two jobs too dear for the balance: two shortfall quotes.
	dear := map[string]any{"project": fixtureProject, "runner_command": []string{"/r"}, "max_retries": 10,
		"requirements": map[string]any{"gpu_count": 16, "cpu": 64, "memory_mb": 262144}, "timeout_s": 86400}
	var ids []string
	for i := range 2 {
		if i > 0 {
			f.e.Clock.Advance(time.Minute)
		}
		env := c.Post(t, "/api/v1/jobs", dear).Fail(t, http.StatusPaymentRequired)
		ids = append(ids, env.Details["quote"].(map[string]any)["id"].(string))
	}
	r := c.Get(t, "/api/v1/account/quotes")
	m := r.Object(t, http.StatusOK)
	wantKeys(t, "quotes page", m, "quotes", "total", "count", "limit", "offset")
	for _, q := range m["quotes"].([]any) {
		wantKeys(t, "quote", q.(map[string]any), "id", "quote_type", "status", "amount_usd", "description", "attrs",
			"expires_at", "created_at", "paid_at")
	}
	qs := quotesOf(t, c, "")
	if qs.Total != 2 || qs.Quotes[0].ID != ids[1] || qs.Quotes[1].ID != ids[0] || qs.Quotes[0].Status != "open" ||
		qs.Quotes[0].QuoteType != "job_shortfall" {
		t.Fatalf("quotes: got %+v, want both open, newest first", qs)
	}
	for _, q := range []string{"?status=open", "?quote_type=job_shortfall", "?status=open&quote_type=job_shortfall"} {
		if p := quotesOf(t, c, q); p.Total != 2 {
			t.Errorf("quotes%s: got %d, want 2", q, p.Total)
		}
	}
	for _, q := range []string{"?status=paid", "?status=expired", "?quote_type=x402_topup", "?quote_type=generic"} {
		if p := quotesOf(t, c, q); p.Total != 0 {
			t.Errorf("quotes%s: got %d, want 0", q, p.Total)
		}
	}
	if p := quotesOf(t, c, "?limit=1&offset=1"); p.Count != 1 || p.Quotes[0].ID != ids[0] || p.Total != 2 {
		t.Errorf("quotes page 2: got %+v", p)
	}

	var one apiv1.QuoteResponse
	r = c.Get(t, "/api/v1/account/quotes/"+ids[0])
	wantKeys(t, "quote response", r.Object(t, http.StatusOK), "account", "quote")
	r.JSON(t, http.StatusOK, &one)
	if one.Account.ID != f.acct.ID || one.Quote.ID != ids[0] || one.Quote.Status != "open" || one.Quote.AmountUSD <= 0 ||
		!one.Quote.ExpiresAt.Equal(apitest.Epoch.Add(billing.QuoteTTL)) {
		t.Errorf("quote: got %+v", one)
	}
	if !jsonEqual(t, mustJSON(t, one.Quote), mustJSON(t, qs.Quotes[1])) {
		t.Errorf("GET quote %s differs from its list entry %s", mustJSON(t, one.Quote), mustJSON(t, qs.Quotes[1]))
	}
	f.viewer.Get(t, "/api/v1/account/quotes/"+ids[0]).Want(t, http.StatusOK)

	// Unknown and another account's quotes are not found alike.
	other := f.e.Client(f.e.NewAccount(t, "other").Member)
	for _, tc := range []struct {
		c  *apitest.Client
		id string
	}{{c, "qt_nope"}, {other, ids[0]}} {
		env := tc.c.Get(t, "/api/v1/account/quotes/"+tc.id).Fail(t, http.StatusNotFound)
		if env.Code != "quote_not_found" {
			t.Errorf("quote %s: got %s, want quote_not_found", tc.id, env.Code)
		}
	}

	// Past its lifetime an open quote reads as expired, in the list and
	// alone; the balance no longer counts it.
	f.e.Clock.Advance(billing.QuoteTTL - time.Minute) // the first is 30 minutes old, the second 29
	c.Get(t, "/api/v1/account/quotes/"+ids[0]).JSON(t, http.StatusOK, &one)
	if one.Quote.Status != "expired" {
		t.Errorf("a quote at its expiry: got %s, want expired", one.Quote.Status)
	}
	c.Get(t, "/api/v1/account/quotes/"+ids[1]).JSON(t, http.StatusOK, &one)
	if one.Quote.Status != "open" {
		t.Errorf("a quote before its expiry: got %s, want open", one.Quote.Status)
	}
	if p := quotesOf(t, c, "?status=expired"); p.Total != 1 || p.Quotes[0].ID != ids[0] || p.Quotes[0].Status != "expired" {
		t.Errorf("expired quotes: got %+v", p)
	}
	if p := quotesOf(t, c, "?status=open"); p.Total != 1 || p.Quotes[0].ID != ids[1] {
		t.Errorf("open quotes: got %+v", p)
	}
	if bal := balanceAgrees(t, c); bal.OpenQuoteCount != 1 {
		t.Errorf("open_quote_count: got %d, want 1", bal.OpenQuoteCount)
	}
}

// runAttempt claims the next queued task, starts it and ends it with
// outcome o lasting d, through the job service as the dispatcher would.
func runAttempt(t *testing.T, f *fixture, jobID string, d time.Duration, o job.Outcome) *store.Attempt {
	t.Helper()
	ctx := t.Context()
	a := claimAttempt(t, f, jobID)
	start := f.e.Clock.Now()
	if err := f.e.Jobs.AttemptStarted(ctx, a, start); err != nil {
		t.Fatal(err)
	}
	f.e.Clock.Advance(d)
	o.StartedAt, o.EndedAt = start, start.Add(d)
	if err := f.e.Jobs.AttemptFinished(ctx, a, &o, nil, ""); err != nil {
		t.Fatal(err)
	}
	return a
}

func claimAttempt(t *testing.T, f *fixture, jobID string) *store.Attempt {
	t.Helper()
	task, a, err := f.e.Jobs.Claim(t.Context(), &store.TaskClaimParams{HostID: "wkr_a", AttemptID: id.New(id.Attempt),
		ResourceProfile: json.RawMessage(`{}`), FreeCPU: 64, FreeMemoryMB: 1 << 20, FreeGPUs: 8, Now: f.e.Clock.Now()})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if task.JobID != jobID {
		t.Fatalf("claimed a task of %s, want %s", task.JobID, jobID)
	}
	return a
}

var (
	succeed = job.Outcome{ExitCode: 0, Result: json.RawMessage(`{"ok":true}`)}
	fail    = job.Outcome{ExitCode: 1, Stderr: "boom"}
)

// A job run to its end: each attempt is metered per second (at least 60,
// lost attempts free), the hold is captured once at the metered total, and the
// ledger, holds, balance, job, tasks and result all say the same.
func testHoldCapture(t *testing.T, f *fixture) {
	c := f.member
	j := submitJob(t, c, map[string]any{"fan_out": map[string]any{"items": []any{map[string]any{}, map[string]any{}}},
		"max_retries": 1, "timeout_s": 600})
	const hold = 2 * 2 * 5625 // 2 tasks x 2 attempts x 600 s
	if b := billingOf(t, j.Summary); b.Hold.AmountUSD != hold {
		t.Fatalf("hold: got %+v, want %d", b.Hold, hold)
	}
	// Task 0 runs 90 s: 0.00084375 rounds up to 0.000844.
	runAttempt(t, f, j.ID, 90*time.Second, succeed)
	running := getJob(t, c, j.ID)
	if b := billingOf(t, running.Summary); b.Cost != (apiv1.JobCost{ChargedUSD: 844, MeteredUSD: 844, BilledSeconds: 90}) ||
		b.Hold.Status != "active" {
		t.Errorf("after one attempt: got cost %+v hold %+v", b.Cost, b.Hold)
	}
	// Task 1 fails after 30 s (billed 60 s), is retried, its retry is lost
	// with its host (free), and the free requeue succeeds after 10 s
	// (billed 60 s).
	runAttempt(t, f, j.ID, 30*time.Second, fail)
	lost := claimAttempt(t, f, j.ID)
	if err := f.e.Jobs.AttemptStarted(t.Context(), lost, f.e.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	f.e.Clock.Advance(5 * time.Minute)
	if err := f.e.Jobs.AttemptLost(t.Context(), lost, "host vanished"); err != nil {
		t.Fatal(err)
	}
	runAttempt(t, f, j.ID, 10*time.Second, succeed)
	const charged = 844 + 563 + 563

	done := getJob(t, c, j.ID)
	b := billingOf(t, done.Summary)
	if done.Status != "completed" || b.Hold.Status != "partially_captured" || b.Hold.CapturedUSD != charged || b.Hold.SettledAt == nil {
		t.Errorf("ended job: got %s, hold %+v; want completed, partially captured %d", done.Status, b.Hold, charged)
	}
	if b.Cost != (apiv1.JobCost{ChargedUSD: charged, MeteredUSD: charged, BilledSeconds: 90 + 60 + 60}) {
		t.Errorf("cost: got %+v, want %d charged for 210 s", b.Cost, charged)
	}
	if b.Estimate.TotalUSD != hold || b.Admission.EstimatedHoldUSD != hold {
		t.Errorf("estimate and admission changed at the end: %+v %+v", b.Estimate, b.Admission)
	}

	var tl apiv1.TaskList
	c.Get(t, jobPath(j.ID, "/tasks")).JSON(t, http.StatusOK, &tl)
	t0, t1 := tl.Tasks[0], tl.Tasks[1]
	if t0.Cost != (apiv1.TaskCost{BilledSeconds: 90, CostUSD: 844}) || len(t0.Attempts) != 1 ||
		t0.Attempts[0].BilledSeconds != 90 || t0.Attempts[0].CostUSD != 844 {
		t.Errorf("task 0: got cost %+v attempts %s", t0.Cost, mustJSON(t, t0.Attempts))
	}
	if t1.Cost != (apiv1.TaskCost{BilledSeconds: 120, CostUSD: 1126}) || len(t1.Attempts) != 3 {
		t.Fatalf("task 1: got cost %+v and %d attempts, want 120 s, 0.001126, 3 attempts", t1.Cost, len(t1.Attempts))
	}
	for i, want := range []struct {
		status string
		secs   int64
		cost   apiv1.USD
	}{{"failed", 60, 563}, {"lost", 0, 0}, {"succeeded", 60, 563}} {
		a := t1.Attempts[i]
		if a.Status != want.status || a.BilledSeconds != want.secs || a.CostUSD != want.cost {
			t.Errorf("task 1 attempt %d: got %s %d s %v, want %s %d s %v", i+1, a.Status, a.BilledSeconds, a.CostUSD,
				want.status, want.secs, want.cost)
		}
	}

	// One job_charge entry references the job; the hold released the rest.
	charges := ledgerOf(t, c, "?entry_type=job_charge")
	if charges.Total != 1 || charges.Entries[0].AmountUSD != -charged || charges.Entries[0].Reference != j.ID {
		t.Errorf("job charges: got %+v, want one of -%d for %s", charges, charged, j.ID)
	}
	h := holdsOf(t, c, "?job_id="+j.ID).Holds[0]
	if h.Status != "partially_captured" || h.CapturedUSD != charged || h.ReleasedUSD != hold-charged {
		t.Errorf("hold: got %+v", h)
	}
	bal := balanceAgrees(t, c)
	if bal.LedgerBalanceUSD != grantMicros-charged || bal.HeldUSD != 0 || bal.AvailableUSD != grantMicros-charged {
		t.Errorf("balance: got %+v, want %d", bal, grantMicros-charged)
	}
	var res apiv1.JobResult
	c.Get(t, "/api/v1/results/"+j.ID).JSON(t, http.StatusOK, &res)
	if !jsonEqual(t, res.Summary, done.Summary) {
		t.Errorf("result summary %s differs from the job's %s", res.Summary, done.Summary)
	}
	// Captured once: cancelling now is a 409 and charges nothing more.
	before := money(t, c)
	c.Put(t, jobPath(j.ID, "/cancel"), nil).Fail(t, http.StatusConflict)
	if after := money(t, c); after != before {
		t.Errorf("a refused cancel changed the account:\ngot  %s\nwant %s", after, before)
	}
}

func testHoldCapturedAndReleased(t *testing.T, f *fixture) {
	c := f.member
	// A 60 s timeout and a run to it: the hold is used in full.
	full := submitJob(t, c, map[string]any{"timeout_s": 60})
	runAttempt(t, f, full.ID, 75*time.Second, job.Outcome{ExitCode: 137, TimedOut: true})
	b := billingOf(t, getJob(t, c, full.ID).Summary)
	if b.Hold.Status != "captured" || b.Hold.CapturedUSD != 563 || b.Cost.BilledSeconds != 60 || b.Cost.ChargedUSD != 563 {
		t.Errorf("timed out job: got hold %+v cost %+v, want captured 0.000563 for 60 s", b.Hold, b.Cost)
	}
	// A job whose only attempt was lost, then cancelled: released in full.
	free := submitJob(t, c, map[string]any{"timeout_s": 600})
	a := claimAttempt(t, f, free.ID)
	if err := f.e.Jobs.AttemptLost(t.Context(), a, "controller restarted"); err != nil {
		t.Fatal(err)
	}
	c.Put(t, jobPath(free.ID, "/cancel"), nil).Want(t, http.StatusOK)
	b = billingOf(t, getJob(t, c, free.ID).Summary)
	if b.Hold.Status != "released" || b.Hold.CapturedUSD != 0 || b.Cost != (apiv1.JobCost{}) {
		t.Errorf("lost then cancelled: got hold %+v cost %+v, want released, nothing charged", b.Hold, b.Cost)
	}
	if p := holdsOf(t, c, "?status=captured"); p.Total != 1 || p.Holds[0].JobID != full.ID || p.Holds[0].ReleasedUSD != 0 {
		t.Errorf("captured holds: got %+v", p)
	}
	if p := holdsOf(t, c, "?status=released"); p.Total != 1 || p.Holds[0].JobID != free.ID || p.Holds[0].ReleasedUSD != 5625 {
		t.Errorf("released holds: got %+v", p)
	}
	if p := ledgerOf(t, c, "?entry_type=job_charge"); p.Total != 1 || p.Entries[0].Reference != full.ID {
		t.Errorf("job charges: got %+v, want only the timed-out job's", p)
	}
	balanceAgrees(t, c)
}

func testPresetsAndPricing(t *testing.T, f *fixture) {
	c := f.member
	r := c.Get(t, "/api/v1/presets")
	m := r.Object(t, http.StatusOK)
	wantKeys(t, "presets", m, "presets", "count", "pricing")
	var l apiv1.PresetList
	r.JSON(t, http.StatusOK, &l)
	var names []string
	for _, p := range l.Presets {
		names = append(names, p.Name)
	}
	if want := []string{"cpu-small", "cpu-medium", "cpu-large", "memory-large", "gpu-small"}; !slices.Equal(names, want) || l.Count != 5 {
		t.Errorf("presets: got %v, want %v, cheapest first", names, want)
	}
	if p := l.Pricing; p.MarkupPercent != 35 || p.MinBilledSeconds != 60 || p.MeteredPer != "second" || p.DedicatedPercent != 150 ||
		p.MarketRates != (apiv1.UnitRates{CPUCoreHourUSD: 20_000, MemoryGBHourUSD: 2_500, GPUHourUSD: 600_000}) {
		t.Errorf("pricing: got %+v", p)
	}
	small, gpu := l.Presets[0], l.Presets[4]
	if small.RateUSDPerHour != defaultRateMicros || small.MarketRateUSDPerHour != 25_000 || small.MarkupPercent != 35 ||
		small.DedicatedRateUSDPerHour != 50_625 || small.MinimumAttemptUSD != 563 || small.ResourceClass != "cpu-1c-2048mb" ||
		*small.Requirements.CPU != 1 || *small.Requirements.MemoryMB != 2048 || *small.Requirements.StorageGB != 10 {
		t.Errorf("cpu-small: got %s", mustJSON(t, small))
	}
	// 1 GPU, 8 cores, 32 GiB: 0.6 + 0.16 + 0.08 = 0.84 market, 1.134 billed.
	if gpu.MarketRateUSDPerHour != 840_000 || gpu.RateUSDPerHour != 1_134_000 || *gpu.Requirements.Profile != "gpu" ||
		*gpu.Requirements.GPUCount != 1 || gpu.ResourceClass != "gpu-1x-8c-32768mb" {
		t.Errorf("gpu-small: got %s", mustJSON(t, gpu))
	}
	f.viewer.Get(t, "/api/v1/presets").Want(t, http.StatusOK)

	// A submission names a preset; explicit requirements win over it; its
	// estimate is priced at the preset's rate.
	j := submitJob(t, c, map[string]any{"preset": "cpu-large"})
	if *j.Preset != "cpu-large" || *j.Requirements.CPU != 4 || *j.Requirements.MemoryMB != 8192 ||
		billingOf(t, j.Summary).Estimate.RateUSDPerHour != l.Presets[2].RateUSDPerHour {
		t.Errorf("preset job: got %s %s", mustJSON(t, j.Requirements), j.Summary)
	}
	j = submitJob(t, c, map[string]any{"preset": "gpu-small", "requirements": map[string]any{"memory_mb": 65536}})
	if *j.Requirements.GPUCount != 1 || *j.Requirements.MemoryMB != 65536 || *j.Requirements.CPU != 8 {
		t.Errorf("preset with requirements: got %s", mustJSON(t, j.Requirements))
	}
	env := c.Post(t, "/api/v1/jobs", map[string]any{"project": fixtureProject, "runner_command": []string{"/r"}, "preset": "huge"}).
		Fail(t, http.StatusUnprocessableEntity)
	if fields, _ := env.Details["fields"].(map[string]any); env.Code != "unknown_preset" ||
		!strings.Contains(fmt.Sprint(fields["preset"]), "cpu-small, gpu-small, memory-large") {
		t.Errorf("unknown preset: got %s %v, want unknown_preset listing the names", env.Code, env.Details)
	}

	// The pricing page is public markdown with the same table.
	page := f.anon.Get(t, "/docs/pricing").Want(t, http.StatusOK)
	body := string(page.Body)
	if ct := page.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/markdown") {
		t.Errorf("pricing page: got Content-Type %q", ct)
	}
	for _, want := range []string{"| `cpu-small` | 1 | 2048 | 0 | 0.025 | 0.03375 | 0.050625 | 0.000563 |",
		"| `gpu-small` | 8 | 32768 | 1 | 0.84 | 1.134 |", "| CPU core | 0.02 | 0.027 |", "35%", "60 seconds",
		"Queue time", "exit status 137", "controller restart", "partially_captured", "max(60 s, runtime cap)"} {
		if !strings.Contains(body, want) {
			t.Errorf("pricing page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<!-- skiff:rates -->") {
		t.Error("pricing page still holds the rates marker")
	}
	f.anon.Do(t, apitest.Request{Method: "HEAD", Path: "/docs/pricing"}).Want(t, http.StatusOK)
}
