package expand

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/apiv1"
)

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func raws(ss ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(ss))
	for i, s := range ss {
		out[i] = raw(s)
	}
	return out
}

func intp(i int) *int { return &i }

// payloads returns the payloads of tasks as strings, checking on the way
// that indexes run from 0 and every payload is valid JSON.
func payloads(t *testing.T, tasks []Task) []string {
	t.Helper()
	out := make([]string, len(tasks))
	for i, tk := range tasks {
		if tk.Index != i {
			t.Errorf("task %d: got Index %d, want %d", i, tk.Index, i)
		}
		if !json.Valid(tk.Payload) {
			t.Errorf("task %d: payload is not valid JSON: %s", i, tk.Payload)
		}
		out[i] = string(tk.Payload)
	}
	return out
}

func metas(tasks []Task) []string {
	out := make([]string, len(tasks))
	for i, tk := range tasks {
		b, _ := json.Marshal(tk.Meta)
		out[i] = string(b)
	}
	return out
}

func TestTasks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		spec     Spec
		payloads []string
		metas    []string // nil: every Meta empty
	}{
		{
			name:     "structured runner without payload gets an empty object",
			spec:     Spec{Type: apiv1.JobTypeStructuredRunner},
			payloads: []string{`{}`},
		},
		{
			name:     "empty type means structured runner",
			spec:     Spec{Payload: raw(`{"a":1}`)},
			payloads: []string{`{"a":1}`},
		},
		{
			name:     "structured runner payload is compacted with sorted keys",
			spec:     Spec{Type: apiv1.JobTypeStructuredRunner, Payload: raw(" {\"z\": [1, 2],\n \"a\": {\"y\": 1, \"b\": 2}} ")},
			payloads: []string{`{"a":{"y":1,"b":2},"z":[1,2]}`},
		},
		{
			name:     "null payload is an empty object",
			spec:     Spec{Type: apiv1.JobTypeStructuredRunner, Payload: raw(`null`)},
			payloads: []string{`{}`},
		},
		{
			name: "fan out by: one item per task, field stays a list",
			spec: Spec{Type: apiv1.JobTypeStructuredRunner, Payload: raw(`{"files":["a","b",{"c":1}],"k":true}`),
				FanOut: &FanOut{By: "files"}},
			payloads: []string{`{"files":["a"],"k":true}`, `{"files":["b"],"k":true}`, `{"files":[{"c":1}],"k":true}`},
		},
		{
			name: "fan out by with batch size groups items and records _batch",
			spec: Spec{Type: apiv1.JobTypeStructuredRunner, Payload: raw(`{"xs":[1,2,3,4,5]}`),
				FanOut: &FanOut{By: "xs", BatchSize: 2}},
			payloads: []string{
				`{"_batch":{"index":0,"size":2,"start":0,"count":2},"xs":[1,2]}`,
				`{"_batch":{"index":1,"size":2,"start":2,"count":2},"xs":[3,4]}`,
				`{"_batch":{"index":2,"size":2,"start":4,"count":1},"xs":[5]}`,
			},
			metas: []string{
				`{"batch":{"index":0,"size":2,"start":0,"count":2}}`,
				`{"batch":{"index":1,"size":2,"start":2,"count":2}}`,
				`{"batch":{"index":2,"size":2,"start":4,"count":1}}`,
			},
		},
		{
			name: "batch size 1 still records _batch",
			spec: Spec{Type: apiv1.JobTypeStructuredRunner, Payload: raw(`{"xs":[7,8]}`),
				FanOut: &FanOut{By: "xs", BatchSize: 1}},
			payloads: []string{
				`{"_batch":{"index":0,"size":1,"start":0,"count":1},"xs":[7]}`,
				`{"_batch":{"index":1,"size":1,"start":1,"count":1},"xs":[8]}`,
			},
			metas: []string{`{"batch":{"index":0,"size":1,"start":0,"count":1}}`, `{"batch":{"index":1,"size":1,"start":1,"count":1}}`},
		},
		{
			name: "batch larger than the list makes one task",
			spec: Spec{Type: apiv1.JobTypeStructuredRunner, Payload: raw(`{"xs":[1,2]}`),
				FanOut: &FanOut{By: "xs", BatchSize: 10}},
			payloads: []string{`{"_batch":{"index":0,"size":10,"start":0,"count":2},"xs":[1,2]}`},
			metas:    []string{`{"batch":{"index":0,"size":10,"start":0,"count":2}}`},
		},
		{
			name: "a submitted _batch is replaced by the service's",
			spec: Spec{Type: apiv1.JobTypeStructuredRunner, Payload: raw(`{"_batch":"mine","xs":[1]}`),
				FanOut: &FanOut{By: "xs", BatchSize: 1}},
			payloads: []string{`{"_batch":{"index":0,"size":1,"start":0,"count":1},"xs":[1]}`},
			metas:    []string{`{"batch":{"index":0,"size":1,"start":0,"count":1}}`},
		},
		{
			name: "fan out items lay each item over the base payload",
			spec: Spec{Type: apiv1.JobTypeStructuredRunner, Payload: raw(`{"model":"m","lr":1}`),
				FanOut: &FanOut{Items: raws(`{"lr":0.1}`, `{"seed": 7}`, `{}`)}},
			payloads: []string{`{"lr":0.1,"model":"m"}`, `{"lr":1,"model":"m","seed":7}`, `{"lr":1,"model":"m"}`},
		},
		{
			name: "fan out items replace nested objects whole",
			spec: Spec{Type: apiv1.JobTypeStructuredRunner, Payload: raw(`{"cfg":{"a":1,"b":2}}`),
				FanOut: &FanOut{Items: raws(`{"cfg":{"a":3}}`)}},
			payloads: []string{`{"cfg":{"a":3}}`},
		},
		{
			name: "fan out chunks split the range near-equally",
			spec: Spec{Type: apiv1.JobTypeStructuredRunner, Payload: raw(`{"n":1}`),
				FanOut: &FanOut{Chunks: 3, Total: 10, RangeField: "seeds"}},
			payloads: []string{
				`{"n":1,"seeds":{"start":0,"end":4,"chunk_index":0,"chunk_count":3}}`,
				`{"n":1,"seeds":{"start":4,"end":7,"chunk_index":1,"chunk_count":3}}`,
				`{"n":1,"seeds":{"start":7,"end":10,"chunk_index":2,"chunk_count":3}}`,
			},
			metas: []string{
				`{"chunk_index":0,"chunk_count":3,"seed_range":{"start":0,"end":4}}`,
				`{"chunk_index":1,"chunk_count":3,"seed_range":{"start":4,"end":7}}`,
				`{"chunk_index":2,"chunk_count":3,"seed_range":{"start":7,"end":10}}`,
			},
		},
		{
			name: "fan out chunks default the range field to seed_range",
			spec: Spec{Type: apiv1.JobTypeStructuredRunner, FanOut: &FanOut{Chunks: 1, Total: 5}},
			payloads: []string{
				`{"seed_range":{"start":0,"end":5,"chunk_index":0,"chunk_count":1}}`,
			},
			metas: []string{`{"chunk_index":0,"chunk_count":1,"seed_range":{"start":0,"end":5}}`},
		},
		{
			name: "map reduce splits [start, start+total)",
			spec: Spec{Type: apiv1.JobTypeMapReduce, Payload: raw(`{"path":"p","rows":"old"}`),
				Split: &Split{Field: "rows", Start: 100, Total: 10, Chunks: 4}},
			payloads: []string{
				`{"path":"p","rows":{"start":100,"end":103,"chunk_index":0,"chunk_count":4}}`,
				`{"path":"p","rows":{"start":103,"end":106,"chunk_index":1,"chunk_count":4}}`,
				`{"path":"p","rows":{"start":106,"end":108,"chunk_index":2,"chunk_count":4}}`,
				`{"path":"p","rows":{"start":108,"end":110,"chunk_index":3,"chunk_count":4}}`,
			},
			metas: []string{
				`{"chunk_index":0,"chunk_count":4,"seed_range":{"start":100,"end":103}}`,
				`{"chunk_index":1,"chunk_count":4,"seed_range":{"start":103,"end":106}}`,
				`{"chunk_index":2,"chunk_count":4,"seed_range":{"start":106,"end":108}}`,
				`{"chunk_index":3,"chunk_count":4,"seed_range":{"start":108,"end":110}}`,
			},
		},
		{
			name: "map reduce with a negative start",
			spec: Spec{Type: apiv1.JobTypeMapReduce, Split: &Split{Field: "r", Start: -3, Total: 4, Chunks: 2}},
			payloads: []string{
				`{"r":{"start":-3,"end":-1,"chunk_index":0,"chunk_count":2}}`,
				`{"r":{"start":-1,"end":1,"chunk_index":1,"chunk_count":2}}`,
			},
			metas: []string{
				`{"chunk_index":0,"chunk_count":2,"seed_range":{"start":-3,"end":-1}}`,
				`{"chunk_index":1,"chunk_count":2,"seed_range":{"start":-1,"end":1}}`,
			},
		},
		{
			name: "sweep walks parameters in name order, first slowest, params over fixed",
			spec: Spec{Type: apiv1.JobTypeSweep, Sweep: &Sweep{
				Fixed: raw(`{"epochs":3,"lr":"fixed"}`),
				Parameters: []Parameter{
					{Name: "lr", Values: raws(`0.1`, `0.01`)},
					{Name: "arch", Values: raws(`"a"`, `{"depth": 2}`)},
				}}},
			payloads: []string{
				`{"_sweep_idx":0,"_sweep_params":{"arch":"a","lr":0.1},"arch":"a","epochs":3,"lr":0.1}`,
				`{"_sweep_idx":1,"_sweep_params":{"arch":"a","lr":0.01},"arch":"a","epochs":3,"lr":0.01}`,
				`{"_sweep_idx":2,"_sweep_params":{"arch":{"depth":2},"lr":0.1},"arch":{"depth":2},"epochs":3,"lr":0.1}`,
				`{"_sweep_idx":3,"_sweep_params":{"arch":{"depth":2},"lr":0.01},"arch":{"depth":2},"epochs":3,"lr":0.01}`,
			},
			metas: []string{
				`{"sweep_idx":0,"sweep_params":{"arch":"a","lr":0.1}}`,
				`{"sweep_idx":1,"sweep_params":{"arch":"a","lr":0.01}}`,
				`{"sweep_idx":2,"sweep_params":{"arch":{"depth":2},"lr":0.1}}`,
				`{"sweep_idx":3,"sweep_params":{"arch":{"depth":2},"lr":0.01}}`,
			},
		},
		{
			name: "sweep of one value without fixed payload",
			spec: Spec{Type: apiv1.JobTypeSweep, Sweep: &Sweep{Parameters: []Parameter{{Name: "x", Values: raws(`null`)}}}},
			payloads: []string{
				`{"_sweep_idx":0,"_sweep_params":{"x":null},"x":null}`,
			},
			metas: []string{`{"sweep_idx":0,"sweep_params":{"x":null}}`},
		},
		{
			name: "benchmark: candidates by name, replicas inner, config over shared",
			spec: Spec{Type: apiv1.JobTypeBenchmark, Benchmark: &Benchmark{
				Shared:     raw(`{"data":"d","opt":"shared"}`),
				Candidates: []Candidate{{Name: "zeta", Config: raw(`{"opt":"z"}`)}, {Name: "alpha", Config: nil}},
				Replicas:   2,
			}},
			payloads: []string{
				`{"_candidate":"alpha","_replica":0,"data":"d","opt":"shared"}`,
				`{"_candidate":"alpha","_replica":1,"data":"d","opt":"shared"}`,
				`{"_candidate":"zeta","_replica":0,"data":"d","opt":"z"}`,
				`{"_candidate":"zeta","_replica":1,"data":"d","opt":"z"}`,
			},
			metas: []string{
				`{"candidate":"alpha","replica":0}`,
				`{"candidate":"alpha","replica":1}`,
				`{"candidate":"zeta","replica":0}`,
				`{"candidate":"zeta","replica":1}`,
			},
		},
		{
			name: "benchmark candidate names are JSON-escaped",
			spec: Spec{Type: apiv1.JobTypeBenchmark, Benchmark: &Benchmark{
				Candidates: []Candidate{{Name: `q"uote`}, {Name: "b"}}, Replicas: 1}},
			payloads: []string{
				`{"_candidate":"b","_replica":0}`,
				`{"_candidate":"q\"uote","_replica":0}`,
			},
			metas: []string{`{"candidate":"b","replica":0}`, `{"candidate":"q\"uote","replica":0}`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tasks, err := Tasks(&tt.spec)
			if err != nil {
				t.Fatalf("Tasks: got error %v, want none", err)
			}
			if got := payloads(t, tasks); !slices.Equal(got, tt.payloads) {
				t.Errorf("payloads:\n got %q\nwant %q", got, tt.payloads)
			}
			wantMetas := tt.metas
			if wantMetas == nil {
				wantMetas = slices.Repeat([]string{"{}"}, len(tasks))
			}
			if got := metas(tasks); !slices.Equal(got, wantMetas) {
				t.Errorf("metas:\n got %q\nwant %q", got, wantMetas)
			}
			n, err := Count(&tt.spec)
			if err != nil || n != len(tasks) {
				t.Errorf("Count: got %d, %v; want %d, nil", n, err, len(tasks))
			}
			// Measure bounds the payloads' bytes from above, and not by
			// much more than the service's own fields could add.
			m, err := Measure(&tt.spec)
			var total int64
			for _, task := range tasks {
				total += int64(len(task.Payload))
			}
			if err != nil || m.PayloadBytes < total || m.PayloadBytes > total+int64(len(tasks))*4*fieldOverhead+64 {
				t.Errorf("Measure: got %d bytes, %v; want at least the %d the payloads take, within %d a task", m.PayloadBytes, err, total, 4*fieldOverhead)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	sr := apiv1.JobTypeStructuredRunner
	tests := []struct {
		name  string
		spec  *Spec
		field string
	}{
		{"nil spec", nil, "type"},
		{"unknown type", &Spec{Type: "pipeline"}, "type"},
		{"payload not an object", &Spec{Type: sr, Payload: raw(`[1]`)}, "payload"},
		{"payload not JSON", &Spec{Type: sr, Payload: raw(`{"a":`)}, "payload"},
		{"empty fan out", &Spec{Type: sr, FanOut: &FanOut{}}, "fan_out"},
		{"by and items", &Spec{Type: sr, Payload: raw(`{"x":[1]}`), FanOut: &FanOut{By: "x", Items: raws(`{}`)}}, "fan_out"},
		{"by and chunks", &Spec{Type: sr, Payload: raw(`{"x":[1]}`), FanOut: &FanOut{By: "x", Chunks: 2, Total: 2}}, "fan_out"},
		{"items and range field", &Spec{Type: sr, FanOut: &FanOut{Items: raws(`{}`), RangeField: "r"}}, "fan_out"},
		{"batch without by", &Spec{Type: sr, FanOut: &FanOut{Items: raws(`{}`), BatchSize: 2}}, "batch_size"},
		{"negative batch", &Spec{Type: sr, Payload: raw(`{"x":[1]}`), FanOut: &FanOut{By: "x", BatchSize: -1}}, "batch_size"},
		{"by field missing", &Spec{Type: sr, Payload: raw(`{"y":[1]}`), FanOut: &FanOut{By: "x"}}, "payload.x"},
		{"by field without payload", &Spec{Type: sr, FanOut: &FanOut{By: "x"}}, "payload.x"},
		{"by field not a list", &Spec{Type: sr, Payload: raw(`{"x":{"a":1}}`), FanOut: &FanOut{By: "x"}}, "payload.x"},
		{"by field null", &Spec{Type: sr, Payload: raw(`{"x":null}`), FanOut: &FanOut{By: "x"}}, "payload.x"},
		{"by field empty", &Spec{Type: sr, Payload: raw(`{"x":[]}`), FanOut: &FanOut{By: "x"}}, "payload.x"},
		{"items empty", &Spec{Type: sr, FanOut: &FanOut{Items: raws()}}, "fan_out.items"},
		{"item not an object", &Spec{Type: sr, FanOut: &FanOut{Items: raws(`{}`, `5`)}}, "fan_out.items[1]"},
		{"item null", &Spec{Type: sr, FanOut: &FanOut{Items: raws(`null`)}}, "fan_out.items[0]"},
		{"chunks zero", &Spec{Type: sr, FanOut: &FanOut{Total: 5}}, "fan_out.chunks"},
		{"total below chunks", &Spec{Type: sr, FanOut: &FanOut{Chunks: 5, Total: 4}}, "fan_out.total"},
		{"total beyond safe integers", &Spec{Type: sr, FanOut: &FanOut{Chunks: 1, Total: MaxSafeInt + 1}}, "fan_out.total"},
		{"map reduce without split", &Spec{Type: apiv1.JobTypeMapReduce}, "split"},
		{"split without field", &Spec{Type: apiv1.JobTypeMapReduce, Split: &Split{Total: 1, Chunks: 1}}, "split.field"},
		{"split end beyond safe integers", &Spec{Type: apiv1.JobTypeMapReduce, Split: &Split{Field: "r", Start: MaxSafeInt, Total: 1, Chunks: 1}}, "split.total"},
		{"split start below safe integers", &Spec{Type: apiv1.JobTypeMapReduce, Split: &Split{Field: "r", Start: -MaxSafeInt - 1, Total: 1, Chunks: 1}}, "split.total"},
		{"map reduce payload not an object", &Spec{Type: apiv1.JobTypeMapReduce, Payload: raw(`"x"`), Split: &Split{Field: "r", Total: 1, Chunks: 1}}, "payload"},
		{"sweep without parameters", &Spec{Type: apiv1.JobTypeSweep, Sweep: &Sweep{}}, "parameters"},
		{"sweep nil", &Spec{Type: apiv1.JobTypeSweep}, "parameters"},
		{"sweep parameter without values", &Spec{Type: apiv1.JobTypeSweep, Sweep: &Sweep{Parameters: []Parameter{{Name: "a"}}}}, "parameters.a"},
		{"sweep parameter named twice", &Spec{Type: apiv1.JobTypeSweep, Sweep: &Sweep{Parameters: []Parameter{
			{Name: "a", Values: raws(`1`)}, {Name: "a", Values: raws(`2`)}}}}, "parameters.a"},
		{"sweep parameter unnamed", &Spec{Type: apiv1.JobTypeSweep, Sweep: &Sweep{Parameters: []Parameter{{Values: raws(`1`)}}}}, "parameters"},
		{"sweep value not JSON", &Spec{Type: apiv1.JobTypeSweep, Sweep: &Sweep{Parameters: []Parameter{{Name: "a", Values: raws(`{`)}}}}, "parameters.a[0]"},
		{"sweep fixed payload not an object", &Spec{Type: apiv1.JobTypeSweep, Sweep: &Sweep{Fixed: raw(`[]`),
			Parameters: []Parameter{{Name: "a", Values: raws(`1`)}}}}, "fixed_payload"},
		{"benchmark nil", &Spec{Type: apiv1.JobTypeBenchmark}, "candidates"},
		{"benchmark zero replicas", &Spec{Type: apiv1.JobTypeBenchmark, Benchmark: &Benchmark{Candidates: []Candidate{{Name: "a"}}}}, "replicas"},
		{"benchmark candidate twice", &Spec{Type: apiv1.JobTypeBenchmark, Benchmark: &Benchmark{Replicas: 1,
			Candidates: []Candidate{{Name: "a"}, {Name: "a"}}}}, "candidates.a"},
		{"benchmark candidate unnamed", &Spec{Type: apiv1.JobTypeBenchmark, Benchmark: &Benchmark{Replicas: 1,
			Candidates: []Candidate{{Name: ""}, {Name: "a"}}}}, "candidates"},
		{"benchmark config not an object", &Spec{Type: apiv1.JobTypeBenchmark, Benchmark: &Benchmark{Replicas: 1,
			Candidates: []Candidate{{Name: "a", Config: raw(`[1]`)}, {Name: "b"}}}}, "candidates.a"},
		{"benchmark shared not an object", &Spec{Type: apiv1.JobTypeBenchmark, Benchmark: &Benchmark{Replicas: 1,
			Shared: raw(`1`), Candidates: []Candidate{{Name: "a"}, {Name: "b"}}}}, "shared_payload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for fn, call := range map[string]func(*Spec) error{
				"Count": func(s *Spec) error { _, err := Count(s); return err },
				"Tasks": func(s *Spec) error { _, err := Tasks(s); return err },
			} {
				err := call(tt.spec)
				var fe *FieldError
				if !errors.As(err, &fe) {
					t.Fatalf("%s: got %v, want a *FieldError on %q", fn, err, tt.field)
				}
				if fe.Field != tt.field {
					t.Errorf("%s: got field %q (%s), want %q", fn, fe.Field, fe.Message, tt.field)
				}
				if fe.Message == "" || !strings.Contains(fe.Error(), fe.Field) {
					t.Errorf("%s: got error text %q, want the field and a message", fn, fe.Error())
				}
			}
		})
	}
}

// TestChunkRanges checks, over many shapes, that chunk ranges are
// contiguous, cover the whole range, and differ in size by at most one.
func TestChunkRanges(t *testing.T) {
	t.Parallel()
	for _, total := range []int64{1, 2, 3, 7, 10, 99, 100, 101, 1000, 12345} {
		for _, chunks := range []int{1, 2, 3, 4, 7, 10, 64, 100, 1000} {
			if int64(chunks) > total {
				continue
			}
			for _, start := range []int64{0, -50, 1 << 40} {
				t.Run(fmt.Sprintf("%d/%d/%d", start, total, chunks), func(t *testing.T) {
					t.Parallel()
					tasks, err := Tasks(&Spec{Type: apiv1.JobTypeMapReduce, Split: &Split{Field: "r", Start: start, Total: total, Chunks: chunks}})
					if err != nil {
						t.Fatal(err)
					}
					if len(tasks) != chunks {
						t.Fatalf("got %d tasks, want %d", len(tasks), chunks)
					}
					next := start
					lo, hi := total, int64(0)
					for i, tk := range tasks {
						r := *tk.Meta.SeedRange
						if r.Start != next {
							t.Fatalf("chunk %d: got start %d, want %d", i, r.Start, next)
						}
						size := r.End - r.Start
						lo, hi = min(lo, size), max(hi, size)
						next = r.End
						if *tk.Meta.ChunkIndex != i || *tk.Meta.ChunkCount != chunks {
							t.Fatalf("chunk %d: got index %d count %d", i, *tk.Meta.ChunkIndex, *tk.Meta.ChunkCount)
						}
						var p struct {
							R struct {
								Start, End int64
								Index      int `json:"chunk_index"`
							} `json:"r"`
						}
						if err := json.Unmarshal(tk.Payload, &p); err != nil || p.R.Start != r.Start || p.R.End != r.End || p.R.Index != i {
							t.Fatalf("chunk %d: payload %s does not carry range %+v (%v)", i, tk.Payload, r, err)
						}
					}
					if next != start+total {
						t.Errorf("got end %d, want %d", next, start+total)
					}
					if hi-lo > 1 || lo < 1 {
						t.Errorf("got chunk sizes %d..%d, want non-empty and within one of each other", lo, hi)
					}
				})
			}
		}
	}
}

func TestSweepIsIndependentOfParameterOrder(t *testing.T) {
	t.Parallel()
	a := Parameter{Name: "a", Values: raws(`1`, `2`, `3`)}
	b := Parameter{Name: "b", Values: raws(`"x"`, `"y"`)}
	c := Parameter{Name: "c", Values: raws(`true`, `false`)}
	var first []string
	for _, order := range [][]Parameter{{a, b, c}, {c, b, a}, {b, c, a}} {
		tasks, err := Tasks(&Spec{Type: apiv1.JobTypeSweep, Sweep: &Sweep{Parameters: order}})
		if err != nil {
			t.Fatal(err)
		}
		got := payloads(t, tasks)
		if len(got) != 12 {
			t.Fatalf("got %d tasks, want 12", len(got))
		}
		if first == nil {
			first = got
		} else if !slices.Equal(got, first) {
			t.Errorf("order %v: got %q, want %q", order, got, first)
		}
	}
	seen := map[string]bool{}
	for _, p := range first {
		var v struct {
			Params json.RawMessage `json:"_sweep_params"`
		}
		_ = json.Unmarshal([]byte(p), &v)
		if seen[string(v.Params)] {
			t.Errorf("got combination %s twice", v.Params)
		}
		seen[string(v.Params)] = true
	}
	if want := `{"_sweep_idx":11,"_sweep_params":{"a":3,"b":"y","c":false},"a":3,"b":"y","c":false}`; first[11] != want {
		t.Errorf("last combination: got %s, want %s", first[11], want)
	}
}

func TestTasksDoNotShareMemory(t *testing.T) {
	t.Parallel()
	spec := &Spec{Type: apiv1.JobTypeStructuredRunner, Payload: raw(`{"xs":[1,2,3]}`), FanOut: &FanOut{By: "xs", BatchSize: 1}}
	tasks, err := Tasks(spec)
	if err != nil {
		t.Fatal(err)
	}
	tasks[0].Payload[1] = 'X'
	if got, want := string(tasks[1].Payload), `{"_batch":{"index":1,"size":1,"start":1,"count":1},"xs":[2]}`; got != want {
		t.Errorf("after changing task 0: got task 1 %s, want %s", got, want)
	}
	if string(spec.Payload) != `{"xs":[1,2,3]}` {
		t.Errorf("got spec payload %s changed", spec.Payload)
	}
}

func TestLargeExpansions(t *testing.T) {
	t.Parallel()
	items := make([]string, 10_000)
	for i := range items {
		items[i] = fmt.Sprintf(`{"id":%d}`, i)
	}
	tests := []struct {
		name string
		spec *Spec
		want int
	}{
		{"by", &Spec{Payload: raw(`{"xs":[` + strings.Join(items, ",") + `],"shared":"s"}`), FanOut: &FanOut{By: "xs"}}, 10_000},
		{"by batched", &Spec{Payload: raw(`{"xs":[` + strings.Join(items, ",") + `]}`), FanOut: &FanOut{By: "xs", BatchSize: 3}}, 3334},
		{"items", &Spec{FanOut: &FanOut{Items: raws(items...)}}, 10_000},
		{"chunks", &Spec{FanOut: &FanOut{Chunks: 10_000, Total: 1 << 40}}, 10_000},
		{"benchmark", &Spec{Type: apiv1.JobTypeBenchmark, Benchmark: &Benchmark{Replicas: 100,
			Candidates: []Candidate{{Name: "a"}, {Name: "b"}}}}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tasks, err := Tasks(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if len(tasks) != tt.want {
				t.Fatalf("got %d tasks, want %d", len(tasks), tt.want)
			}
			last := tasks[len(tasks)-1]
			if last.Index != tt.want-1 || !json.Valid(last.Payload) {
				t.Errorf("last task: got index %d payload %.80s", last.Index, last.Payload)
			}
		})
	}
	tasks, _ := Tasks(tests[0].spec)
	if got, want := string(tasks[9999].Payload), `{"shared":"s","xs":[{"id":9999}]}`; got != want {
		t.Errorf("task 9999: got %s, want %s", got, want)
	}
}

func TestCountSaturates(t *testing.T) {
	t.Parallel()
	vals := raws(`0`, `1`, `2`, `3`, `4`, `5`, `6`, `7`, `8`, `9`)
	var params []Parameter
	for i := range 12 { // 10^12 combinations
		params = append(params, Parameter{Name: fmt.Sprintf("p%02d", i), Values: vals})
	}
	n, err := Count(&Spec{Type: apiv1.JobTypeSweep, Sweep: &Sweep{Parameters: params}})
	if err != nil || n != 1<<31-1 {
		t.Errorf("got %d, %v; want %d, nil", n, err, 1<<31-1)
	}
	if _, err := Tasks(&Spec{Type: apiv1.JobTypeSweep, Sweep: &Sweep{Parameters: params}}); err == nil {
		t.Errorf("Tasks of 10^12 combinations: got no error, want one")
	}
}

func TestMetaOmitsZeroIndexesOnlyWhenAbsent(t *testing.T) {
	t.Parallel()
	m := Meta{ChunkIndex: intp(0), ChunkCount: intp(1), Replica: intp(0)}
	b, _ := json.Marshal(m)
	if got, want := string(b), `{"chunk_index":0,"chunk_count":1,"replica":0}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func BenchmarkFanOutBy10k(b *testing.B) {
	items := make([]string, 10_000)
	for i := range items {
		items[i] = fmt.Sprintf(`{"id":%d,"path":"s3://bucket/data/part-%05d.parquet"}`, i, i)
	}
	spec := &Spec{Payload: raw(`{"model":"resnet","opts":{"lr":0.1,"epochs":3},"xs":[` + strings.Join(items, ",") + `]}`),
		FanOut: &FanOut{By: "xs"}}
	b.ReportAllocs()
	for b.Loop() {
		tasks, err := Tasks(spec)
		if err != nil || len(tasks) != 10_000 {
			b.Fatalf("got %d tasks, %v", len(tasks), err)
		}
	}
}

func BenchmarkFanOutChunks10k(b *testing.B) {
	spec := &Spec{Payload: raw(`{"model":"m"}`), FanOut: &FanOut{Chunks: 10_000, Total: 1 << 40}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Tasks(spec); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSweep1000(b *testing.B) {
	spec := &Spec{Type: apiv1.JobTypeSweep, Sweep: &Sweep{Fixed: raw(`{"data":"d"}`), Parameters: []Parameter{
		{Name: "a", Values: raws(`1`, `2`, `3`, `4`, `5`, `6`, `7`, `8`, `9`, `10`)},
		{Name: "b", Values: raws(`1`, `2`, `3`, `4`, `5`, `6`, `7`, `8`, `9`, `10`)},
		{Name: "c", Values: raws(`1`, `2`, `3`, `4`, `5`, `6`, `7`, `8`, `9`, `10`)},
	}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Tasks(spec); err != nil {
			b.Fatal(err)
		}
	}
}

// A small submission that would expand into gigabytes is measured as such
// without being expanded.
func TestMeasureSeesTheExpansionBeforeItHappens(t *testing.T) {
	t.Parallel()
	big := `{"blob":"` + strings.Repeat("x", 1<<20) + `"}`
	for name, spec := range map[string]*Spec{
		"chunks":    {Type: apiv1.JobTypeStructuredRunner, Payload: raw(big), FanOut: &FanOut{Chunks: 10_000, Total: 10_000}},
		"map":       {Type: apiv1.JobTypeMapReduce, Payload: raw(big), Split: &Split{Field: "r", Total: 10_000, Chunks: 10_000}},
		"sweep":     {Type: apiv1.JobTypeSweep, Sweep: &Sweep{Fixed: raw(big), Parameters: []Parameter{{Name: "a", Values: raws("1", "2", "3", "4", "5", "6", "7", "8", "9", "10")}}}},
		"benchmark": {Type: apiv1.JobTypeBenchmark, Benchmark: &Benchmark{Shared: raw(big), Replicas: 10, Candidates: []Candidate{{Name: "a"}}}},
	} {
		m, err := Measure(spec)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := int64(m.Tasks) << 20; m.PayloadBytes < want {
			t.Errorf("%s: measured %d bytes for %d tasks of a 1 MiB payload, want at least %d", name, m.PayloadBytes, m.Tasks, want)
		}
	}
}
