package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
)

// Re-pricing by PATCH /jobs/{id}/requirements. At the default rates one
// core with 256 MB is billed 27844 micro-USD per hour, with 512 MB 28688,
// with 4096 MB 40500; an attempt held for a 600 s timeout is then 4641,
// 4782 and 6750 micro-USD.
const (
	rate256, rate512, rate4096 = 27_844, 28_688, 40_500
	held256, held512, held4096 = 4641, 4782, 6750
)

// submitSmall submits a job of tasks tasks of one core and 256 MB with a
// 600 s timeout through c, on project.
func submitSmall(t *testing.T, c *apitest.Client, project string, tasks, maxRetries int) *apiv1.Job {
	t.Helper()
	items := make([]any, tasks)
	for i := range items {
		items[i] = map[string]any{}
	}
	var j apiv1.Job
	c.Post(t, "/api/v1/jobs", map[string]any{"project": project, "runner_command": []string{"/r"},
		"fan_out": map[string]any{"items": items}, "max_retries": maxRetries, "timeout_s": 600,
		"requirements": map[string]any{"cpu": 1, "memory_mb": 256}}).JSON(t, http.StatusCreated, &j)
	return &j
}

func patchRequirements(t *testing.T, c *apitest.Client, jobID string, body any) *apitest.Response {
	t.Helper()
	return c.Do(t, apitest.Request{Method: "PATCH", Path: jobPath(jobID, "/requirements"), Body: body})
}

