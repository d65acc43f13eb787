package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
// running attempt keeps the resources it was placed with; the new ones
// apply to the task's next attempt (a retry or requeue) and to every task
// not yet started. Tasks that ended keep theirs.
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
		if err := s.checkRate(j, sub, reqs); err != nil {
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
		now := s.clock.Now()
		err = s.store.InTx(ctx, func(q store.Querier) error {
			n, err := q.TaskSetRequirements(ctx, &store.TaskSetRequirementsParams{JobID: j.ID, Requirements: api,
				CPU: reqs.CPU, MemoryMB: reqs.MemoryMB, GPUs: reqs.GPUCount, Request: request, PrevRequest: j.Request, Now: now})
			if err != nil {
				return err
			}
			data, _ := json.Marshal(map[string]any{"requirements": reqs.API(), "previous": sub.Requirements.API(),
				"tasks_updated": n})
			return q.JobEventCreate(ctx, &store.JobEvent{ID: id.New(id.Event), JobID: j.ID,
				Kind: "job.requirements_updated", Data: data, CreatedAt: now})
		})
		switch {
		case errors.Is(err, store.ErrConflict):
			continue // ended or edited meanwhile: read it again
		case errors.Is(err, store.ErrNotFound):
			return nil, fault.NotFound("job", jobID)
		case err != nil:
			return nil, fmt.Errorf("edit requirements: %w", err)
		}
		s.wake() // queued tasks may fit hosts they did not fit before
		return s.Get(ctx, accountID, jobID)
	}
	return nil, fault.Conflict("edit_conflict", "Read the job again and resend the patch.",
		"job %s kept changing while its requirements were edited", jobID)
}

// checkRate refuses a requirements change that would change what the job
// is billed per hour. A job keeps the rate it was admitted at (its hold was
// reserved for it, and its attempts are metered at it), so the capacity
// class it pays for must stay the one it runs on: a change to a costlier
// class would run at the cheaper price, one to a cheaper class would be
// overcharged. Both are refused; the job is cancelled and resubmitted
// instead, which prices and holds it afresh. Changes that keep the price
// (storage_gb, gpu_memory_mb, min_single_core_score, or capacity priced
// the same) are allowed. Old and new capacity are compared at the current
// rates, so a rate change since admission does not refuse every edit.
func (s *Service) checkRate(j *store.Job, sub submit.Submission, reqs submit.Requirements) error {
	r := s.billing.Rates()
	oldCap, newCap := capacityOf(sub.Requirements, sub.PlacementPolicy), capacityOf(reqs, sub.PlacementPolicy)
	oldRate, newRate := r.BilledMicrosPerHour(oldCap), r.BilledMicrosPerHour(newCap)
	if oldRate == newRate {
		return nil
	}
	oldClass := billing.ResourceClass(billing.JobShape{Capacity: oldCap, Profile: sub.Requirements.Profile})
	newClass := billing.ResourceClass(billing.JobShape{Capacity: newCap, Profile: reqs.Profile})
	return fault.Invalid("requirements_change_rate",
		"Cancel the job (PUT /api/v1/jobs/"+j.ID+"/cancel) and resubmit it with the new requirements; "+
			"the new job is priced and held at its own rate. Changes that keep the rate (storage_gb, gpu_memory_mb, "+
			"min_single_core_score, or capacity priced the same) can be patched.",
		"the new requirements (%s, %s USD per hour) would change the job's billed rate (%s, %s USD per hour); "+
			"a job keeps the rate it was admitted at", newClass, apiv1.USD(newRate), oldClass, apiv1.USD(oldRate)).
		With("current_resource_class", oldClass).With("current_rate_usd_per_hour", apiv1.USD(oldRate)).
		With("new_resource_class", newClass).With("new_rate_usd_per_hour", apiv1.USD(newRate)).
		With("admitted_rate_usd_per_hour", apiv1.USD(j.RateMicrosPerHour))
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
