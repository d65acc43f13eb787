package job

import (
	"encoding/json"

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
}

// Summarize merges a job's tasks into its summary. Deterministic: the same
// tasks give the same bytes. The collect merge lists every task's result in
// index order (null for a task without one).
func Summarize(j *store.Job, tasks []*store.Task) Summary {
	counts := map[store.TaskStatus]int64{}
	results := make([]json.RawMessage, len(tasks))
	s := Summary{AggregateAliases: map[string]any{}}
	for i, t := range tasks {
		counts[t.Status]++
		results[i] = json.RawMessage("null")
		if len(t.Result) > 0 && t.Status == store.TaskSucceeded {
			results[i] = t.Result
			s.ResultPersisted = true
		}
		if t.Output != "" {
			s.OutputPersisted = true
		}
	}
	s.TaskOutcomeCounts = CountsFrom(counts)
	s.AggregateResult, _ = json.Marshal(results)
	c := &s.Completeness
	c.Total = int64(len(tasks))
	c.Succeeded, c.Failed, c.Cancelled = counts[store.TaskSucceeded], counts[store.TaskFailed], counts[store.TaskCancelled]
	c.Pending = counts[store.TaskQueued] + counts[store.TaskRunning]
	c.Fraction = 1
	if c.Total > 0 {
		c.Fraction = float64(c.Succeeded) / float64(c.Total)
	}
	return s
}
