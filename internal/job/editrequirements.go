package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/job/submit"
	"github.com/skiffhq/skiff/internal/store"
)

// editAttempts is how often EditRequirements re-reads a job that another
// edit changed under it before giving up with a conflict.
const editAttempts = 3

// EditRequirements applies a requirements patch to a job that has not
// ended (PATCH /api/v1/jobs/:id/requirements; see submit.EditRequirements
// for the patch rules). Its queued and running tasks take the new
// requirements and the job's request records them, in one transaction. A
// running attempt keeps the resources it was placed with, and the rate it
// was claimed at; the new ones apply to the task's next attempt (a retry or
// requeue) and to every task not yet started. Tasks that ended keep theirs.
//
// An edit that changes the billed rate re-prices the job in the same
// transaction (see reprice): the job's rate becomes the new requirements'
// rate at the current rates, and its hold grows from the available balance
// when it no longer covers what is left to run. When the balance cannot
// cover the increase nothing changes and the answer is a 402 carrying a
// job_shortfall quote for the difference, as at submission.
func (s *Service) EditRequirements(ctx context.Context, accountID, jobID string, patch map[string]json.RawMessage) (*store.Job, error) {
	for range editAttempts {
		j, err := s.Get(ctx, accountID, jobID)
		if err != nil {
			return nil, err
		}
		if j.Status.IsTerminal() {
			return nil, terminalConflict(j, "edit")
		}
		sub := submissionOf(j)
		reqs, err := submit.EditRequirements(sub.Requirements, submit.BaseRequirements(s.limits, sub.Preset), patch)
		if err != nil {
			return nil, err
		}
		request, err := withRequirements(j.Request, reqs)
		if err != nil {
			return nil, err
		}
		api, err := json.Marshal(reqs.API())
		if err != nil {
			return nil, err
		}
		price, err := s.priceEdit(j, sub, reqs)
		if err != nil {
			return nil, err
		}
		now := s.clock.Now()
		var short int64 // what the hold lacked, when the balance could not cover it
		err = s.store.InTx(ctx, func(q store.Querier) error {
			n, err := q.TaskSetRequirements(ctx, &store.TaskSetRequirementsParams{JobID: j.ID, Requirements: api,
				CPU: reqs.CPU, MemoryMB: reqs.MemoryMB, GPUs: reqs.GPUCount, Request: request, PrevRequest: j.Request,
				RateMicrosPerHour: price.rate, Billing: price.billing, Now: now})
			if err != nil {
				return err
			}
			data := map[string]any{"requirements": reqs.API(), "previous": sub.Requirements.API(), "tasks_updated": n}
			if price.billing != nil {
				// After TaskSetRequirements: the job's open tasks are locked
				// (no attempt of theirs can be claimed or end meanwhile),
				// and the account is locked last, as a hold's capture does.
				var rp *repriced
				if rp, err = s.reprice(ctx, q, j, sub, price, now); err != nil {
					short = rp.short()
					return err
				}
				data["rate_usd_per_hour"], data["previous_rate_usd_per_hour"] = apiv1.USD(price.rate), apiv1.USD(j.RateMicrosPerHour)
				data["required_hold_usd"], data["hold_usd"] = apiv1.USD(rp.required), apiv1.USD(rp.hold)
				data["hold_grown_usd"] = apiv1.USD(rp.grown)
			}
			raw, err := json.Marshal(data)
			if err != nil {
				return err
			}
			return q.JobEventCreate(ctx, &store.JobEvent{ID: id.New(id.Event), JobID: j.ID,
				Kind: "job.requirements_updated", Data: raw, CreatedAt: now})
		})
		switch {
		case errors.Is(err, billing.ErrInsufficient):
			return nil, s.editShortfall(ctx, j, short)
		case errors.Is(err, store.ErrConflict):
			continue // ended, edited or its hold changed meanwhile: read it again
		case errors.Is(err, store.ErrNotFound):
			return nil, fault.NotFound("job", jobID)
		case err != nil:
			return nil, fmt.Errorf("edit requirements: %w", err)
		}
		s.waker.Wake() // queued tasks may fit hosts they did not fit before
		return s.Get(ctx, accountID, jobID)
	}
	return nil, fault.Conflict("edit_conflict", "Read the job again and resend the patch.",
		"job %s kept changing while its requirements were edited", jobID)
}

// editPrice is what an edit does to a job's price: rate 0 and billing nil
// when the billed rate stays as it is.
type editPrice struct {
	rate       int64 // the new requirements' billed rate, micro-USD per hour
	perAttempt int64 // one attempt of the new requirements, held at the runtime cap
	capS       int64
	billing    json.RawMessage // the job's stored billing with the new estimate
}

