package jobview

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/job/submit"
	"github.com/skiffhq/skiff/internal/store"
)

// summaryBilling are the billing fields of a job's summary, in the order
// they are shown.
type summaryBilling struct {
	Estimate  json.RawMessage `json:"billing_estimate,omitempty"`
	Admission json.RawMessage `json:"billing_admission,omitempty"`
	Hold      *apiv1.JobHold  `json:"billing_hold,omitempty"`
	Cost      apiv1.JobCost   `json:"cost"`
}

// withBilling adds the job's billing to its summary: billing_estimate and
// billing_admission as admission stored them, billing_hold when the job
// holds funds, and cost (see apiv1.JobCost). They are read fresh on every
// view, so a job's summary shows its hold captured and its cost grow.
func (s *Service) withBilling(ctx context.Context, j *store.Job, summary json.RawMessage) (json.RawMessage, error) {
	h, err := s.store.HoldGetByJob(ctx, j.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		h = nil
	case err != nil:
		return nil, fmt.Errorf("hold of %s: %w", j.ID, err)
	}
	meter, err := s.store.JobMeterTotal(ctx, j.ID)
	if err != nil {
		return nil, fmt.Errorf("cost of %s: %w", j.ID, err)
	}
	return addBilling(j, summary, h, meter)
}

// AdmittedSummary is the summary of a job just admitted queued, with the
// hold its admission reserved (job.Service.SubmitHeld): every task queued,
// nothing metered. It is what SummaryOf would read right after the commit,
// without reading it back.
func AdmittedSummary(j *store.Job, hold *store.Hold) (json.RawMessage, error) {
	summary, err := job.MarshalSummary(liveSummary(map[store.TaskStatus]int64{store.TaskQueued: j.TaskCount}))
	if err != nil {
		return nil, err
	}
	return addBilling(j, summary, hold, &store.JobMeter{})
}

// addBilling is withBilling for a job whose hold (nil: none) and meter
// are known.
func addBilling(j *store.Job, summary json.RawMessage, h *store.Hold, meter *store.JobMeter) (json.RawMessage, error) {
	var b summaryBilling
	var stored map[string]json.RawMessage
	if json.Unmarshal(j.Billing, &stored) == nil {
		b.Estimate, b.Admission = stored["billing_estimate"], stored["billing_admission"]
	}
	b.Cost = apiv1.JobCost{ChargedUSD: apiv1.USD(meter.CostMicros), MeteredUSD: apiv1.USD(meter.CostMicros),
		BilledSeconds: meter.BilledSeconds}
	if h != nil {
		v := billing.JobHoldView(h)
		b.Hold = &v
		if h.Status == store.HoldActive {
			// A capture never charges more than the hold.
			b.Cost.ChargedUSD = apiv1.USD(min(meter.CostMicros, h.AmountMicros))
		} else {
			b.Cost.ChargedUSD = apiv1.USD(h.CapturedMicros)
		}
	}
	fields, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	// The summary is an object the service wrote, without these fields:
	// they are appended to it rather than decoding and encoding the whole
	// (possibly large) aggregate again.
	base := bytes.TrimSpace(summary)
	if len(base) < 2 || base[0] != '{' || base[len(base)-1] != '}' {
		return nil, fmt.Errorf("summary of %s is not an object", j.ID)
	}
	if len(bytes.TrimSpace(base[1:len(base)-1])) == 0 {
		return fields, nil
	}
	out := make([]byte, 0, len(base)+len(fields))
	out = append(out, base[:len(base)-1]...)
	out = append(out, ',')
	return append(out, fields[1:]...), nil
}

// PresetList is GET /api/v1/presets: the operator's presets, resolved, at
// the current rates, cheapest first.
func (s *Service) PresetList() apiv1.PresetList {
	r := s.billing.Rates()
	out := apiv1.PresetList{Presets: []apiv1.Preset{}, Pricing: apiv1.Pricing{
		MarketRates: apiv1.UnitRates{CPUCoreHourUSD: apiv1.USD(r.CPUCoreHourMicros),
			MemoryGBHourUSD: apiv1.USD(r.MemoryGBHourMicros), GPUHourUSD: apiv1.USD(r.GPUHourMicros)},
		MarkupPercent: billing.MarkupPercent, DedicatedPercent: r.DedicatedPercent,
		MinBilledSeconds: billing.MinBilledSeconds, MeteredPer: "second",
	}}
	for _, name := range submit.PresetNames(s.limits) {
		reqs, _ := submit.ResolvePreset(s.limits, name)
		shared, dedicated := job.CapacityOf(reqs, apiv1.PlacementShared), job.CapacityOf(reqs, apiv1.PlacementDedicated)
		rate := r.BilledMicrosPerHour(shared)
		_, minimum := billing.AttemptCost(rate, 0, 0)
		out.Presets = append(out.Presets, apiv1.Preset{
			Name: name, Requirements: reqs.API(),
			ResourceClass:        billing.ResourceClass(billing.JobShape{Capacity: shared, Profile: reqs.Profile}),
			MarketRateUSDPerHour: apiv1.USD(r.MarketMicrosPerHour(shared)), MarkupPercent: billing.MarkupPercent,
			RateUSDPerHour: apiv1.USD(rate), DedicatedRateUSDPerHour: apiv1.USD(r.BilledMicrosPerHour(dedicated)),
			MinimumAttemptUSD: apiv1.USD(minimum),
		})
	}
	sort.SliceStable(out.Presets, func(a, b int) bool { return out.Presets[a].RateUSDPerHour < out.Presets[b].RateUSDPerHour })
	out.Count = len(out.Presets)
	return out
}
