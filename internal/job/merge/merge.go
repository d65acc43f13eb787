// Package merge combines a job's task results into its aggregate (spec 2.6,
// 4.5): the collect, keyed and weighted_avg merges of structured_runner,
// map_reduce's reducers, sweep's leaderboard and benchmark's ranking. These
// are pure functions of the tasks, run once when a job ends.
package merge

import (
	"encoding/json"
	"math"
	"sort"
	"strings"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/job/expand"
	"github.com/skiffhq/skiff/internal/job/submit"
)

// Task is what a merge reads of one task.
type Task struct {
	Index   int
	OK      bool            // succeeded
	Done    bool            // ended (succeeded, failed or cancelled)
	Payload json.RawMessage // as the task received it
	Result  json.RawMessage // nil when none
	Meta    expand.Meta
	// WorkerHandle and ResourceProfile describe the host of the task's
	// last attempt (benchmark results are read with them).
	WorkerHandle    string
	ResourceProfile json.RawMessage
}

// Config is what a job asked of its merge.
type Config struct {
	Type        apiv1.JobType
	Strategy    string // collect, keyed, weighted_avg (structured_runner)
	ByField     string // fan_out.by, for keyed
	ValueField  string // weighted_avg
	WeightField string // weighted_avg
	Reduce      []submit.Reducer
	RankBy      string
	RankOrder   string // asc or desc
}

// Output is a job's merged results.
type Output struct {
	Aggregate json.RawMessage `json:"aggregate_result"`
	Aliases   map[string]any  `json:"aggregate_aliases"`
	// Weighted is set for weighted_avg merges: completeness by weight.
	Weighted *Weighted `json:"-"`
	// Leaderboard and Best are set for sweep and benchmark.
	Leaderboard []Entry         `json:"-"`
	Best        json.RawMessage `json:"-"`
}

// Weighted is completeness by weight (spec 2.6).
type Weighted struct {
	WeightField     string  `json:"weight_field"`
	ExpectedWeight  float64 `json:"expected_weight"`
	CompletedWeight float64 `json:"completed_weight"`
	PendingWeight   float64 `json:"pending_weight"`
}

// Entry is one ranked row of a sweep's leaderboard or a benchmark's
// ranking.
type Entry struct {
	Rank      int             `json:"rank"`                // 1 is best; 0: unranked (no value)
	Params    json.RawMessage `json:"params,omitempty"`    // sweep
	Candidate string          `json:"candidate,omitempty"` // benchmark
	Value     *float64        `json:"value"`               // result[rank_by] (benchmark: mean over replicas)
	Result    json.RawMessage `json:"result,omitempty"`    // sweep
	TaskID    string          `json:"task_id,omitempty"`
	Replicas  []Replica       `json:"replicas,omitempty"` // benchmark
}

// Replica is one benchmark task of a candidate.
type Replica struct {
	Replica         int             `json:"replica"`
	Value           *float64        `json:"value"`
	Result          json.RawMessage `json:"result"`
	WorkerHandle    string          `json:"worker_handle,omitempty"`
	ResourceProfile json.RawMessage `json:"resource_profile,omitempty"`
}

// Merge combines tasks (in index order) as cfg says.
func Merge(cfg Config, tasks []Task) Output {
	switch cfg.Type {
	case apiv1.JobTypeSweep:
		return sweep(cfg, tasks)
	case apiv1.JobTypeMapReduce:
		return mapReduce(cfg, tasks)
	case apiv1.JobTypeBenchmark:
		return benchmark(cfg, tasks)
	}
	switch cfg.Strategy {
	case apiv1.MergeKeyed:
		return keyed(cfg, tasks)
	case apiv1.MergeWeightedAvg:
		return weightedAvg(cfg, tasks)
	}
	return collect(tasks)
}

func raw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

// collect lists every task's result in index order, null where a task has
// none (failed, cancelled, or wrote no result).
func collect(tasks []Task) Output {
	out := make([]json.RawMessage, len(tasks))
	for i, t := range tasks {
		out[i] = json.RawMessage("null")
		if t.OK && len(t.Result) > 0 {
			out[i] = t.Result
		}
	}
	agg := raw(out)
	return Output{Aggregate: agg, Aliases: map[string]any{"results": agg}}
}

