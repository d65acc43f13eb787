package merge

import (
	"encoding/json"
	"testing"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/job/expand"
	"github.com/skiffhq/skiff/internal/job/submit"
)

func ok(i int, payload, result string) Task {
	t := Task{Index: i, OK: true, Done: true, Payload: json.RawMessage(payload)}
	if result != "" {
		t.Result = json.RawMessage(result)
	}
	return t
}

func failed(i int, payload string) Task {
	return Task{Index: i, Done: true, Payload: json.RawMessage(payload)}
}

func compact(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMergeStructuredRunner(t *testing.T) {
	cases := []struct {
		name  string
		cfg   Config
		tasks []Task
		want  string
	}{
		{"collect keeps order and nulls", Config{Strategy: "collect"},
			[]Task{ok(0, `{}`, `{"a":1}`), failed(1, `{}`), ok(2, `{}`, ``), ok(3, `{}`, `[2]`)},
			`[{"a":1},null,null,[2]]`},
		{"keyed by single items", Config{Strategy: apiv1.MergeKeyed, ByField: "city"},
			[]Task{ok(0, `{"city":["oslo"]}`, `{"t":1}`), ok(1, `{"city":["rome"]}`, `{"t":2}`), failed(2, `{"city":["nice"]}`)},
			`{"oslo":{"t":1},"rome":{"t":2}}`},
		{"keyed by non-string items", Config{Strategy: apiv1.MergeKeyed, ByField: "n"},
			[]Task{ok(0, `{"n":[7]}`, `1`), ok(1, `{"n":[{"x":1}]}`, `2`)},
			`{"7":1,"{\"x\":1}":2}`},
		{"keyed batch with per-item object", Config{Strategy: apiv1.MergeKeyed, ByField: "k"},
			[]Task{ok(0, `{"k":["a","b"]}`, `{"a":10,"b":20}`), ok(1, `{"k":["c","d"]}`, `[5]`)},
			`{"a":10,"b":20,"c":[5],"d":[5]}`},
		{"weighted average", Config{Strategy: apiv1.MergeWeightedAvg, ValueField: "v", WeightField: "w"},
			[]Task{ok(0, `{}`, `{"v":1,"w":1}`), ok(1, `{}`, `{"v":4,"w":3}`), failed(2, `{"w":4}`), ok(3, `{}`, `{"v":"x","w":1}`)},
			`3.25`},
		{"weighted average of nothing", Config{Strategy: apiv1.MergeWeightedAvg, ValueField: "v", WeightField: "w"},
			[]Task{failed(0, `{}`)}, `null`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Type = apiv1.JobTypeStructuredRunner
			if got := string(Merge(c.cfg, c.tasks).Aggregate); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

func TestWeightedCompleteness(t *testing.T) {
	out := Merge(Config{Type: apiv1.JobTypeStructuredRunner, Strategy: apiv1.MergeWeightedAvg, ValueField: "v", WeightField: "w"},
		[]Task{ok(0, `{"w":2}`, `{"v":1}`), failed(1, `{"w":3}`), {Index: 2, Payload: json.RawMessage(`{"w":5}`)}})
	w := out.Weighted
	if w == nil || w.ExpectedWeight != 10 || w.CompletedWeight != 2 || w.PendingWeight != 8 || w.WeightField != "w" {
		t.Fatalf("weighted completeness: %+v", w)
	}
	if string(out.Aggregate) != "1" {
		t.Errorf("aggregate: %s", out.Aggregate)
	}
}

func TestMapReduce(t *testing.T) {
	reduce := []submit.Reducer{
		{Field: "n", Op: "sum"}, {Field: "m", Op: "mean"}, {Field: "hi", Op: "max"}, {Field: "lo", Op: "min"},
		{Field: "wv", Op: "weighted_avg", WeightField: "w"}, {Field: "s", Op: "concat"}, {Field: "l", Op: "concat"},
		{Field: "c", Op: "count"}, {Field: "k", Op: "collect"}, {Field: "none", Op: "sum"},
	}
	tasks := []Task{
		ok(0, `{}`, `{"n":1,"m":2,"hi":3,"lo":3,"wv":1,"w":1,"s":"ab","l":[1],"c":0,"k":"x"}`),
		ok(1, `{}`, `{"n":2,"m":4,"hi":9,"lo":-1,"wv":3,"w":3,"s":"cd","l":[2,3],"k":{"y":1}}`),
		failed(2, `{}`),
	}
	got := string(Merge(Config{Type: apiv1.JobTypeMapReduce, Reduce: reduce}, tasks).Aggregate)
	want := `{"c":1,"hi":9,"k":["x",{"y":1}],"l":[1,2,3],"lo":-1,"m":3,"n":3,"none":null,"s":"abcd","wv":2.5}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func sweepTask(i int, params, result string) Task {
	t := ok(i, `{}`, result)
	t.Meta = expand.Meta{SweepIndex: &i, SweepParams: json.RawMessage(params)}
	if result == "" {
		t.OK = false
	}
	return t
}

func TestSweepLeaderboard(t *testing.T) {
	tasks := []Task{
		sweepTask(0, `{"lr":0.1}`, `{"loss":0.5}`),
		sweepTask(1, `{"lr":0.2}`, `{"loss":0.2}`),
		sweepTask(2, `{"lr":0.3}`, ``),
		sweepTask(3, `{"lr":0.4}`, `{"loss":0.9}`),
	}
	out := Merge(Config{Type: apiv1.JobTypeSweep, RankBy: "loss", RankOrder: apiv1.RankAsc}, tasks)
	var ranks []string
	for _, e := range out.Leaderboard {
		ranks = append(ranks, compact(t, []any{e.Rank, e.Params}))
	}
	want := `["[1,{\"lr\":0.2}]","[2,{\"lr\":0.1}]","[3,{\"lr\":0.4}]","[0,{\"lr\":0.3}]"]`
	if got := compact(t, ranks); got != want {
		t.Errorf("leaderboard: got %s, want %s", got, want)
	}
	var best Entry
	if err := json.Unmarshal(out.Best, &best); err != nil || string(best.Params) != `{"lr":0.2}` {
		t.Errorf("best: %s", out.Best)
	}
	desc := Merge(Config{Type: apiv1.JobTypeSweep, RankBy: "loss", RankOrder: apiv1.RankDesc}, tasks)
	if string(desc.Leaderboard[0].Params) != `{"lr":0.4}` {
		t.Errorf("desc best: %s", desc.Leaderboard[0].Params)
	}
}

func TestBenchmarkRanking(t *testing.T) {
	bt := func(i int, cand string, rep int, result, worker string) Task {
		t := ok(i, `{}`, result)
		t.Meta = expand.Meta{Candidate: cand, Replica: &rep}
		t.WorkerHandle, t.ResourceProfile = worker, json.RawMessage(`{"cpu_count":2}`)
		return t
	}
	tasks := []Task{
		bt(0, "a", 0, `{"ops":10}`, "wkr_1"), bt(1, "a", 1, `{"ops":20}`, "wkr_2"),
		bt(2, "b", 0, `{"ops":40}`, "wkr_1"), bt(3, "b", 1, `{"ops":"fast"}`, "wkr_2"),
	}
	out := Merge(Config{Type: apiv1.JobTypeBenchmark, RankBy: "ops", RankOrder: apiv1.RankDesc}, tasks)
	if len(out.Leaderboard) != 2 || out.Leaderboard[0].Candidate != "b" || *out.Leaderboard[0].Value != 40 ||
		out.Leaderboard[1].Candidate != "a" || *out.Leaderboard[1].Value != 15 {
		t.Fatalf("ranking: %s", compact(t, out.Leaderboard))
	}
	if r := out.Leaderboard[1].Replicas[1]; r.WorkerHandle != "wkr_2" || string(r.ResourceProfile) != `{"cpu_count":2}` {
		t.Errorf("replica: %+v", r)
	}
}
