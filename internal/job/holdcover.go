package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/job/submit"
	"github.com/skiffhq/skiff/internal/store"
)

// This file keeps a job's hold covering what the job can still be billed.
// Admission holds tasks x (1 + max_retries) attempts at the runtime cap;
// requeues outside the retry budget (exit 137, OOM kills, declared infra
// failures) are billed since issue 28 but were not in that count, and an
// attempt may run past runtime_hint_s up to timeout_s. Capture never
// charges more than the hold, so without this such attempts would be free.

// holdNeeded is what job j's hold must cover: what its attempts were
// metered so far, plus, for each task that has not ended, the attempts its
// retry budget still allows (1 + max_retries less the retries it used;
// requeues outside the budget use none), each held for the runtime cap
// capS: an attempt already claimed at the rate it was claimed at, the
// others at perAttempt.
func holdNeeded(j *store.Job, maxRetries int, tasks []*store.Task, atts []*store.Attempt, capS, perAttempt int64) int64 {
	open := map[string]*store.Attempt{}
	var need int64
	for _, a := range atts {
		need += a.CostMicros
		if a.Status == store.AttemptAssigned || a.Status == store.AttemptRunning {
			open[a.TaskID] = a
		}
	}
	for _, t := range tasks {
		if t.Status.IsTerminal() {
			continue
		}
		left := max(0, 1+int64(maxRetries)-t.RetriesUsed)
		if a := open[t.ID]; a != nil && left > 0 {
			need += billing.AttemptEstimate(attemptRate(a, j), capS)
			left--
		}
		need += left * perAttempt
	}
	return need
}

// holdShortError says that a job's hold could not grow to cover another
// attempt: it needed more than the account had available.
type holdShortError struct {
	hold, need, avail int64
}

func (e *holdShortError) Error() string {
	return fmt.Sprintf("the account's available balance (%s USD) could not cover another attempt: "+
		"the job's hold of %s USD would have to grow by %s USD; fund the account and resubmit the job",
		apiv1.USD(e.avail), apiv1.USD(e.hold), apiv1.USD(e.need-e.hold))
}

// needsCover says whether an attempt's end may leave its job's hold short,
// so that coverHold must look: only when the attempt was billed and either
// requeued outside the retry budget or cost more than the hold allowed for
// one attempt (it ran past runtime_hint_s). Other ends cannot raise what
// the job needs above what admission (or a re-pricing edit) held, and the
// look reads every task and attempt of the job.
func needsCover(d Decision, cost, rate int64, sub *submit.Submission) bool {
	if cost <= 0 {
		return false
	}
	return d.RetryDecision == "requeue_free" ||
		cost > billing.AttemptEstimate(rate, billing.RuntimeCap(sub.TimeoutS, sub.RuntimeHintS))
}

// coverHold makes job jobID's hold cover what the job can still be billed
// (holdNeeded, at the job's current rate), in q's transaction, after an
// attempt's end was recorded in it (its task and attempt are locked). When
// the hold is short it grows from the account's available balance
// (billing.Grow). When the balance cannot cover that: with requeued set
// (the end requeued its task) a *holdShortError, so that the caller fails
// the task instead of running an attempt nobody pays for; otherwise the
// hold grows by what is available, and its capture charges at most the hold.
// It returns by how much the hold grew.
func (s *Service) coverHold(ctx context.Context, q store.Querier, jobID string, sub *submit.Submission, requeued bool, now time.Time) (int64, error) {
	// Lock order: task and attempt (the caller's), job, account, as a
	// requirements edit takes them.
	if err := q.JobLock(ctx, jobID); err != nil {
		return 0, err
	}
	j, err := q.JobGetByID(ctx, jobID)
	if err != nil {
		return 0, fmt.Errorf("job %s: %w", jobID, err)
	}
	// The hold is read under the account lock, which every growth takes,
	// so it cannot change before it grows here.
	if err := q.AccountLock(ctx, j.AccountID); err != nil {
		return 0, fmt.Errorf("lock account: %w", err)
	}
	h, err := q.HoldGetByJob(ctx, jobID)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil // admitted before holds existed: nothing to cover
	}
	if err != nil {
		return 0, fmt.Errorf("hold of %s: %w", jobID, err)
	}
	if h.Status != store.HoldActive {
		return 0, nil
	}
	tasks, err := q.TaskList(ctx, jobID)
	if err != nil {
		return 0, err
	}
	atts, err := q.AttemptList(ctx, jobID)
	if err != nil {
		return 0, err
	}
	capS := billing.RuntimeCap(sub.TimeoutS, sub.RuntimeHintS)
	need := holdNeeded(j, sub.MaxRetries, tasks, atts, capS, billing.AttemptEstimate(j.RateMicrosPerHour, capS))
	if need <= h.AmountMicros {
		return 0, nil
	}
	grown, avail, err := s.billing.Grow(ctx, q, h, need, now)
	switch {
	case errors.Is(err, billing.ErrInsufficient) && requeued:
		return 0, &holdShortError{hold: h.AmountMicros, need: need, avail: avail}
	case errors.Is(err, billing.ErrInsufficient) && avail > 0:
		grown, _, err = s.billing.Grow(ctx, q, h, h.AmountMicros+avail, now)
	case errors.Is(err, billing.ErrInsufficient):
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return grown.AmountMicros - h.AmountMicros, nil
}