// keyed maps each fan_out.by item to its task's result. A task of one item
// is keyed by the item (a string item as itself, any other as its JSON); a
// batched task whose result is an object keyed by its items contributes
// those keys, otherwise each of its items maps to the whole result.
func keyed(cfg Config, tasks []Task) Output {
	agg := map[string]json.RawMessage{}
	for _, t := range tasks {
		if !t.OK || len(t.Result) == 0 {
			continue
		}
		var payload map[string]json.RawMessage
		_ = json.Unmarshal(t.Payload, &payload)
		var items []json.RawMessage
		if err := json.Unmarshal(payload[cfg.ByField], &items); err != nil {
			items = []json.RawMessage{payload[cfg.ByField]}
		}
		var byItem map[string]json.RawMessage
		batched := len(items) > 1 && json.Unmarshal(t.Result, &byItem) == nil
		for _, it := range items {
			k := key(it)
			if batched {
				if v, ok := byItem[k]; ok {
					agg[k] = v
					continue
				}
			}
			agg[k] = t.Result
		}
	}
	a := raw(agg)
	return Output{Aggregate: a, Aliases: map[string]any{"by_key": a}}
}

// key renders a fan-out item as an object key.
func key(item json.RawMessage) string {
	var s string
	if json.Unmarshal(item, &s) == nil {
		return s
	}
	return string(item)
}

