package jobview

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/store"
)

// Metrics aggregates a job's timing, attempts and cost (GET
// /api/v1/jobs/:id/metrics).
func (s *Service) Metrics(ctx context.Context, j *store.Job) (*apiv1.JobMetrics, error) {
	atts, err := s.store.AttemptList(ctx, j.ID)
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	counts, err := s.TaskCounts(ctx, j)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	m := &apiv1.JobMetrics{JobID: j.ID, Status: string(j.Status), Attempts: map[string]int64{}, Tasks: counts,
		AttemptsTotal: int64(len(atts))}
	var firstStart *time.Time
	runtime := map[string]time.Duration{}
	var cost int64
	for _, a := range atts {
		m.Attempts[string(a.Status)]++
		m.BilledSeconds += a.BilledSeconds
		cost += a.CostMicros
		switch a.RetryDecision {
		case "retry":
			m.Requeues.Retries++
		case "requeue_free":
			m.Requeues.Free++
		}
		if a.StartedAt != nil {
			if firstStart == nil || a.StartedAt.Before(*firstStart) {
				firstStart = a.StartedAt
			}
			runtime[a.TaskID] += endOr(a.EndedAt, now).Sub(*a.StartedAt)
		}
	}
	m.Requeues.Total = m.Requeues.Retries + m.Requeues.Free
	m.CostUSD = apiv1.USD(cost)
	start := j.StartedAt
	if firstStart != nil && (start == nil || firstStart.Before(*start)) {
		start = firstStart
	}
	if start == nil {
		end := now
		if j.FinishedAt != nil {
			end = *j.FinishedAt
		}
		m.QueueTimeS = secondsOf(max(end.Sub(j.SubmittedAt), 0))
	} else {
		m.QueueTimeS = secondsOf(max(start.Sub(j.SubmittedAt), 0))
		rt := secondsOf(max(endOr(j.FinishedAt, now).Sub(*start), 0))
		m.RunTimeS = &rt
	}
	// Durations of the tasks that ended after running: a task ends when
	// its last attempt ends without a requeue.
	ended := map[string]bool{}
	for _, a := range atts {
		if a.EndedAt != nil && a.RetryDecision != "retry" && a.RetryDecision != "requeue_free" && a.StartedAt != nil {
			ended[a.TaskID] = true
		}
	}
	var ds []float64
	for id := range ended {
		ds = append(ds, secondsOf(runtime[id]))
	}
	m.TaskDurationsS = durationStats(ds)
	return m, nil
}

// durationStats: nearest-rank percentiles.
func durationStats(ds []float64) apiv1.DurationStats {
	st := apiv1.DurationStats{Count: int64(len(ds))}
	if len(ds) == 0 {
		return st
	}
	slices.Sort(ds)
	rank := func(p float64) *float64 {
		i := int(math.Ceil(p/100*float64(len(ds)))) - 1
		v := ds[max(i, 0)]
		return &v
	}
	st.P50, st.P95 = rank(50), rank(95)
	st.Max = &ds[len(ds)-1]
	return st
}

// Leases counts a job's leases (its attempts) for GET
// /api/v1/leases/:job_id. Only best_effort admission exists, so no job
// holds a reservation.
func (s *Service) Leases(ctx context.Context, j *store.Job) (*apiv1.LeaseStatus, error) {
	atts, err := s.store.AttemptList(ctx, j.ID)
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	out := &apiv1.LeaseStatus{JobID: j.ID, Reservation: json.RawMessage("null")}
	out.Leases.Total = int64(len(atts))
	for _, a := range atts {
		switch {
		case a.RetryDecision == "retry" || a.RetryDecision == "requeue_free":
			out.Leases.Requeued++
		case a.Status == store.AttemptSucceeded:
			out.Leases.Done++
		case a.Status == store.AttemptFailed:
			out.Leases.Failed++
		}
	}
	return out, nil
}
