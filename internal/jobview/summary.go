package jobview

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/store"
)

// SummaryOf is the summary a job shows (spec 2.4, 2.6). A job that ended
// shows the summary stored when it ended, with any field it lacks filled
// in; one that ended without a stored summary (a cancel) is summarised from
// its tasks. A job still open shows live task_outcome_counts and
// completeness, and no aggregate yet: aggregate_result null,
// aggregate_aliases {}, result_persisted and output_persisted false until
// the job ends and its results are merged. Either way the job's billing is
// added (withBilling).
func (s *Service) SummaryOf(ctx context.Context, j *store.Job) (json.RawMessage, error) {
	base, err := s.baseSummary(ctx, j)
	if err != nil {
		return nil, err
	}
	return s.withBilling(ctx, j, base)
}

func (s *Service) baseSummary(ctx context.Context, j *store.Job) (json.RawMessage, error) {
	if j.Status.IsTerminal() {
		if raw, ok := completeSummary(j.Summary); ok {
			return raw, nil
		}
		tasks, err := s.store.TaskList(ctx, j.ID)
		if err != nil {
			return nil, fmt.Errorf("list tasks: %w", err)
		}
		return job.MarshalSummary(job.Summarize(j, tasks))
	}
	counts, err := s.store.TaskCountByStatus(ctx, j.ID)
	if err != nil {
		return nil, fmt.Errorf("count tasks: %w", err)
	}
	return job.MarshalSummary(liveSummary(counts))
}

// liveSummary is the summary of a job whose tasks still run.
func liveSummary(counts map[store.TaskStatus]int64) job.Summary {
	s := job.Summary{TaskOutcomeCounts: job.CountsFrom(counts), AggregateAliases: map[string]any{}}
	c := &s.Completeness
	c.Succeeded, c.Failed, c.Cancelled = counts[store.TaskSucceeded], counts[store.TaskFailed], counts[store.TaskCancelled]
	c.Pending = counts[store.TaskQueued] + counts[store.TaskRunning]
	c.Total = c.Succeeded + c.Failed + c.Cancelled + c.Pending
	c.Fraction = 1
	if c.Total > 0 {
		c.Fraction = float64(c.Succeeded) / float64(c.Total)
	}
	return s
}

// completeSummary returns a stored summary with every field of Summary
// present (a missing or null one takes its empty value), and false when nothing
// usable was stored. Fields it does not know (a leaderboard, billing) are
// kept.
func completeSummary(stored json.RawMessage) (json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(stored, &m) != nil || m["task_outcome_counts"] == nil {
		return nil, false
	}
	empty, err := job.MarshalSummary(job.Summary{})
	if err != nil {
		return nil, false
	}
	var defaults map[string]json.RawMessage
	if json.Unmarshal(empty, &defaults) != nil {
		return nil, false
	}
	for k, v := range defaults {
		// A stored null where the API promises an object or a count is
		// filled in too; aggregate_result alone may be null.
		if cur, ok := m[k]; !ok || (k != "aggregate_result" && string(cur) == "null") {
			m[k] = v
		}
	}
	out, err := json.Marshal(m)
	return out, err == nil
}

// JobIDsWithOutput says which of jobs have a task with stdout.
func (s *Service) JobIDsWithOutput(ctx context.Context, jobs []*store.Job) (map[string]bool, error) {
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	with, err := s.store.JobIDsWithOutput(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("jobs with output: %w", err)
	}
	out := make(map[string]bool, len(with))
	for _, id := range with {
		out[id] = true
	}
	return out, nil
}
