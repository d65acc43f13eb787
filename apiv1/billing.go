package apiv1

import "time"

// PageInfo closes every paged list of the account: the ledger, holds and
// quotes. The list itself sits beside it under its own name ("entries",
// "holds", "quotes"), as GET /api/v1/jobs lists "jobs".
type PageInfo struct {
	Total  int `json:"total"` // items matching the filters, all pages
	Count  int `json:"count"` // items on this page
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
}

// LedgerEntry is one append-only movement of money: credits are positive,
// debits (job charges) negative.
type LedgerEntry struct {
	ID        string `json:"id"`
	EntryType string `json:"entry_type"` // beta_credit_grant, job_charge, x402_topup, mpp_topup
	AmountUSD USD    `json:"amount_usd"`
	// Reference is what caused the entry: a job id for a job_charge, a
	// quote id for a top-up, "operator" for a grant.
	Reference   string    `json:"reference"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
}

// LedgerPage answers GET /api/v1/account/ledger, newest first.
type LedgerPage struct {
	Entries []LedgerEntry `json:"entries"`
	PageInfo
}

// Hold reserves money for a job until the job ends and it is captured
// (for what the job used; the rest is released).
type Hold struct {
	ID     string `json:"id"`
	JobID  string `json:"job_id"`
	Status string `json:"status"` // active, released, captured, partially_captured, expired
	// AmountUSD is what was reserved; CapturedUSD what the job was charged
	// when it was captured; ReleasedUSD what went back to the available
	// balance (amount minus captured once captured, 0 while active).
	// SettledAt is when it was captured: the wire name is the spec's, kept
	// from before holds said "capture" (x402 payments "settle").
	AmountUSD   USD        `json:"amount_usd"`
	CapturedUSD USD        `json:"captured_usd"`
	ReleasedUSD USD        `json:"released_usd"`
	CreatedAt   time.Time  `json:"created_at"`
	SettledAt   *time.Time `json:"settled_at"`
}

// HoldPage answers GET /api/v1/account/holds, newest first.
type HoldPage struct {
	Holds []Hold `json:"holds"`
	PageInfo
}

// QuotePage answers GET /api/v1/account/quotes, newest first.
type QuotePage struct {
	Quotes []Quote `json:"quotes"`
	PageInfo
}

// QuoteResponse answers GET /api/v1/account/quotes/:quote_id.
type QuoteResponse struct {
	Account Account `json:"account"`
	Quote   Quote   `json:"quote"`
}

// Preset is a named resource shape (spec 2.9) with what it costs now.
type Preset struct {
	Name string `json:"name"`
	// Requirements are the preset's resolved requirements: what a job
	// naming only this preset gets.
	Requirements  JobRequirements `json:"requirements"`
	ResourceClass string          `json:"resource_class"`
	// MarketRateUSDPerHour is the live market rate of one task of this
	// shape; RateUSDPerHour what is billed: market plus the markup.
	MarketRateUSDPerHour USD `json:"market_rate_usd_per_hour"`
	MarkupPercent        int `json:"markup_percent"`
	RateUSDPerHour       USD `json:"rate_usd_per_hour"`
	// DedicatedRateUSDPerHour is the billed rate with placement_policy
	// "dedicated".
	DedicatedRateUSDPerHour USD `json:"dedicated_rate_usd_per_hour"`
	// MinimumAttemptUSD is the least one attempt of one task costs: the
	// 60-second minimum at RateUSDPerHour.
	MinimumAttemptUSD USD `json:"minimum_attempt_usd"`
}

// UnitRates are the market price of each unit of capacity.
type UnitRates struct {
	CPUCoreHourUSD  USD `json:"cpu_core_hour_usd"`
	MemoryGBHourUSD USD `json:"memory_gb_hour_usd"` // per GiB
	GPUHourUSD      USD `json:"gpu_hour_usd"`       // per GPU
}

// Pricing is how every job is priced, whatever its shape.
type Pricing struct {
	MarketRates   UnitRates `json:"market_rates"`
	MarkupPercent int       `json:"markup_percent"`
	// DedicatedPercent is what placement_policy "dedicated" costs relative
	// to "shared" (150: half as much again).
	DedicatedPercent int64  `json:"dedicated_percent"`
	MinBilledSeconds int64  `json:"min_billed_seconds"`
	MeteredPer       string `json:"metered_per"` // "second"
}

// PresetList answers GET /api/v1/presets, cheapest first.
type PresetList struct {
	Presets []Preset `json:"presets"`
	Count   int      `json:"count"`
	Pricing Pricing  `json:"pricing"`
}