// number reads a numeric field of a result object.
func number(result json.RawMessage, field string) (float64, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(result, &obj) != nil {
		return 0, false
	}
	v, ok := obj[field]
	if !ok {
		return 0, false
	}
	var f float64
	if json.Unmarshal(v, &f) != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// weightedAvg is sum(value x weight) / sum(weight) over the succeeded
// tasks whose results have both fields. A task's expected weight is its
// payload's weight field when present, else its result's.
func weightedAvg(cfg Config, tasks []Task) Output {
	var num, den float64
	w := &Weighted{WeightField: cfg.WeightField}
	for _, t := range tasks {
		expected, hasExpected := number(t.Payload, cfg.WeightField)
		if t.OK {
			v, okV := number(t.Result, cfg.ValueField)
			wt, okW := number(t.Result, cfg.WeightField)
			if !okW && hasExpected {
				wt, okW = expected, true
			}
			if okV && okW {
				num += v * wt
				den += wt
				w.CompletedWeight += wt
				if !hasExpected {
					expected, hasExpected = wt, true
				}
			}
		}
		if hasExpected {
			w.ExpectedWeight += expected
		}
	}
	w.PendingWeight = math.Max(0, w.ExpectedWeight-w.CompletedWeight)
	var agg json.RawMessage = json.RawMessage("null")
	aliases := map[string]any{}
	if den > 0 {
		agg = raw(num / den)
		aliases["weighted_avg"] = num / den
		aliases[cfg.ValueField] = num / den
	}
	return Output{Aggregate: agg, Aliases: aliases, Weighted: w}
}

// mapReduce applies each reducer to its field over the succeeded results.
func mapReduce(cfg Config, tasks []Task) Output {
	agg := map[string]any{}
	for _, r := range cfg.Reduce {
		agg[r.Field] = reduce(r, tasks)
	}
	a := raw(agg)
	aliases := map[string]any{}
	for k, v := range agg {
		aliases[k] = v
	}
	return Output{Aggregate: a, Aliases: aliases}
}

func reduce(r submit.Reducer, tasks []Task) any {
	var vals []json.RawMessage
	var nums []float64
	var weights []float64
	for _, t := range tasks {
		if !t.OK {
			continue
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(t.Result, &obj) != nil {
			continue
		}
		v, ok := obj[r.Field]
		if !ok {
			continue
		}
		vals = append(vals, v)
		if f, ok := number(t.Result, r.Field); ok {
			if r.Op == "weighted_avg" {
				wt, okW := number(t.Result, r.WeightField)
				if !okW {
					continue
				}
				weights = append(weights, wt)
			}
			nums = append(nums, f)
		}
	}
	switch r.Op {
	case "count":
		return len(vals)
	case "collect":
		if vals == nil {
			return []json.RawMessage{}
		}
		return vals
	case "concat":
		return concat(vals)
	}
	if len(nums) == 0 {
		return nil
	}
	switch r.Op {
	case "sum":
		return sum(nums)
	case "mean":
		return sum(nums) / float64(len(nums))
	case "max":
		m := nums[0]
		for _, n := range nums[1:] {
			m = math.Max(m, n)
		}
		return m
	case "min":
		m := nums[0]
		for _, n := range nums[1:] {
			m = math.Min(m, n)
		}
		return m
	case "weighted_avg":
		var num, den float64
		for i, n := range nums {
			num += n * weights[i]
			den += weights[i]
		}
		if den == 0 {
			return nil
		}
		return num / den
	}
	return nil
}

func sum(ns []float64) float64 {
	var s float64
	for _, n := range ns {
		s += n
	}
	return s
}

// concat joins lists into one list and strings into one string (in task
// order); mixed values are collected as a list of everything.
func concat(vals []json.RawMessage) any {
	var strs []string
	allStrings := true
	var list []json.RawMessage
	for _, v := range vals {
		var s string
		if json.Unmarshal(v, &s) == nil {
			strs = append(strs, s)
			list = append(list, v)
			continue
		}
		allStrings = false
		var items []json.RawMessage
		if json.Unmarshal(v, &items) == nil {
			list = append(list, items...)
			continue
		}
		list = append(list, v)
	}
	if allStrings && len(strs) > 0 {
		return strings.Join(strs, "")
	}
	if list == nil {
		return []json.RawMessage{}
	}
	return list
}

// better reports whether a ranks before b.
func better(order string, a, b float64) bool {
	if order == apiv1.RankAsc {
		return a < b
	}
	return a > b
}

// rank sorts entries best first; those without a value come last,
// unranked, in their original order.
func rank(order string, es []Entry) {
	sort.SliceStable(es, func(i, j int) bool {
		vi, vj := es[i].Value, es[j].Value
		switch {
		case vi == nil || vj == nil:
			return vi != nil && vj == nil
		default:
			return better(order, *vi, *vj)
		}
	})
	for i := range es {
		if es[i].Value != nil {
			es[i].Rank = i + 1
		}
	}
}

// sweep ranks each combination's result by rank_by.
func sweep(cfg Config, tasks []Task) Output {
	es := make([]Entry, 0, len(tasks))
	for _, t := range tasks {
		e := Entry{Params: t.Meta.SweepParams, Result: json.RawMessage("null")}
		if t.OK && len(t.Result) > 0 {
			e.Result = t.Result
			if v, ok := number(t.Result, cfg.RankBy); ok {
				e.Value = &v
			}
		}
		es = append(es, e)
	}
	return ranked(cfg.RankOrder, es, "leaderboard")
}

// benchmark ranks candidates by the mean of rank_by over their replicas,
// each replica shown with the host it ran on so numbers from different
// machines can be read fairly.
func benchmark(cfg Config, tasks []Task) Output {
	byName := map[string]*Entry{}
	var names []string
	for _, t := range tasks {
		e := byName[t.Meta.Candidate]
		if e == nil {
			e = &Entry{Candidate: t.Meta.Candidate}
			byName[t.Meta.Candidate] = e
			names = append(names, t.Meta.Candidate)
		}
		rep := Replica{Result: json.RawMessage("null"), WorkerHandle: t.WorkerHandle, ResourceProfile: t.ResourceProfile}
		if t.Meta.Replica != nil {
			rep.Replica = *t.Meta.Replica
		}
		if t.OK && len(t.Result) > 0 {
			rep.Result = t.Result
			if v, ok := number(t.Result, cfg.RankBy); ok {
				rep.Value = &v
			}
		}
		e.Replicas = append(e.Replicas, rep)
	}
	es := make([]Entry, 0, len(names))
	for _, n := range names {
		e := byName[n]
		var s float64
		var k int
		for _, r := range e.Replicas {
			if r.Value != nil {
				s += *r.Value
				k++
			}
		}
		if k > 0 {
			m := s / float64(k)
			e.Value = &m
		}
		es = append(es, *e)
	}
	return ranked(cfg.RankOrder, es, "ranking")
}

// ranked ranks es and shows them, with the best, under name in the
// aggregate and its aliases.
func ranked(order string, es []Entry, name string) Output {
	rank(order, es)
	out := Output{Leaderboard: es, Best: json.RawMessage("null")}
	if len(es) > 0 && es[0].Value != nil {
		out.Best = raw(es[0])
	}
	out.Aggregate = raw(map[string]any{name: es, "best": out.Best})
	out.Aliases = map[string]any{name: es, "best": out.Best}
	return out
}