// priceEdit prices the new requirements. Old and new capacity are compared
// at the current rates, so that an edit keeping the price (storage_gb,
// gpu_memory_mb, min_single_core_score, or capacity priced the same) keeps
// the job's rate even when market rates moved since admission. Otherwise the
// new rate is the current one of the new capacity, and billing_estimate
// becomes the estimate of the whole job at it (billing_admission stays: it
// records the admission).
func (s *Service) priceEdit(j *store.Job, sub submit.Submission, reqs submit.Requirements) (editPrice, error) {
	r := s.billing.Rates()
	oldCap, newCap := CapacityOf(sub.Requirements, sub.PlacementPolicy), CapacityOf(reqs, sub.PlacementPolicy)
	if r.BilledMicrosPerHour(oldCap) == r.BilledMicrosPerHour(newCap) {
		return editPrice{}, nil
	}
	quote, rate := s.billing.Quote(billing.JobShape{Tasks: int(j.TaskCount), MaxRetries: sub.MaxRetries,
		TimeoutS: sub.TimeoutS, RuntimeHintS: sub.RuntimeHintS, Profile: reqs.Profile,
		ReliabilityMode: sub.ReliabilityMode, Capacity: newCap})
	stored := map[string]json.RawMessage{}
	if len(j.Billing) > 0 {
		if err := json.Unmarshal(j.Billing, &stored); err != nil {
			return editPrice{}, fmt.Errorf("job %s: stored billing: %w", j.ID, err)
		}
	}
	est, err := json.Marshal(quote.Estimate)
	if err != nil {
		return editPrice{}, err
	}
	stored["billing_estimate"] = est
	raw, err := json.Marshal(stored)
	if err != nil {
		return editPrice{}, err
	}
	return editPrice{rate: rate, perAttempt: int64(quote.Estimate.PerAttemptUSD), capS: quote.Estimate.RuntimeCapS,
		billing: raw}, nil
}

// repriced is what reprice found: the hold the job now needs, the hold it
// has (after growing), and by how much it grew.
type repriced struct {
	required, hold, grown int64
	lacking               int64 // the increase the balance could not cover
}

func (r *repriced) short() int64 {
	if r == nil {
		return 0
	}
	return r.lacking
}

// reprice checks, in the edit's transaction, that the job's hold covers the
// job at its new rate, and grows it from the available balance when it does
// not. What the job needs is what it was metered so far, plus, for each
// open task, the attempts its retry budget still allows (1 + max_retries
// less the retries it used; free requeues use none): an attempt already
// claimed at the rate it was claimed at, the others at the new rate, each
// held for the runtime cap as at admission. The hold never shrinks here;
// its capture releases what was not used. ErrInsufficient (with lacking set)
// when the balance cannot cover the increase.
func (s *Service) reprice(ctx context.Context, q store.Querier, j *store.Job, sub submit.Submission, price editPrice, now time.Time) (*repriced, error) {
	h, err := q.HoldGetByJob(ctx, j.ID)
	if errors.Is(err, store.ErrNotFound) {
		return &repriced{}, nil // admitted before holds existed: nothing to cover
	}
	if err != nil {
		return nil, fmt.Errorf("hold of %s: %w", j.ID, err)
	}
	if h.Status != store.HoldActive {
		return nil, store.ErrConflict // captured: the job ended meanwhile
	}
	tasks, err := q.TaskList(ctx, j.ID)
	if err != nil {
		return nil, err
	}
	atts, err := q.AttemptList(ctx, j.ID)
	if err != nil {
		return nil, err
	}
	required := holdNeeded(j, sub.MaxRetries, tasks, atts, price.capS, price.perAttempt)
	rp := &repriced{required: required, hold: h.AmountMicros}
	if required <= h.AmountMicros {
		return rp, nil
	}
	grown, _, err := s.billing.Grow(ctx, q, h, required, now)
	if errors.Is(err, billing.ErrInsufficient) {
		rp.lacking = required - h.AmountMicros
		return rp, err
	}
	if err != nil {
		return nil, err
	}
	rp.hold, rp.grown = grown.AmountMicros, grown.AmountMicros-h.AmountMicros
	return rp, nil
}

// editShortfall is the 402 of an edit whose hold increase the balance
// cannot cover: a job_shortfall quote for the difference, as at submission.
func (s *Service) editShortfall(ctx context.Context, j *store.Job, more int64) error {
	what := "this job's hold increase for the new requirements"
	err := s.billing.Shortfall(ctx, j.AccountID, more, what)
	if err == nil {
		// Funds arrived in between: the caller may resend at once.
		return fault.Conflict("balance_changed", "Resend the same request.", "the balance changed during the edit")
	}
	if fe, ok := fault.As(err); ok {
		return fe.With("job_id", j.ID).With("hold_increase_usd", apiv1.USD(more))
	}
	return err
}

// attemptRate is the rate attempt a is metered at: the one recorded when it
// was claimed, or the job's for an attempt that has none recorded.
func attemptRate(a *store.Attempt, j *store.Job) int64 {
	if a.RateMicrosPerHour > 0 {
		return a.RateMicrosPerHour
	}
	return j.RateMicrosPerHour
}

// terminalConflict is the 409 of a change to a job that has ended.
func terminalConflict(j *store.Job, what string) error {
	return fault.Conflict("job_terminal", "The job has ended; submit a new job with the requirements you need.",
		"cannot %s job %s: it is already %s", what, j.ID, j.Status).With("status", string(j.Status))
}

// withRequirements is a stored request with its resolved requirements
// replaced; its other fields stay as stored.
func withRequirements(request json.RawMessage, reqs submit.Requirements) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if len(request) > 0 {
		if err := json.Unmarshal(request, &m); err != nil {
			return nil, fmt.Errorf("stored request: %w", err)
		}
	}
	raw, err := json.Marshal(reqs)
	if err != nil {
		return nil, err
	}
	m["Requirements"] = raw // submit.Submission is stored with Go field names
	return json.Marshal(m)
}

// submissionOf reads the normalised submission stored with a job. A job
// stored without one (older rows, tests) reads as the zero submission.
func submissionOf(j *store.Job) submit.Submission {
	var sub submit.Submission
	_ = json.Unmarshal(j.Request, &sub)
	return sub
}
