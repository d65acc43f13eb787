package job

import (
	"encoding/json"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/job/merge"
	"github.com/skiffhq/skiff/internal/store"
)

// Summary is a job's summary object (spec 2.4 and 2.6): task outcome counts
// and the merged results. The dispatcher stores it when the job ends, so
// that reading a finished job never re-reads its tasks; for a job still
// running the API computes the counts live.
type Summary struct {
	TaskOutcomeCounts TaskOutcomeCounts `json:"task_outcome_counts"`
	AggregateResult   json.RawMessage   `json:"aggregate_result"`
	AggregateAliases  map[string]any    `json:"aggregate_aliases"`
	Completeness      Completeness      `json:"completeness"`
	ResultPersisted   bool              `json:"result_persisted"`
	OutputPersisted   bool              `json:"output_persisted"`
	// Leaderboard and Best rank a sweep's combinations or a benchmark's
	// candidates (ranked best first; unranked entries last).
	Leaderboard []merge.Entry   `json:"leaderboard,omitempty"`
	Best        json.RawMessage `json:"best,omitempty"`
}

// TaskOutcomeCounts counts a job's tasks per status; every key is present.
type TaskOutcomeCounts struct {
	Succeeded int64 `json:"succeeded"`
	Failed    int64 `json:"failed"`
	Cancelled int64 `json:"cancelled"`
	Queued    int64 `json:"queued"`
	Running   int64 `json:"running"`
}

// CountsFrom turns store counts into TaskOutcomeCounts.
func CountsFrom(m map[store.TaskStatus]int64) TaskOutcomeCounts {
	return TaskOutcomeCounts{Succeeded: m[store.TaskSucceeded], Failed: m[store.TaskFailed],
		Cancelled: m[store.TaskCancelled], Queued: m[store.TaskQueued], Running: m[store.TaskRunning]}
}

// Completeness says how much of the job's work has a result.
type Completeness struct {
	Total     int64   `json:"total"`
	Succeeded int64   `json:"succeeded"`
	Failed    int64   `json:"failed"`
	Cancelled int64   `json:"cancelled"`
	Pending   int64   `json:"pending"`
	Fraction  float64 `json:"fraction"` // succeeded / total; 1 for a job with no tasks
	// The weight fields are set for weighted_avg fan-out (spec 2.6).
	WeightField     string   `json:"weight_field,omitempty"`
	ExpectedWeight  *float64 `json:"expected_weight,omitempty"`
	CompletedWeight *float64 `json:"completed_weight,omitempty"`
	PendingWeight   *float64 `json:"pending_weight,omitempty"`
}

// Summarize merges a job's tasks into its summary, as the job's type and
// merge_strategy say (package merge). Deterministic: the same tasks give the
// same bytes. attempts, when given, let a benchmark show where each replica
// ran.
func Summarize(j *store.Job, tasks []*store.Task, attempts ...*store.Attempt) Summary {
	counts := map[store.TaskStatus]int64{}
	s := Summary{AggregateAliases: map[string]any{}}
	lastAttempt := map[string]*store.Attempt{}
	for _, a := range attempts {
		if prev := lastAttempt[a.TaskID]; prev == nil || a.Number > prev.Number {
			lastAttempt[a.TaskID] = a
		}
	}
	in := make([]merge.Task, len(tasks))
	for i, t := range tasks {
		counts[t.Status]++
		if len(t.Result) > 0 && t.Status == store.TaskSucceeded {
			s.ResultPersisted = true
		}
		if t.Output != "" {
			s.OutputPersisted = true
		}
		mt := merge.Task{Index: int(t.Index), OK: t.Status == store.TaskSucceeded, Done: t.Status.IsTerminal(),
			Payload: t.Payload, Result: t.Result, WorkerHandle: t.LastHostID}
		_ = json.Unmarshal(t.Meta, &mt.Meta)
		if a := lastAttempt[t.ID]; a != nil {
			mt.WorkerHandle, mt.ResourceProfile = a.HostID, a.ResourceProfile
		}
		in[i] = mt
	}
	cfg := merge.Config{Type: apiv1.JobType(j.Type)}
	if sub, err := Request(j); err == nil {
		cfg.Strategy, cfg.ValueField, cfg.WeightField = sub.MergeStrategy, sub.ValueField, sub.WeightField
		cfg.Reduce, cfg.RankBy, cfg.RankOrder = sub.Reduce, sub.RankBy, sub.RankOrder
		if sub.Expand.FanOut != nil {
			cfg.ByField = sub.Expand.FanOut.By
		}
	}
	out := merge.Merge(cfg, in)
	s.AggregateResult, s.AggregateAliases = out.Aggregate, out.Aliases
	s.Leaderboard, s.Best = out.Leaderboard, out.Best
	s.TaskOutcomeCounts = CountsFrom(counts)
	c := &s.Completeness
	c.Total = int64(len(tasks))
	c.Succeeded, c.Failed, c.Cancelled = counts[store.TaskSucceeded], counts[store.TaskFailed], counts[store.TaskCancelled]
	c.Pending = counts[store.TaskQueued] + counts[store.TaskRunning]
	c.Fraction = 1
	if c.Total > 0 {
		c.Fraction = float64(c.Succeeded) / float64(c.Total)
	}
	if w := out.Weighted; w != nil {
		c.WeightField = w.WeightField
		c.ExpectedWeight, c.CompletedWeight, c.PendingWeight = &w.ExpectedWeight, &w.CompletedWeight, &w.PendingWeight
	}
	return s
}

// MarshalSummary encodes a summary as it is stored and shown: aliases are
// an object even when the merge gave none.
func MarshalSummary(s Summary) (json.RawMessage, error) {
	if s.AggregateAliases == nil {
		s.AggregateAliases = map[string]any{}
	}
	return json.Marshal(s)
}
