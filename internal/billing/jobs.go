package billing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
)

// JobShape is what the price of a job depends on.
type JobShape struct {
	Tasks           int
	MaxRetries      int
	TimeoutS        int64
	RuntimeHintS    int64 // 0: none
	Capacity        Capacity
	Profile         string // cpu or gpu
	ReliabilityMode string
}

// Estimate is summary.billing_estimate: the authoritative quote of a
// submission (spec 1.6). The hold is its total.
type Estimate struct {
	TaskCount               int       `json:"task_count"`
	AttemptsPerTask         int       `json:"attempts_per_task"` // 1 + max_retries
	RuntimeCapS             int64     `json:"runtime_cap_s"`     // timeout_s, or runtime_hint_s when smaller
	BilledSecondsPerAttempt int64     `json:"billed_seconds_per_attempt"`
	MarketRateUSDPerHour    apiv1.USD `json:"market_rate_usd_per_hour"`
	MarkupPercent           int       `json:"markup_percent"`
	RateUSDPerHour          apiv1.USD `json:"rate_usd_per_hour"` // billed: market plus markup
	PerAttemptUSD           apiv1.USD `json:"per_attempt_usd"`
	TotalUSD                apiv1.USD `json:"total_usd"`
	Authoritative           bool      `json:"authoritative"`
}

// Admission is summary.billing_admission.
type Admission struct {
	ResourceClass     string    `json:"resource_class"`
	RuntimeClass      string    `json:"runtime_class"`
	ReliabilityMode   string    `json:"reliability_mode"`
	EstimatedHoldUSD  apiv1.USD `json:"estimated_hold_usd"`
	AvailableUSD      apiv1.USD `json:"available_usd"` // when admitted, before the hold
	BalanceSufficient bool      `json:"balance_sufficient"`
}

// JobBilling is stored with a job and shown in its summary.
type JobBilling struct {
	Estimate  Estimate  `json:"billing_estimate"`
	Admission Admission `json:"billing_admission"`
}

// Quote prices a job shape at the current rates: tasks x (1 + max_retries)
// x rate x max(60 s, runtime cap), each attempt rounded up to a micro-USD
// as metering rounds it.
func (s *Service) Quote(shape JobShape) (JobBilling, int64) {
	r := s.rates.Rates()
	rate := r.BilledMicrosPerHour(shape.Capacity)
	capS := RuntimeCap(shape.TimeoutS, shape.RuntimeHintS)
	secs, perAttempt := AttemptCost(rate, time.Duration(capS)*time.Second, capS)
	attempts := 1 + shape.MaxRetries
	total := int64(shape.Tasks) * int64(attempts) * perAttempt
	return JobBilling{
		Estimate: Estimate{
			TaskCount: shape.Tasks, AttemptsPerTask: attempts, RuntimeCapS: capS, BilledSecondsPerAttempt: secs,
			MarketRateUSDPerHour: apiv1.USD(r.MarketMicrosPerHour(shape.Capacity)), MarkupPercent: MarkupPercent,
			RateUSDPerHour: apiv1.USD(rate), PerAttemptUSD: apiv1.USD(perAttempt), TotalUSD: apiv1.USD(total),
			Authoritative: true,
		},
		Admission: Admission{ResourceClass: ResourceClass(shape), RuntimeClass: RuntimeClass(capS),
			ReliabilityMode: shape.ReliabilityMode, EstimatedHoldUSD: apiv1.USD(total)},
	}, rate
}

// RuntimeCap is the runtime an estimate holds for each attempt: timeout_s,
// or runtime_hint_s when it is set and smaller.
func RuntimeCap(timeoutS, runtimeHintS int64) int64 {
	if runtimeHintS > 0 && runtimeHintS < timeoutS {
		return runtimeHintS
	}
	return timeoutS
}

// AttemptEstimate is what one attempt is held for at rate (micro-USD per
// hour) with a runtime cap of capS: the attempt as metering would bill it
// had it run the whole cap.
func AttemptEstimate(rate, capS int64) int64 {
	_, micros := AttemptCost(rate, time.Duration(capS)*time.Second, capS)
	return micros
}

// ResourceClass names a capacity class, e.g. "cpu-2c-4096mb" or
// "gpu-1x-8c-32768mb-dedicated".
func ResourceClass(shape JobShape) string {
	c := shape.Capacity
	cls := fmt.Sprintf("cpu-%gc-%dmb", c.CPU, c.MemoryMB)
	if c.GPUs > 0 || shape.Profile == "gpu" {
		cls = fmt.Sprintf("gpu-%dx-%gc-%dmb", c.GPUs, c.CPU, c.MemoryMB)
	}
	if c.Dedicated {
		cls += "-dedicated"
	}
	return cls
}