// requirementsEvents are the data of the job's job.requirements_updated
// events.
func requirementsEvents(t *testing.T, c *apitest.Client, jobID string) []map[string]any {
	t.Helper()
	var evs apiv1.JobEventList
	c.Get(t, jobPath(jobID, "/events")).JSON(t, http.StatusOK, &evs)
	var out []map[string]any
	for _, e := range evs.Events {
		if e.Kind != "job.requirements_updated" {
			continue
		}
		var data map[string]any
		if err := json.Unmarshal(e.Data, &data); err != nil {
			t.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

func holdOf(t *testing.T, c *apitest.Client, jobID string) apiv1.Hold {
	t.Helper()
	p := holdsOf(t, c, "?job_id="+jobID)
	if len(p.Holds) != 1 {
		t.Fatalf("holds of %s: got %d, want one", jobID, len(p.Holds))
	}
	return p.Holds[0]
}

// A dearer edit the hold still covers is applied without touching the
// money: part of the job already ran at the old rate, so what is left at
// the new rate fits. Each attempt is metered at the rate it ran with.
func testRepriceWithinHold(t *testing.T, f *fixture) {
	c := f.member
	j := submitSmall(t, c, fixtureProject, 2, 0)
	if h := holdOf(t, c, j.ID); h.AmountUSD != 2*held256 {
		t.Fatalf("hold: got %v, want %d", h.AmountUSD, 2*held256)
	}
	runAttempt(t, f, j.ID, 60*time.Second, succeed) // 465 at the 256 MB rate
	before := balanceOf(t, c)

	// Needed: 465 metered + one attempt of 4782 = 5247, under the 9282 held.
	var got apiv1.Job
	patchRequirements(t, c, j.ID, map[string]any{"memory_mb": 512}).JSON(t, http.StatusOK, &got)
	if *got.Requirements.MemoryMB != 512 {
		t.Errorf("requirements: got %s, want 512 MB", mustJSON(t, got.Requirements))
	}
	b := billingOf(t, got.Summary)
	if b.Estimate.RateUSDPerHour != rate512 || b.Estimate.PerAttemptUSD != held512 || b.Estimate.TotalUSD != 2*held512 {
		t.Errorf("billing_estimate: got %+v, want the job at %d per hour", b.Estimate, rate512)
	}
	if b.Admission.EstimatedHoldUSD != 2*held256 || b.Admission.ResourceClass != "cpu-1c-256mb" {
		t.Errorf("billing_admission changed: got %+v", b.Admission)
	}
	if b.Hold == nil || b.Hold.AmountUSD != 2*held256 || b.Hold.Status != "active" {
		t.Errorf("billing_hold: got %+v, want the admitted %d, active", b.Hold, 2*held256)
	}
	if after := balanceOf(t, c); after != before {
		t.Errorf("balance: got %+v, want %+v (the hold covered the edit)", after, before)
	}
	evs := requirementsEvents(t, c, j.ID)
	if len(evs) != 1 || evs[0]["rate_usd_per_hour"] != 0.028688 || evs[0]["previous_rate_usd_per_hour"] != 0.027844 ||
		evs[0]["required_hold_usd"] != 0.005247 || evs[0]["hold_grown_usd"] != 0.0 {
		t.Errorf("events: got %v, want one re-pricing to 0.028688 needing 0.005247, the hold not grown", evs)
	}

	runAttempt(t, f, j.ID, 60*time.Second, succeed) // 479 at the 512 MB rate
	var tl apiv1.TaskList
	c.Get(t, jobPath(j.ID, "/tasks")).JSON(t, http.StatusOK, &tl)
	for i, want := range []apiv1.USD{465, 479} {
		if a := tl.Tasks[i].Attempts; len(a) != 1 || a[0].CostUSD != want || a[0].BilledSeconds != 60 {
			t.Errorf("task %d: got attempts %s, want one of 60 s costing %d", i, mustJSON(t, a), want)
		}
	}
	done := getJob(t, c, j.ID)
	if b := billingOf(t, done.Summary); done.Status != "completed" || b.Hold.CapturedUSD != 465+479 {
		t.Errorf("ended job: got %s, hold %+v; want completed, %d captured", done.Status, b.Hold, 465+479)
	}
	balanceAgrees(t, c)
}

// A dearer edit the hold does not cover grows the hold from the available
// balance in the same transaction; the ledger is untouched until
// its capture. A cheaper edit afterwards leaves the hold as it is.
func testRepriceGrowsHold(t *testing.T, f *fixture) {
	c := f.member
	j := submitSmall(t, c, fixtureProject, 1, 0)
	ledgerBefore := ledgerOf(t, c, "?limit=200")

	var got apiv1.Job
	patchRequirements(t, c, j.ID, map[string]any{"memory_mb": 512}).JSON(t, http.StatusOK, &got)
	if b := billingOf(t, got.Summary); b.Hold == nil || b.Hold.AmountUSD != held512 || b.Estimate.RateUSDPerHour != rate512 {
		t.Errorf("job after the edit: got hold %+v estimate %+v, want %d held at %d per hour", b.Hold, b.Estimate, held512, rate512)
	}
	h := holdOf(t, c, j.ID)
	if h.AmountUSD != held512 || h.Status != "active" {
		t.Errorf("hold: got %+v, want %d active", h, held512)
	}
	if hs := holdsOf(t, c, ""); hs.Total != 1 {
		t.Errorf("holds: got %d, want the job's one hold, grown in place", hs.Total)
	}
	bal := balanceAgrees(t, c)
	if bal.HeldUSD != held512 || bal.AvailableUSD != grantMicros-held512 || bal.LedgerBalanceUSD != grantMicros {
		t.Errorf("balance: got %+v, want %d held of %d", bal, held512, grantMicros)
	}
	if l := ledgerOf(t, c, "?limit=200"); l.Total != ledgerBefore.Total {
		t.Errorf("ledger: got %d entries, want %d (growing a hold is not a charge)", l.Total, ledgerBefore.Total)
	}
	if evs := requirementsEvents(t, c, j.ID); len(evs) != 1 || evs[0]["hold_grown_usd"] != float64(held512-held256)/1e6 ||
		evs[0]["hold_usd"] != float64(held512)/1e6 {
		t.Errorf("events: got %v, want the hold grown by %d to %d", evs, held512-held256, held512)
	}

	// Back to 256 MB: applied at the old rate; the hold does not shrink.
	patchRequirements(t, c, j.ID, map[string]any{"memory_mb": 256}).JSON(t, http.StatusOK, &got)
	if b := billingOf(t, got.Summary); b.Estimate.RateUSDPerHour != rate256 || b.Hold.AmountUSD != held512 {
		t.Errorf("cheaper edit: got estimate %+v hold %+v, want %d per hour, %d still held", b.Estimate, b.Hold, rate256, held512)
	}
	runAttempt(t, f, j.ID, 60*time.Second, succeed) // 465 at the 256 MB rate
	h = holdOf(t, c, j.ID)
	if h.Status != "partially_captured" || h.CapturedUSD != 465 || h.ReleasedUSD != held512-465 {
		t.Errorf("captured hold: got %+v, want 465 captured of %d", h, held512)
	}
	if bal := balanceAgrees(t, c); bal.LedgerBalanceUSD != grantMicros-465 || bal.HeldUSD != 0 {
		t.Errorf("balance after the capture: got %+v", bal)
	}
}

// When the available balance cannot cover the hold's increase, the edit
// answers 402 with a job_shortfall quote for the difference, as submission
// does, and changes nothing; funded, the same patch is applied.
func testRepriceShortfall(t *testing.T, f *fixture) {
	poor := f.e.NewAccount(t, "poor")
	c := f.e.Client(poor.Member)
	c.Post(t, "/api/v1/projects", map[string]any{"name": "thin"}).Want(t, http.StatusCreated)
	publishFor(t, f.e, poor.ID, "thin")
	grant(t, f.e, poor.ID, held256+100)
	j := submitSmall(t, c, "thin", 1, 0)

	state := func() string {
		var b []byte
		for _, path := range []string{jobPath(j.ID, ""), jobPath(j.ID, "/tasks"), jobPath(j.ID, "/events"),
			"/api/v1/account/holds?limit=200", "/api/v1/account/ledger?limit=200"} {
			b = append(b, c.Get(t, path).Want(t, http.StatusOK).Body...)
		}
		return string(b)
	}
	before := state()
	// 4096 MB needs 6750 held, 2109 more; 100 is available.
	env := patchRequirements(t, c, j.ID, map[string]any{"memory_mb": 4096}).Fail(t, http.StatusPaymentRequired)
	quote, _ := env.Details["quote"].(map[string]any)
	if env.Code != "insufficient_balance" || quote["quote_type"] != "job_shortfall" || quote["status"] != "open" ||
		quote["amount_usd"] != 0.002009 || env.Details["shortfall_usd"] != 0.002009 ||
		env.Details["required_usd"] != 0.002109 || env.Details["available_usd"] != 0.0001 ||
		env.Details["job_id"] != j.ID || env.RecommendedAction == "" {
		t.Errorf("402: got %s %q %v, want insufficient_balance with a job_shortfall quote of 0.002009", env.Code,
			env.RecommendedAction, env.Details)
	}
	if after := state(); after != before {
		t.Errorf("the refused edit changed the job or the money:\nbefore %s\nafter  %s", before, after)
	}
	bal := balanceAgrees(t, c)
	if bal.HeldUSD != held256 || bal.OpenQuoteCount != 1 {
		t.Errorf("balance after the 402: got %+v, want %d held and the one quote", bal, held256)
	}
	if qs := quotesOf(t, c, "?quote_type=job_shortfall"); qs.Total != 1 || qs.Quotes[0].ID != quote["id"] {
		t.Errorf("quotes: got %+v, want the shortfall quote", qs)
	}

	grant(t, f.e, poor.ID, 2009)
	var got apiv1.Job
	patchRequirements(t, c, j.ID, map[string]any{"memory_mb": 4096}).JSON(t, http.StatusOK, &got)
	if *got.Requirements.MemoryMB != 4096 || billingOf(t, got.Summary).Hold.AmountUSD != held4096 {
		t.Errorf("funded resend: got %s hold %+v, want 4096 MB and %d held", mustJSON(t, got.Requirements),
			billingOf(t, got.Summary).Hold, held4096)
	}
	if bal := balanceAgrees(t, c); bal.AvailableUSD != 0 || bal.HeldUSD != held4096 {
		t.Errorf("balance after the funded edit: got %+v, want all %d held", bal, held4096)
	}
	if evs := requirementsEvents(t, c, j.ID); len(evs) != 1 || evs[0]["rate_usd_per_hour"] != float64(rate4096)/1e6 {
		t.Errorf("events: got %v, want the one applied edit", evs)
	}
}

// An attempt that was running when the edit came is metered at the rate it
// was claimed at; the retry runs at the new one. The hold covers both: the
// running attempt at its own rate, the retry at the new rate.
func testRepriceRunningAttempt(t *testing.T, f *fixture) {
	c := f.member
	j := submitSmall(t, c, fixtureProject, 1, 1)
	a := claimAttempt(t, f, j.ID)
	start := f.e.Clock.Now()
	if err := f.e.Jobs.AttemptStarted(t.Context(), a, start); err != nil {
		t.Fatal(err)
	}

	var got apiv1.Job
	patchRequirements(t, c, j.ID, map[string]any{"memory_mb": 512}).JSON(t, http.StatusOK, &got)
	if h := holdOf(t, c, j.ID); h.AmountUSD != held256+held512 {
		t.Errorf("hold: got %v, want %d (the running attempt at its rate, the retry at the new one)", h.AmountUSD, held256+held512)
	}

	f.e.Clock.Advance(120 * time.Second)
	o := fail
	o.StartedAt, o.EndedAt = start, start.Add(120*time.Second)
	if err := f.e.Jobs.AttemptFinished(t.Context(), a, &o, nil, ""); err != nil {
		t.Fatal(err)
	}
	runAttempt(t, f, j.ID, 120*time.Second, succeed)

	// 120 s at 27844 per hour is 929 (at 28688 it would be 957); the retry
	// at 28688 is 957.
	var tl apiv1.TaskList
	c.Get(t, jobPath(j.ID, "/tasks")).JSON(t, http.StatusOK, &tl)
	atts := tl.Tasks[0].Attempts
	if len(atts) != 2 || atts[0].Status != "failed" || atts[0].CostUSD != 929 || atts[1].Status != "succeeded" ||
		atts[1].CostUSD != 957 {
		t.Fatalf("attempts: got %s, want the failed one at 929 (old rate), the retry at 957 (new rate)", mustJSON(t, atts))
	}
	done := getJob(t, c, j.ID)
	b := billingOf(t, done.Summary)
	if done.Status != "completed" || b.Cost.MeteredUSD != 929+957 || b.Hold.CapturedUSD != 929+957 {
		t.Errorf("ended job: got %s cost %+v hold %+v, want completed, %d metered and captured", done.Status, b.Cost, b.Hold, 929+957)
	}
	charges := ledgerOf(t, c, "?entry_type=job_charge")
	if charges.Total != 1 || charges.Entries[0].AmountUSD != -(929+957) || charges.Entries[0].Reference != j.ID {
		t.Errorf("job charges: got %+v, want one of -%d", charges, 929+957)
	}
	balanceAgrees(t, c)
}

// A job cancelled while an attempt from before the edit runs is metered,
// for that attempt, at the rate it was claimed at.
func testRepriceCancelRunning(t *testing.T, f *fixture) {
	c := f.member
	j := submitSmall(t, c, fixtureProject, 1, 0)
	a := claimAttempt(t, f, j.ID)
	if err := f.e.Jobs.AttemptStarted(t.Context(), a, f.e.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	patchRequirements(t, c, j.ID, map[string]any{"memory_mb": 4096}).Want(t, http.StatusOK)
	f.e.Clock.Advance(120 * time.Second)
	c.Put(t, jobPath(j.ID, "/cancel"), nil).Want(t, http.StatusOK)
	var tl apiv1.TaskList
	c.Get(t, jobPath(j.ID, "/tasks")).JSON(t, http.StatusOK, &tl)
	if atts := tl.Tasks[0].Attempts; len(atts) != 1 || atts[0].CostUSD != 929 || atts[0].BilledSeconds != 120 {
		t.Errorf("cancelled attempt: got %s, want 120 s at the old rate, 929", mustJSON(t, atts))
	}
	if h := holdOf(t, c, j.ID); h.CapturedUSD != 929 {
		t.Errorf("hold: got %+v, want 929 captured", h)
	}
	balanceAgrees(t, c)
}