// RuntimeClass buckets the runtime cap: short (up to 5 minutes), standard
// (up to an hour), long (up to a day), extended.
func RuntimeClass(capS int64) string {
	switch {
	case capS <= 300:
		return "short"
	case capS <= 3600:
		return "standard"
	case capS <= 86400:
		return "long"
	}
	return "extended"
}

// ErrInsufficient is returned (wrapped) by Reserve when the available
// balance does not cover the hold.
var ErrInsufficient = errors.New("available balance does not cover the hold")

// Reserve holds amount for a job in q's transaction, in one conditional
// statement (store.HoldReserve), so that concurrent reservations cannot
// together exceed the available balance. On PostgreSQL it holds the
// account's row lock until the transaction ends: call it as the last
// write of the transaction, so that concurrent admissions of one account
// overlap in everything else. It returns the balance available before the
// hold.
func (s *Service) Reserve(ctx context.Context, q store.Querier, accountID, jobID string, amount int64, now time.Time) (*store.Hold, int64, error) {
	h, avail, err := q.HoldReserve(ctx, &store.HoldCreateParams{ID: id.New(id.Hold), AccountID: accountID, JobID: jobID,
		AmountMicros: amount, Now: now})
	if err != nil {
		return nil, 0, fmt.Errorf("reserve hold: %w", err)
	}
	if h == nil {
		return nil, avail, fmt.Errorf("%w: need %s USD, %s USD available", ErrInsufficient, apiv1.USD(amount), apiv1.USD(avail))
	}
	return h, avail, nil
}

// Grow raises a job's active hold h to amount in q's transaction, after
// locking the account (Reserve's statement takes the same row lock), so that the increase comes out of
// the available balance. It returns the balance available before the
// increase; ErrInsufficient (wrapped) when that does not cover it, and
// store.ErrConflict when the hold changed since it was read.
func (s *Service) Grow(ctx context.Context, q store.Querier, h *store.Hold, amount int64, now time.Time) (*store.Hold, int64, error) {
	if err := q.AccountLock(ctx, h.AccountID); err != nil {
		return nil, 0, fmt.Errorf("lock account: %w", err)
	}
	bal, err := q.BalanceGet(ctx, h.AccountID, now)
	if err != nil {
		return nil, 0, fmt.Errorf("balance: %w", err)
	}
	avail := bal.AvailableMicros()
	if more := amount - h.AmountMicros; more > avail {
		return nil, avail, fmt.Errorf("%w: need %s USD more, %s USD available", ErrInsufficient, apiv1.USD(more), apiv1.USD(avail))
	}
	grown, err := q.HoldGrow(ctx, &store.HoldGrowParams{ID: h.ID, PrevAmountMicros: h.AmountMicros, AmountMicros: amount, Now: now})
	if err != nil {
		return nil, avail, fmt.Errorf("grow hold %s: %w", h.ID, err)
	}
	return grown, avail, nil
}

// Capture ends a terminal job's hold, exactly once, in q's transaction (the
// one that ended the job): the metered total of its attempts, at most the
// hold, is charged to the ledger as one job_charge entry, and the hold is
// captured, partially captured or released. A job without a hold, or whose
// hold was captured already, is left alone.
func Capture(ctx context.Context, q store.Querier, jobID string, now time.Time) error {
	h, err := q.HoldGetByJob(ctx, jobID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("hold of %s: %w", jobID, err)
	}
	if h.Status != store.HoldActive {
		return nil
	}
	total, err := q.JobChargeTotal(ctx, jobID)
	if err != nil {
		return fmt.Errorf("charges of %s: %w", jobID, err)
	}
	capture := min(total, h.AmountMicros)
	status := store.HoldPartiallyCaptured
	switch capture {
	case 0:
		status = store.HoldReleased
	case h.AmountMicros:
		status = store.HoldCaptured
	}
	if _, err := q.HoldCapture(ctx, &store.HoldCaptureParams{ID: h.ID, Status: status, CapturedMicros: capture, Now: now}); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil // captured by a concurrent end: once only
		}
		return fmt.Errorf("capture hold %s: %w", h.ID, err)
	}
	if capture == 0 {
		return nil
	}
	desc := fmt.Sprintf("job %s: metered %s USD", jobID, apiv1.USD(total))
	if total > capture {
		desc += fmt.Sprintf(", capped at its hold of %s USD", apiv1.USD(h.AmountMicros))
	}
	_, err = q.LedgerEntryCreate(ctx, &store.LedgerEntryCreateParams{ID: id.New(id.Ledger), AccountID: h.AccountID,
		EntryType: EntryJobCharge, AmountMicros: -capture, Reference: jobID, Description: desc, Now: now})
	if err != nil {
		return fmt.Errorf("charge %s: %w", jobID, err)
	}
	return nil
}
