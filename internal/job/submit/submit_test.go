package submit

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/job/expand"
)

const base = `{"project":"demo","runner_command":["python","main.py"]}`

// body lays the top-level fields of extra over base; a field set to the
// string "-" is removed.
func body(t *testing.T, extra string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(base), &m); err != nil {
		t.Fatal(err)
	}
	if extra != "" {
		var x map[string]json.RawMessage
		if err := json.Unmarshal([]byte(extra), &x); err != nil {
			t.Fatalf("test body %s: %v", extra, err)
		}
		for k, v := range x {
			if string(v) == `"-"` {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
	}
	b, _ := json.Marshal(m)
	return b
}

// submit decodes and validates extra laid over base.
func submit(t *testing.T, extra string, lim Limits) (*Submission, error) {
	t.Helper()
	s, err := Decode(body(t, extra))
	if err != nil {
		return nil, err
	}
	return Validate(s, lim)
}

// fieldsOf returns the fields an invalid fault names, sorted.
func fieldsOf(t *testing.T, err error) []string {
	t.Helper()
	fe, ok := fault.As(err)
	if !ok || fe.Kind != fault.KindInvalid {
		t.Fatalf("got %v, want a fault of kind invalid", err)
	}
	fields, ok := fe.Details["fields"].(map[string]any)
	if !ok {
		t.Fatalf("got details %v, want details.fields", fe.Details)
	}
	return slices.Sorted(maps.Keys(fields))
}

func repeat(s string, n int, sep string) string {
	return strings.Repeat(s+sep, n-1) + s
}

func jsonList(n int, f func(i int) string) string {
	xs := make([]string, n)
	for i := range xs {
		xs[i] = f(i)
	}
	return "[" + strings.Join(xs, ",") + "]"
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	s, err := submit(t, "", Limits{})
	if err != nil {
		t.Fatalf("got %v, want a valid submission", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"type", s.Type, apiv1.JobTypeStructuredRunner},
		{"project", s.Project, "demo"},
		{"runner_command", s.RunnerCommand, []string{"python", "main.py"}},
		{"payload", string(s.Payload), "{}"},
		{"timeout_s", s.TimeoutS, int64(3600)},
		{"runtime_hint_s", s.RuntimeHintS, int64(0)},
		{"max_retries", s.MaxRetries, 0},
		{"priority", s.Priority, "normal"},
		{"depends_on", s.DependsOn, []string(nil)},
		{"tags", s.Tags, []string(nil)},
		{"client_ref", s.ClientRef, (*string)(nil)},
		{"preset", s.Preset, ""},
		{"requirements", s.Requirements, Requirements{CPU: 1, MemoryMB: 2048, Profile: "cpu", StorageGB: 10}},
		{"reservation", s.ReservationMode, "best_effort"},
		{"checkpointing", s.Checkpointing, Checkpointing{PayloadKey: "_resume"}},
		{"reliability_mode", s.ReliabilityMode, "best_effort"},
		{"placement_policy", s.PlacementPolicy, "shared"},
		{"execution_policy", s.ExecutionPolicy, "sandboxed"},
		{"publish", s.Publish, map[string]string(nil)},
		{"merge_strategy", s.MergeStrategy, "collect"},
		{"rank_order", s.RankOrder, ""},
		{"meta", s.Meta, json.RawMessage(nil)},
		{"variant", s.Variant, (*string)(nil)},
		{"task_count", s.TaskCount, 1},
		{"expand type", s.Expand.Type, apiv1.JobTypeStructuredRunner},
	}
	for _, c := range checks {
		if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestValid(t *testing.T) {
	t.Parallel()
	lim := Limits{Presets: map[string]apiv1.JobRequirements{
		"gpu-small": {CPU: ptr(4.0), MemoryMB: ptr[int64](16384), GPUCount: ptr[int64](1), GPUMemoryMB: ptr[int64](24000), Profile: ptr("gpu")},
		"cpu-large": {CPU: ptr(16.0), MemoryMB: ptr[int64](65536), StorageGB: ptr[int64](100)},
	}}
	longRef := strings.Repeat("r", 255)
	tests := []struct {
		name  string
		extra string
		check func(t *testing.T, s *Submission)
	}{
		{"explicit nulls mean absent", `{"type":null,"payload":null,"client_ref":null,"preset":null,"requirements":null,
			"callback_url":null,"result_schema":null,"execution_policy":null,"tasks":null,"fan_out":null,"meta":null,
			"reservation":null,"checkpointing":null,"state":null,"timeout_s":null}`,
			func(t *testing.T, s *Submission) {
				if s.TimeoutS != 3600 || s.TaskCount != 1 || s.ClientRef != nil {
					t.Errorf("got %+v, want the defaults", s)
				}
			}},
		{"empty strings mean absent", `{"client_ref":"","preset":"","callback_url":"","execution_policy":""}`,
			func(t *testing.T, s *Submission) {
				if s.ClientRef != nil || s.Preset != "" || s.ExecutionPolicy != "sandboxed" {
					t.Errorf("got client_ref %v preset %q execution_policy %q, want absent", s.ClientRef, s.Preset, s.ExecutionPolicy)
				}
			}},
		{"every type name", `{"type":"structured_runner"}`, nil},
		{"payload is compacted", `{"payload": {"b": [1, 2],  "a": "x"}}`,
			func(t *testing.T, s *Submission) {
				if got, want := string(s.Payload), `{"b":[1,2],"a":"x"}`; got != want {
					t.Errorf("got payload %s, want %s", got, want)
				}
			}},
		{"scheduling fields", `{"timeout_s":60,"runtime_hint_s":30,"max_retries":10,"priority":"high"}`,
			func(t *testing.T, s *Submission) {
				if s.TimeoutS != 60 || s.RuntimeHintS != 30 || s.MaxRetries != 10 || s.Priority != "high" {
					t.Errorf("got %d %d %d %q", s.TimeoutS, s.RuntimeHintS, s.MaxRetries, s.Priority)
				}
			}},
		{"timeout at the maximum", `{"timeout_s":604800,"priority":"low"}`, nil},
		{"runtime hint above timeout is lowered to it", `{"timeout_s":100,"runtime_hint_s":5000}`,
			func(t *testing.T, s *Submission) {
				if s.RuntimeHintS != 100 {
					t.Errorf("got runtime_hint_s %d, want 100", s.RuntimeHintS)
				}
			}},
		{"depends_on at the limit", `{"depends_on":` + jsonList(50, func(i int) string { return fmt.Sprintf(`"job_%d"`, i) }) + `}`,
			func(t *testing.T, s *Submission) {
				if len(s.DependsOn) != 50 || s.DependsOn[49] != "job_49" {
					t.Errorf("got %d ids, want 50 in order", len(s.DependsOn))
				}
			}},
		{"repeated tags are dropped", `{"tags":["a","b","a","c","b"]}`,
			func(t *testing.T, s *Submission) {
				if want := []string{"a", "b", "c"}; !slices.Equal(s.Tags, want) {
					t.Errorf("got tags %q, want %q", s.Tags, want)
				}
			}},
		{"twenty tags", `{"tags":` + jsonList(20, func(i int) string { return fmt.Sprintf(`"t%d"`, i) }) + `}`, nil},
		{"client_ref of 255 bytes", `{"client_ref":"` + longRef + `"}`,
			func(t *testing.T, s *Submission) {
				if s.ClientRef == nil || *s.ClientRef != longRef {
					t.Errorf("got client_ref %v, want the 255-byte ref", s.ClientRef)
				}
			}},
		{"result_schema object is accepted", `{"result_schema":{"type":"object"}}`, nil},
		{"reservation best_effort", `{"reservation":{"mode":"best_effort","parallelism":null,"distribution":{}}}`, nil},
		{"empty reservation", `{"reservation":{}}`, nil},
		{"empty distribution", `{"distribution":{"max_tasks_per_node":null}}`, nil},
		{"execution_policy sandboxed", `{"execution_policy":"sandboxed"}`, nil},
		{"policies", `{"reliability_mode":"strict_complete","placement_policy":"dedicated"}`,
			func(t *testing.T, s *Submission) {
				if s.ReliabilityMode != "strict_complete" || s.PlacementPolicy != "dedicated" {
					t.Errorf("got %q %q", s.ReliabilityMode, s.PlacementPolicy)
				}
			}},
		{"checkpointing", `{"checkpointing":{"enabled":true,"resume_from_latest":true,"payload_key":"resume"}}`,
			func(t *testing.T, s *Submission) {
				if want := (Checkpointing{Enabled: true, ResumeFromLatest: true, PayloadKey: "resume"}); s.Checkpointing != want {
					t.Errorf("got %+v, want %+v", s.Checkpointing, want)
				}
			}},
		{"disabled checkpointing on a sweep", `{"type":"sweep","parameters":{"a":[1]},"rank_by":"loss","checkpointing":{"enabled":false}}`, nil},
		{"state publish", `{"state":{"publish":{"best":"aggregate_result.best","status":"status"}}}`,
			func(t *testing.T, s *Submission) {
				if want := map[string]string{"best": "aggregate_result.best", "status": "status"}; !maps.Equal(s.Publish, want) {
					t.Errorf("got publish %v, want %v", s.Publish, want)
				}
			}},
		{"meta and variant", `{"meta":{"run": 1},"variant":"b"}`,
			func(t *testing.T, s *Submission) {
				if string(s.Meta) != `{"run":1}` || s.Variant == nil || *s.Variant != "b" {
					t.Errorf("got meta %s variant %v", s.Meta, s.Variant)
				}
			}},
		{"preset", `{"preset":"gpu-small"}`,
			func(t *testing.T, s *Submission) {
				want := Requirements{CPU: 4, MemoryMB: 16384, GPUCount: 1, GPUMemoryMB: 24000, Profile: "gpu", StorageGB: 10}
				if s.Preset != "gpu-small" || s.Requirements != want {
					t.Errorf("got %q %+v, want %+v", s.Preset, s.Requirements, want)
				}
			}},
		{"explicit requirements win over the preset", `{"preset":"cpu-large","requirements":{"cpu":2.5,"min_single_core_score":1.5}}`,
			func(t *testing.T, s *Submission) {
				want := Requirements{CPU: 2.5, MemoryMB: 65536, Profile: "cpu", StorageGB: 100, MinSingleCoreScore: 1.5}
				if s.Requirements != want {
					t.Errorf("got %+v, want %+v", s.Requirements, want)
				}
			}},
		{"explicit cpu profile drops the preset's GPU", `{"preset":"gpu-small","requirements":{"profile":"cpu"}}`,
			func(t *testing.T, s *Submission) {
				want := Requirements{CPU: 4, MemoryMB: 16384, Profile: "cpu", StorageGB: 10}
				if s.Requirements != want {
					t.Errorf("got %+v, want %+v", s.Requirements, want)
				}
			}},
		{"gpu_count implies the gpu profile", `{"requirements":{"gpu_count":2,"gpu_memory_mb":40000}}`,
			func(t *testing.T, s *Submission) {
				if s.Requirements.Profile != "gpu" || s.Requirements.GPUCount != 2 {
					t.Errorf("got %+v, want profile gpu with 2 GPUs", s.Requirements)
				}
			}},
		{"gpu profile implies one GPU", `{"requirements":{"profile":"gpu"}}`,
			func(t *testing.T, s *Submission) {
				if s.Requirements.GPUCount != 1 {
					t.Errorf("got gpu_count %d, want 1", s.Requirements.GPUCount)
				}
			}},
		{"requirement bounds", `{"requirements":{"cpu":0.25,"memory_mb":1,"gpu_count":0,"gpu_memory_mb":0,"storage_gb":0,"min_single_core_score":1.0}}`, nil},
		{"requirement upper bounds", `{"requirements":{"cpu":512,"memory_mb":4194304,"gpu_count":16,"gpu_memory_mb":1048576,"storage_gb":65536,"min_single_core_score":3.0}}`, nil},
		{"fan out by", `{"payload":{"files":["a","b","c"]},"fan_out":{"by":"files"},"merge_strategy":"keyed"}`,
			func(t *testing.T, s *Submission) {
				if s.TaskCount != 3 || s.Expand.FanOut == nil || s.Expand.FanOut.By != "files" || s.MergeStrategy != "keyed" {
					t.Errorf("got %d tasks, fan_out %+v, merge %q", s.TaskCount, s.Expand.FanOut, s.MergeStrategy)
				}
			}},
		{"batch_size at the top level", `{"payload":{"xs":[1,2,3,4,5]},"fan_out":{"by":"xs"},"batch_size":2}`,
			func(t *testing.T, s *Submission) {
				if s.TaskCount != 3 || s.Expand.FanOut.BatchSize != 2 {
					t.Errorf("got %d tasks batch %d, want 3 and 2", s.TaskCount, s.Expand.FanOut.BatchSize)
				}
			}},
		{"batch_per_task inside fan_out", `{"payload":{"xs":[1,2,3,4,5]},"fan_out":{"by":"xs","batch_per_task":5}}`,
			func(t *testing.T, s *Submission) {
				if s.TaskCount != 1 || s.Expand.FanOut.BatchSize != 5 {
					t.Errorf("got %d tasks batch %d, want 1 and 5", s.TaskCount, s.Expand.FanOut.BatchSize)
				}
			}},
		{"agreeing batch sizes", `{"payload":{"xs":[1,2]},"fan_out":{"by":"xs","batch_size":2},"batch_size":2,"batch_per_task":2}`, nil},
		{"batching brings a large list under the task limit", `{"payload":{"xs":` + jsonList(20_000, func(i int) string { return "0" }) + `},"fan_out":{"by":"xs"},"batch_size":2}`,
			func(t *testing.T, s *Submission) {
				if s.TaskCount != 10_000 {
					t.Errorf("got %d tasks, want 10000", s.TaskCount)
				}
			}},
		{"fan out items", `{"fan_out":{"items":[{"a":1},{"a":2}]}}`,
			func(t *testing.T, s *Submission) {
				if s.TaskCount != 2 {
					t.Errorf("got %d tasks, want 2", s.TaskCount)
				}
			}},
		{"fan out chunks", `{"fan_out":{"chunks":10000,"total":1000000,"range_field":"seeds"}}`,
			func(t *testing.T, s *Submission) {
				f := s.Expand.FanOut
				if s.TaskCount != 10_000 || f.Chunks != 10_000 || f.Total != 1_000_000 || f.RangeField != "seeds" {
					t.Errorf("got %d tasks, fan_out %+v", s.TaskCount, f)
				}
			}},
		{"fan out chunks default range field", `{"fan_out":{"chunks":2,"total":2}}`,
			func(t *testing.T, s *Submission) {
				if s.Expand.FanOut.RangeField != "seed_range" {
					t.Errorf("got range field %q, want seed_range", s.Expand.FanOut.RangeField)
				}
			}},
		{"weighted average", `{"fan_out":{"items":[{}]},"merge_strategy":"weighted_avg","value_field":"score","weight_field":"n"}`,
			func(t *testing.T, s *Submission) {
				if s.MergeStrategy != "weighted_avg" || s.ValueField != "score" || s.WeightField != "n" {
					t.Errorf("got %q %q %q", s.MergeStrategy, s.ValueField, s.WeightField)
				}
			}},
		{"sweep", `{"type":"sweep","parameters":{"lr":[0.1,0.01],"bs":[16,32,64]},"fixed_payload":{"epochs":3},"rank_by":"loss","rank_order":"asc","payload":{}}`,
			func(t *testing.T, s *Submission) {
				if s.TaskCount != 6 || s.RankBy != "loss" || s.RankOrder != "asc" || string(s.Payload) != "{}" {
					t.Errorf("got %d tasks rank %q %q payload %s", s.TaskCount, s.RankBy, s.RankOrder, s.Payload)
				}
				if s.Expand.Sweep == nil || len(s.Expand.Sweep.Parameters) != 2 || string(s.Expand.Sweep.Fixed) != `{"epochs":3}` {
					t.Errorf("got sweep %+v", s.Expand.Sweep)
				}
			}},
		{"sweep of exactly 1000", `{"type":"sweep","rank_by":"x","parameters":{"a":` + jsonList(10, func(i int) string { return fmt.Sprint(i) }) +
			`,"b":` + jsonList(10, func(i int) string { return fmt.Sprint(i) }) + `,"c":` + jsonList(10, func(i int) string { return fmt.Sprint(i) }) + `}}`,
			func(t *testing.T, s *Submission) {
				if s.TaskCount != 1000 || s.RankOrder != "desc" {
					t.Errorf("got %d tasks order %q, want 1000 desc", s.TaskCount, s.RankOrder)
				}
			}},
		{"map reduce", `{"type":"map_reduce","payload":{"path":"p"},"split":{"field":"rows","start":5,"total":100,"chunks":4},
			"reduce":{"hits":"sum","loss":"weighted_avg:n","names":"concat","all":"collect","m":"mean","hi":"max","lo":"min","c":"count"}}`,
			func(t *testing.T, s *Submission) {
				sp := s.Expand.Split
				if s.TaskCount != 4 || sp == nil || sp.Field != "rows" || sp.Start != 5 || sp.Total != 100 || sp.Chunks != 4 {
					t.Errorf("got %d tasks split %+v", s.TaskCount, sp)
				}
				var got []string
				for _, r := range s.Reduce {
					got = append(got, r.Field+"="+r.Op+":"+r.WeightField)
				}
				want := []string{"all=collect:", "c=count:", "hi=max:", "hits=sum:", "lo=min:", "loss=weighted_avg:n", "m=mean:", "names=concat:"}
				if !slices.Equal(got, want) {
					t.Errorf("got reduce %q, want %q", got, want)
				}
			}},
		{"map reduce start defaults to 0", `{"type":"map_reduce","split":{"field":"r","total":3,"chunks":3},"reduce":{"x":"sum"}}`, nil},
		{"benchmark", `{"type":"benchmark","candidates":{"a":{"opt":1},"b":null},"shared_payload":{"data":"d"},"replicas":3,"rank_by":"time"}`,
			func(t *testing.T, s *Submission) {
				b := s.Expand.Benchmark
				if s.TaskCount != 6 || b == nil || b.Replicas != 3 || len(b.Candidates) != 2 || s.RankBy != "time" || s.RankOrder != "desc" {
					t.Errorf("got %d tasks benchmark %+v rank %q %q", s.TaskCount, b, s.RankBy, s.RankOrder)
				}
			}},
		{"benchmark without rank_by, one replica", `{"type":"benchmark","candidates":{"a":{},"b":{}}}`,
			func(t *testing.T, s *Submission) {
				if s.TaskCount != 2 || s.RankBy != "" {
					t.Errorf("got %d tasks rank_by %q", s.TaskCount, s.RankBy)
				}
			}},
		{"merge_strategy collect on a sweep", `{"type":"sweep","parameters":{"a":[1]},"rank_by":"x","merge_strategy":"collect"}`, nil},
		{"unknown fields are ignored", `{"colour":"blue","requirements":{"tpu":1}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := submit(t, tt.extra, lim)
			if err != nil {
				t.Fatalf("got %v, want a valid submission", err)
			}
			if tt.check != nil {
				tt.check(t, s)
			}
		})
	}
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	lim := Limits{Presets: map[string]apiv1.JobRequirements{"small": {CPU: ptr(1.0)}}}
	items := func(n int) string {
		return `{"payload":{"xs":` + jsonList(n, func(i int) string { return "1" }) + `},"fan_out":{"by":"xs"}}`
	}
	tests := []struct {
		name   string
		extra  string
		fields []string
		code   string // when set, the fault's code
		lim    *Limits
	}{
		// type, project, tasks
		{name: "unknown type", extra: `{"type":"pipeline"}`, fields: []string{"type"}},
		{name: "project missing", extra: `{"project":"-"}`, fields: []string{"project"}},
		{name: "project empty", extra: `{"project":""}`, fields: []string{"project"}},
		{name: "project upper case", extra: `{"project":"Demo"}`, fields: []string{"project"}},
		{name: "project too long", extra: `{"project":"` + strings.Repeat("a", 65) + `"}`, fields: []string{"project"}},
		{name: "project with a slash", extra: `{"project":"a/b"}`, fields: []string{"project"}},
		{name: "tasks array", extra: `{"tasks":[{"payload":{}}]}`, fields: []string{"tasks"}, code: "tasks_unsupported"},
		{name: "empty tasks array", extra: `{"tasks":[]}`, fields: []string{"tasks"}},

		// runner_command, payload
		{name: "runner_command missing", extra: `{"runner_command":"-"}`, fields: []string{"runner_command"}},
		{name: "runner_command empty", extra: `{"runner_command":[]}`, fields: []string{"runner_command"}},
		{name: "runner_command empty argument", extra: `{"runner_command":["python",""]}`, fields: []string{"runner_command[1]"}},
		{name: "runner_command null argument", extra: `{"runner_command":[null]}`, fields: []string{"runner_command[0]"}},
		{name: "runner_command with NUL", extra: `{"runner_command":["a\u0000b"]}`, fields: []string{"runner_command[0]"}},
		{name: "runner_command too many arguments", extra: `{"runner_command":` + jsonList(257, func(int) string { return `"x"` }) + `}`, fields: []string{"runner_command"}},
		{name: "runner_command argument too long", extra: `{"runner_command":["` + strings.Repeat("x", 4097) + `"]}`, fields: []string{"runner_command[0]"}},
		{name: "runner_command too long in all", extra: `{"runner_command":` + jsonList(20, func(int) string { return `"` + strings.Repeat("x", 4000) + `"` }) + `}`, fields: []string{"runner_command"}},
		{name: "payload a list", extra: `{"payload":[1]}`, fields: []string{"payload"}},
		{name: "payload a string", extra: `{"payload":"x"}`, fields: []string{"payload"}},

		// scheduling
		{name: "timeout zero", extra: `{"timeout_s":0}`, fields: []string{"timeout_s"}},
		{name: "timeout negative", extra: `{"timeout_s":-5}`, fields: []string{"timeout_s"}},
		{name: "timeout above 7 days", extra: `{"timeout_s":604801}`, fields: []string{"timeout_s"}},
		{name: "timeout above the operator's maximum", extra: `{"timeout_s":601}`, fields: []string{"timeout_s"}, lim: &Limits{MaxTimeoutS: 600}},
		{name: "runtime hint zero", extra: `{"runtime_hint_s":0}`, fields: []string{"runtime_hint_s"}},
		{name: "max_retries negative", extra: `{"max_retries":-1}`, fields: []string{"max_retries"}},
		{name: "max_retries above 10", extra: `{"max_retries":11}`, fields: []string{"max_retries"}},
		{name: "priority unknown", extra: `{"priority":"urgent"}`, fields: []string{"priority"}},
		{name: "depends_on too many", extra: `{"depends_on":` + jsonList(51, func(i int) string { return fmt.Sprintf(`"job_%d"`, i) }) + `}`, fields: []string{"depends_on"}},
		{name: "depends_on not a job id", extra: `{"depends_on":["job_a","tsk_b"]}`, fields: []string{"depends_on[1]"}},
		{name: "depends_on bare prefix", extra: `{"depends_on":["job_"]}`, fields: []string{"depends_on[0]"}},
		{name: "depends_on upper case", extra: `{"depends_on":["job_ABC"]}`, fields: []string{"depends_on[0]"}},
		{name: "depends_on repeated", extra: `{"depends_on":["job_a","job_b","job_a"]}`, fields: []string{"depends_on[2]"}},
		{name: "tags too many", extra: `{"tags":` + jsonList(21, func(i int) string { return fmt.Sprintf(`"t%d"`, i) }) + `}`, fields: []string{"tags"}},
		{name: "tag empty", extra: `{"tags":["a",""]}`, fields: []string{"tags[1]"}},
		{name: "tag too long", extra: `{"tags":["` + strings.Repeat("t", 129) + `"]}`, fields: []string{"tags[0]"}},
		{name: "tag with a newline", extra: `{"tags":["a\nb"]}`, fields: []string{"tags[0]"}},
		{name: "client_ref a number", extra: `{"client_ref":5}`, fields: []string{"client_ref"}},
		{name: "client_ref an object", extra: `{"client_ref":{}}`, fields: []string{"client_ref"}},
		{name: "client_ref too long", extra: `{"client_ref":"` + strings.Repeat("r", 256) + `"}`, fields: []string{"client_ref"}},

		// preset and requirements
		{name: "unknown preset", extra: `{"preset":"huge"}`, fields: []string{"preset"}, code: "unknown_preset"},
		{name: "preset when none exist", extra: `{"preset":"small"}`, fields: []string{"preset"}, lim: &Limits{}},
		{name: "cpu zero", extra: `{"requirements":{"cpu":0}}`, fields: []string{"requirements.cpu"}},
		{name: "cpu negative", extra: `{"requirements":{"cpu":-1}}`, fields: []string{"requirements.cpu"}},
		{name: "cpu absurd", extra: `{"requirements":{"cpu":513}}`, fields: []string{"requirements.cpu"}},
		{name: "memory zero", extra: `{"requirements":{"memory_mb":0}}`, fields: []string{"requirements.memory_mb"}},
		{name: "memory absurd", extra: `{"requirements":{"memory_mb":4194305}}`, fields: []string{"requirements.memory_mb"}},
		{name: "gpu_count negative", extra: `{"requirements":{"gpu_count":-1}}`, fields: []string{"requirements.gpu_count"}},
		{name: "gpu_count absurd", extra: `{"requirements":{"gpu_count":17}}`, fields: []string{"requirements.gpu_count"}},
		{name: "gpu_memory negative", extra: `{"requirements":{"gpu_memory_mb":-1}}`, fields: []string{"requirements.gpu_memory_mb"}},
		{name: "profile unknown", extra: `{"requirements":{"profile":"tpu"}}`, fields: []string{"requirements.profile"}},
		{name: "storage negative", extra: `{"requirements":{"storage_gb":-1}}`, fields: []string{"requirements.storage_gb"}},
		{name: "core score below baseline", extra: `{"requirements":{"min_single_core_score":0.5}}`, fields: []string{"requirements.min_single_core_score"}},
		{name: "core score above 3", extra: `{"requirements":{"min_single_core_score":3.01}}`, fields: []string{"requirements.min_single_core_score"}},
		{name: "cpu profile with GPUs", extra: `{"requirements":{"profile":"cpu","gpu_count":2}}`, fields: []string{"requirements.profile"}},
		{name: "gpu profile without GPUs", extra: `{"requirements":{"profile":"gpu","gpu_count":0}}`, fields: []string{"requirements.gpu_count"}},
		{name: "GPU memory without GPUs", extra: `{"requirements":{"gpu_memory_mb":1000}}`, fields: []string{"requirements.gpu_memory_mb"}},
		{name: "several requirements at once", extra: `{"requirements":{"cpu":0,"memory_mb":-1,"profile":"x"}}`,
			fields: []string{"requirements.cpu", "requirements.memory_mb", "requirements.profile"}},

		// reservation and distribution
		{name: "guaranteed reservation", extra: `{"reservation":{"mode":"guaranteed"}}`, fields: []string{"reservation.mode"}, code: "reservation_unsupported"},
		{name: "unknown reservation mode", extra: `{"reservation":{"mode":"spot"}}`, fields: []string{"reservation.mode"}},
		{name: "reservation parallelism", extra: `{"reservation":{"mode":"best_effort","parallelism":4}}`, fields: []string{"reservation.parallelism"}, code: "reservation_unsupported"},
		{name: "reservation guaranteed_for_s", extra: `{"reservation":{"guaranteed_for_s":60}}`, fields: []string{"reservation.guaranteed_for_s"}},
		{name: "reservation max_wait_s", extra: `{"reservation":{"max_wait_s":"soon"}}`, fields: []string{"reservation.max_wait_s"}},
		{name: "reservation distribution", extra: `{"reservation":{"distribution":{"max_tasks_per_node":1}}}`, fields: []string{"reservation.distribution.max_tasks_per_node"}},
		{name: "top-level distribution", extra: `{"distribution":{"max_tasks_per_node":1}}`, fields: []string{"distribution.max_tasks_per_node"}, code: "reservation_unsupported"},
		{name: "every guaranteed field", extra: `{"reservation":{"mode":"guaranteed","parallelism":4,"guaranteed_for_s":60,"max_wait_s":5}}`,
			fields: []string{"reservation.guaranteed_for_s", "reservation.max_wait_s", "reservation.mode", "reservation.parallelism"}, code: "invalid_job"},

		// policies
		{name: "checkpointing on a sweep", extra: `{"type":"sweep","parameters":{"a":[1]},"rank_by":"x","checkpointing":{"enabled":true}}`, fields: []string{"checkpointing.enabled"}},
		{name: "checkpointing on map_reduce", extra: `{"type":"map_reduce","split":{"field":"r","total":1,"chunks":1},"reduce":{"a":"sum"},"checkpointing":{"enabled":true}}`, fields: []string{"checkpointing.enabled"}},
		{name: "resume without checkpointing", extra: `{"checkpointing":{"resume_from_latest":true}}`, fields: []string{"checkpointing.resume_from_latest"}},
		{name: "empty payload key", extra: `{"checkpointing":{"enabled":true,"payload_key":""}}`, fields: []string{"checkpointing.payload_key"}},
		{name: "reliability mode unknown", extra: `{"reliability_mode":"exactly_once"}`, fields: []string{"reliability_mode"}},
		{name: "placement policy unknown", extra: `{"placement_policy":"anywhere"}`, fields: []string{"placement_policy"}},
		{name: "execution policy unsandboxed", extra: `{"execution_policy":"unsandboxed"}`, fields: []string{"execution_policy"}, code: "execution_policy_unsupported"},
		{name: "callback url", extra: `{"callback_url":"https://example.com/hook"}`, fields: []string{"callback_url"}, code: "callback_url_unsupported"},
		{name: "callback url a number", extra: `{"callback_url":5}`, fields: []string{"callback_url"}},
		{name: "callback url an object", extra: `{"callback_url":{}}`, fields: []string{"callback_url"}},
		{name: "callback url a space", extra: `{"callback_url":" "}`, fields: []string{"callback_url"}},
		{name: "result_schema a string", extra: `{"result_schema":"object"}`, fields: []string{"result_schema"}},
		{name: "result_schema a list", extra: `{"result_schema":[]}`, fields: []string{"result_schema"}},
		{name: "result_schema a boolean", extra: `{"result_schema":true}`, fields: []string{"result_schema"}},
		{name: "publish an empty path", extra: `{"state":{"publish":{"k":""}}}`, fields: []string{"state.publish.k"}},
		{name: "publish a path with an empty segment", extra: `{"state":{"publish":{"k":"a..b"}}}`, fields: []string{"state.publish.k"}},
		{name: "publish an empty key", extra: `{"state":{"publish":{"":"status"}}}`, fields: []string{"state.publish"}},
		{name: "publish too many", extra: `{"state":{"publish":{` + repeatPairs(33) + `}}}`, fields: []string{"state.publish"}},
		{name: "meta a list", extra: `{"meta":[1]}`, fields: []string{"meta"}},
		{name: "meta too large", extra: `{"meta":{"x":"` + strings.Repeat("m", 16<<10) + `"}}`, fields: []string{"meta"}},
		{name: "variant too long", extra: `{"variant":"` + strings.Repeat("v", 256) + `"}`, fields: []string{"variant"}},

		// fan-out
		{name: "fan out empty", extra: `{"fan_out":{}}`, fields: []string{"fan_out"}},
		{name: "fan out by and items", extra: `{"payload":{"xs":[1]},"fan_out":{"by":"xs","items":[{}]}}`, fields: []string{"fan_out"}, code: "mixed_fan_out"},
		{name: "fan out items and chunks", extra: `{"fan_out":{"items":[{}],"chunks":2,"total":4}}`, fields: []string{"fan_out"}, code: "mixed_fan_out"},
		{name: "fan out by and range field", extra: `{"payload":{"xs":[1]},"fan_out":{"by":"xs","range_field":"r"}}`, fields: []string{"fan_out"}},
		{name: "fan out on a sweep", extra: `{"type":"sweep","parameters":{"a":[1]},"rank_by":"x","fan_out":{"by":"xs"}}`, fields: []string{"fan_out"}},
		{name: "fan out by an underscore field", extra: `{"payload":{"_xs":[1]},"fan_out":{"by":"_xs"}}`, fields: []string{"fan_out.by"}},
		{name: "fan out by an empty name", extra: `{"fan_out":{"by":""}}`, fields: []string{"fan_out.by"}},
		{name: "fan out by a missing field", extra: `{"payload":{"ys":[1]},"fan_out":{"by":"xs"}}`, fields: []string{"payload.xs"}},
		{name: "fan out by a non-list", extra: `{"payload":{"xs":"abc"},"fan_out":{"by":"xs"}}`, fields: []string{"payload.xs"}},
		{name: "fan out by an empty list", extra: `{"payload":{"xs":[]},"fan_out":{"by":"xs"}}`, fields: []string{"payload.xs"}},
		{name: "fan out items empty", extra: `{"fan_out":{"items":[]}}`, fields: []string{"fan_out.items"}},
		{name: "fan out item not an object", extra: `{"fan_out":{"items":[{},5,"x"]}}`, fields: []string{"fan_out.items[1]", "fan_out.items[2]"}},
		{name: "fan out chunks without total", extra: `{"fan_out":{"chunks":4}}`, fields: []string{"fan_out.total"}},
		{name: "fan out total without chunks", extra: `{"fan_out":{"total":4}}`, fields: []string{"fan_out.chunks"}},
		{name: "fan out chunks zero", extra: `{"fan_out":{"chunks":0,"total":4}}`, fields: []string{"fan_out.chunks"}},
		{name: "fan out total below chunks", extra: `{"fan_out":{"chunks":5,"total":4}}`, fields: []string{"fan_out.total"}},
		{name: "fan out total beyond safe integers", extra: `{"fan_out":{"chunks":5,"total":9007199254740992}}`, fields: []string{"fan_out.total"}},
		{name: "fan out range field empty", extra: `{"fan_out":{"chunks":2,"total":4,"range_field":""}}`, fields: []string{"fan_out.range_field"}},
		{name: "fan out range field underscore", extra: `{"fan_out":{"chunks":2,"total":4,"range_field":"_r"}}`, fields: []string{"fan_out.range_field"}},
		{name: "fan out chunks above the task limit", extra: `{"fan_out":{"chunks":10001,"total":20000}}`, fields: []string{"fan_out.chunks"}},
		{name: "fan out by above the task limit", extra: items(10_001), fields: []string{"fan_out"}, code: "too_many_tasks"},
		{name: "fan out by above the operator's task limit", extra: items(6), fields: []string{"fan_out"}, lim: &Limits{MaxTasks: 5}},
		{name: "fan out items above the task limit", extra: `{"fan_out":{"items":` + jsonList(10_001, func(int) string { return "{}" }) + `}}`, fields: []string{"fan_out"}},
		{name: "batch_size with items", extra: `{"fan_out":{"items":[{}]},"batch_size":2}`, fields: []string{"batch_size"}},
		{name: "batch_size with chunks", extra: `{"fan_out":{"chunks":2,"total":2,"batch_size":2}}`, fields: []string{"batch_size"}},
		{name: "batch_size without fan out", extra: `{"batch_size":2}`, fields: []string{"batch_size"}},
		{name: "batch_size zero", extra: `{"payload":{"xs":[1]},"fan_out":{"by":"xs"},"batch_size":0}`, fields: []string{"batch_size"}},
		{name: "batch_size and batch_per_task disagree", extra: `{"payload":{"xs":[1]},"fan_out":{"by":"xs","batch_per_task":3},"batch_size":2}`, fields: []string{"fan_out.batch_per_task"}},
		{name: "batch_per_task on a benchmark", extra: `{"type":"benchmark","candidates":{"a":{},"b":{}},"batch_per_task":2}`, fields: []string{"batch_per_task"}},
		{name: "merge strategy unknown", extra: `{"merge_strategy":"sum"}`, fields: []string{"merge_strategy"}},
		{name: "keyed without fan out by", extra: `{"fan_out":{"items":[{}]},"merge_strategy":"keyed"}`, fields: []string{"merge_strategy"}},
		{name: "keyed on a sweep", extra: `{"type":"sweep","parameters":{"a":[1]},"rank_by":"x","merge_strategy":"keyed"}`, fields: []string{"merge_strategy"}},
		{name: "weighted average without fields", extra: `{"merge_strategy":"weighted_avg"}`, fields: []string{"value_field", "weight_field"}},
		{name: "weighted average with an empty field", extra: `{"merge_strategy":"weighted_avg","value_field":"v","weight_field":""}`, fields: []string{"weight_field"}},
		{name: "value field without weighted average", extra: `{"value_field":"v","weight_field":"w"}`, fields: []string{"value_field", "weight_field"}},

		// sweep
		{name: "sweep without parameters", extra: `{"type":"sweep","rank_by":"x"}`, fields: []string{"parameters"}},
		{name: "sweep without rank_by", extra: `{"type":"sweep","parameters":{"a":[1]}}`, fields: []string{"rank_by"}},
		{name: "sweep parameters a list", extra: `{"type":"sweep","rank_by":"x","parameters":[1]}`, fields: []string{"parameters"}},
		{name: "sweep parameters empty", extra: `{"type":"sweep","rank_by":"x","parameters":{}}`, fields: []string{"parameters"}},
		{name: "sweep parameter not a list", extra: `{"type":"sweep","rank_by":"x","parameters":{"a":5}}`, fields: []string{"parameters.a"}},
		{name: "sweep parameter empty list", extra: `{"type":"sweep","rank_by":"x","parameters":{"a":[1],"b":[]}}`, fields: []string{"parameters.b"}},
		{name: "sweep parameter underscore", extra: `{"type":"sweep","rank_by":"x","parameters":{"_sweep_idx":[1]}}`, fields: []string{"parameters"}},
		{name: "sweep too many parameters", extra: `{"type":"sweep","rank_by":"x","parameters":{` + repeatParams(65) + `}}`, fields: []string{"parameters"}},
		{name: "sweep of 1001 combinations", extra: `{"type":"sweep","rank_by":"x","parameters":{"a":` + jsonList(7, func(i int) string { return fmt.Sprint(i) }) +
			`,"b":` + jsonList(11, func(i int) string { return fmt.Sprint(i) }) + `,"c":` + jsonList(13, func(i int) string { return fmt.Sprint(i) }) + `}}`,
			fields: []string{"parameters"}, code: "too_many_tasks"},
		{name: "sweep of astronomically many combinations", extra: `{"type":"sweep","rank_by":"x","parameters":{` + repeatParams(40) + `}}`,
			fields: []string{"parameters"}, code: "too_many_tasks"},
		{name: "sweep with a payload", extra: `{"type":"sweep","rank_by":"x","parameters":{"a":[1]},"payload":{"b":1}}`, fields: []string{"payload"}},
		{name: "sweep fixed payload a list", extra: `{"type":"sweep","rank_by":"x","parameters":{"a":[1]},"fixed_payload":[1]}`, fields: []string{"fixed_payload"}},
		{name: "sweep rank order unknown", extra: `{"type":"sweep","rank_by":"x","parameters":{"a":[1]},"rank_order":"up"}`, fields: []string{"rank_order"}},
		{name: "sweep rank_by empty", extra: `{"type":"sweep","rank_by":"","parameters":{"a":[1]}}`, fields: []string{"rank_by"}},

		// map_reduce
		{name: "map reduce without split or reduce", extra: `{"type":"map_reduce"}`, fields: []string{"reduce", "split"}},
		{name: "map reduce split without field", extra: `{"type":"map_reduce","split":{"total":4,"chunks":2},"reduce":{"a":"sum"}}`, fields: []string{"split.field"}},
		{name: "map reduce split field underscore", extra: `{"type":"map_reduce","split":{"field":"_r","total":4,"chunks":2},"reduce":{"a":"sum"}}`, fields: []string{"split.field"}},
		{name: "map reduce split without chunks or total", extra: `{"type":"map_reduce","split":{"field":"r"},"reduce":{"a":"sum"}}`, fields: []string{"split.chunks", "split.total"}},
		{name: "map reduce chunks zero", extra: `{"type":"map_reduce","split":{"field":"r","total":4,"chunks":0},"reduce":{"a":"sum"}}`, fields: []string{"split.chunks"}},
		{name: "map reduce total below chunks", extra: `{"type":"map_reduce","split":{"field":"r","total":3,"chunks":4},"reduce":{"a":"sum"}}`, fields: []string{"split.total"}},
		{name: "map reduce end beyond safe integers", extra: `{"type":"map_reduce","split":{"field":"r","start":9007199254740000,"total":10000,"chunks":4},"reduce":{"a":"sum"}}`, fields: []string{"split.total"}},
		{name: "map reduce start beyond safe integers", extra: `{"type":"map_reduce","split":{"field":"r","start":-9007199254740992,"total":4,"chunks":4},"reduce":{"a":"sum"}}`, fields: []string{"split.start"}},
		{name: "map reduce chunks above the task limit", extra: `{"type":"map_reduce","split":{"field":"r","total":20000,"chunks":10001},"reduce":{"a":"sum"}}`, fields: []string{"split.chunks"}},
		{name: "map reduce chunks above the operator's task limit", extra: `{"type":"map_reduce","split":{"field":"r","total":20,"chunks":11},"reduce":{"a":"sum"}}`, fields: []string{"split.chunks"}, lim: &Limits{MaxTasks: 10}},
		{name: "reduce empty", extra: `{"type":"map_reduce","split":{"field":"r","total":4,"chunks":2},"reduce":{}}`, fields: []string{"reduce"}},
		{name: "reduce unknown operator", extra: `{"type":"map_reduce","split":{"field":"r","total":4,"chunks":2},"reduce":{"a":"median"}}`, fields: []string{"reduce.a"}},
		{name: "reduce weighted average without weight", extra: `{"type":"map_reduce","split":{"field":"r","total":4,"chunks":2},"reduce":{"a":"weighted_avg:"}}`, fields: []string{"reduce.a"}},
		{name: "reduce bare weighted average", extra: `{"type":"map_reduce","split":{"field":"r","total":4,"chunks":2},"reduce":{"a":"weighted_avg"}}`, fields: []string{"reduce.a"}},
		{name: "reduce empty field name", extra: `{"type":"map_reduce","split":{"field":"r","total":4,"chunks":2},"reduce":{"":"sum"}}`, fields: []string{"reduce"}},
		{name: "reduce too many fields", extra: `{"type":"map_reduce","split":{"field":"r","total":4,"chunks":2},"reduce":{` + repeatPairsOp(65) + `}}`, fields: []string{"reduce"}},
		{name: "map reduce with fan out", extra: `{"type":"map_reduce","split":{"field":"r","total":4,"chunks":2},"reduce":{"a":"sum"},"fan_out":{"chunks":2,"total":2}}`, fields: []string{"fan_out"}},

		// benchmark
		{name: "benchmark without candidates", extra: `{"type":"benchmark"}`, fields: []string{"candidates"}},
		{name: "benchmark with one candidate", extra: `{"type":"benchmark","candidates":{"a":{}}}`, fields: []string{"candidates"}},
		{name: "benchmark candidates a list", extra: `{"type":"benchmark","candidates":[{},{}]}`, fields: []string{"candidates"}},
		{name: "benchmark too many candidates", extra: `{"type":"benchmark","candidates":{` + repeatCands(101) + `}}`, fields: []string{"candidates"}},
		{name: "benchmark config not an object", extra: `{"type":"benchmark","candidates":{"a":5,"b":{}}}`, fields: []string{"candidates.a"}},
		{name: "benchmark empty candidate name", extra: `{"type":"benchmark","candidates":{"":{},"b":{}}}`, fields: []string{"candidates"}},
		{name: "benchmark replicas zero", extra: `{"type":"benchmark","candidates":{"a":{},"b":{}},"replicas":0}`, fields: []string{"replicas"}},
		{name: "benchmark replicas above 100", extra: `{"type":"benchmark","candidates":{"a":{},"b":{}},"replicas":101}`, fields: []string{"replicas"}},
		{name: "benchmark above the operator's task limit", extra: `{"type":"benchmark","candidates":{"a":{},"b":{}},"replicas":6}`, fields: []string{"candidates"}, lim: &Limits{MaxTasks: 10}},
		{name: "benchmark with a payload", extra: `{"type":"benchmark","candidates":{"a":{},"b":{}},"payload":{"x":1}}`, fields: []string{"payload"}},
		{name: "benchmark shared payload a number", extra: `{"type":"benchmark","candidates":{"a":{},"b":{}},"shared_payload":1}`, fields: []string{"shared_payload"}},
		{name: "benchmark rank order unknown", extra: `{"type":"benchmark","candidates":{"a":{},"b":{}},"rank_order":"sideways"}`, fields: []string{"rank_order"}},

		// fields of other types
		{name: "parameters on a structured runner", extra: `{"parameters":{"a":[1]}}`, fields: []string{"parameters"}},
		{name: "fixed_payload on a benchmark", extra: `{"type":"benchmark","candidates":{"a":{},"b":{}},"fixed_payload":{}}`, fields: []string{"fixed_payload"}},
		{name: "split on a sweep", extra: `{"type":"sweep","parameters":{"a":[1]},"rank_by":"x","split":{"field":"r"}}`, fields: []string{"split"}},
		{name: "reduce on a structured runner", extra: `{"reduce":{"a":"sum"}}`, fields: []string{"reduce"}},
		{name: "candidates on a sweep", extra: `{"type":"sweep","parameters":{"a":[1]},"rank_by":"x","candidates":{"a":{},"b":{}}}`, fields: []string{"candidates"}},
		{name: "shared_payload on a structured runner", extra: `{"shared_payload":{}}`, fields: []string{"shared_payload"}},
		{name: "replicas on a map reduce", extra: `{"type":"map_reduce","split":{"field":"r","total":4,"chunks":2},"reduce":{"a":"sum"},"replicas":2}`, fields: []string{"replicas"}},
		{name: "rank_by on a structured runner", extra: `{"rank_by":"x"}`, fields: []string{"rank_by"}},
		{name: "rank_order on a map reduce", extra: `{"type":"map_reduce","split":{"field":"r","total":4,"chunks":2},"reduce":{"a":"sum"},"rank_order":"asc"}`, fields: []string{"rank_order"}},

		// several problems at once
		{name: "sweep problems are reported together", extra: `{"type":"sweep","payload":{"b":1}}`,
			fields: []string{"parameters", "payload", "rank_by"}},
		{name: "too many combinations and no rank_by", extra: `{"type":"sweep","parameters":{` + repeatParams(11) + `}}`,
			fields: []string{"parameters", "rank_by"}},
		{name: "every problem is reported", extra: `{"project":"-","runner_command":"-","timeout_s":0,"callback_url":"x","priority":"now"}`,
			fields: []string{"callback_url", "priority", "project", "runner_command", "timeout_s"}, code: "invalid_job"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := lim
			if tt.lim != nil {
				l = *tt.lim
			}
			s, err := submit(t, tt.extra, l)
			if err == nil {
				t.Fatalf("got a valid submission (%d tasks), want problems on %q", s.TaskCount, tt.fields)
			}
			if got := fieldsOf(t, err); !slices.Equal(got, tt.fields) {
				fe, _ := fault.As(err)
				t.Errorf("got problems on %q (%v), want %q", got, fe.Details["fields"], tt.fields)
			}
			fe, _ := fault.As(err)
			if tt.code != "" && fe.Code != tt.code {
				t.Errorf("got code %q, want %q", fe.Code, tt.code)
			}
			if fe.Action == "" {
				t.Errorf("got no recommended action")
			}
		})
	}
}

func repeatPairs(n int) string {
	xs := make([]string, n)
	for i := range xs {
		xs[i] = fmt.Sprintf(`"k%d":"status"`, i)
	}
	return strings.Join(xs, ",")
}

func repeatPairsOp(n int) string {
	xs := make([]string, n)
	for i := range xs {
		xs[i] = fmt.Sprintf(`"f%d":"sum"`, i)
	}
	return strings.Join(xs, ",")
}

func repeatParams(n int) string {
	xs := make([]string, n)
	for i := range xs {
		xs[i] = fmt.Sprintf(`"p%d":[1,2]`, i)
	}
	return strings.Join(xs, ",")
}

func repeatCands(n int) string {
	xs := make([]string, n)
	for i := range xs {
		xs[i] = fmt.Sprintf(`"c%d":{}`, i)
	}
	return strings.Join(xs, ",")
}

func TestErrorShape(t *testing.T) {
	t.Parallel()
	t.Run("one problem", func(t *testing.T) {
		t.Parallel()
		_, err := submit(t, `{"project":"-"}`, Limits{})
		fe, ok := fault.As(err)
		if !ok {
			t.Fatalf("got %v, want a fault", err)
		}
		if fe.Kind != fault.KindInvalid || fe.Code != "invalid_job" {
			t.Errorf("got kind %q code %q, want invalid invalid_job", fe.Kind, fe.Code)
		}
		if want := "invalid job: project: required: the name of a registered project"; fe.Message != want {
			t.Errorf("got message %q, want %q", fe.Message, want)
		}
		if fe.Action != genericAction {
			t.Errorf("got action %q, want %q", fe.Action, genericAction)
		}
	})
	t.Run("one problem with its own action", func(t *testing.T) {
		t.Parallel()
		_, err := submit(t, `{"callback_url":"https://x"}`, Limits{})
		fe, _ := fault.As(err)
		if fe.Code != "callback_url_unsupported" || !strings.Contains(fe.Action, "/stream") {
			t.Errorf("got code %q action %q, want callback_url_unsupported and a pointer to the stream", fe.Code, fe.Action)
		}
	})
	t.Run("several problems", func(t *testing.T) {
		t.Parallel()
		_, err := submit(t, `{"callback_url":"https://x","timeout_s":0}`, Limits{})
		fe, _ := fault.As(err)
		if want := "invalid job: 2 fields are invalid: callback_url, timeout_s (see details.fields)"; fe.Message != want {
			t.Errorf("got message %q, want %q", fe.Message, want)
		}
		if fe.Code != "invalid_job" || fe.Action != genericAction {
			t.Errorf("got code %q action %q, want the generic ones", fe.Code, fe.Action)
		}
		fields := fe.Details["fields"].(map[string]any)
		if fields["timeout_s"] != "must be > 0 and at most 604800 seconds" {
			t.Errorf("got timeout_s message %q", fields["timeout_s"])
		}
	})
	t.Run("nil submission", func(t *testing.T) {
		t.Parallel()
		if _, err := Validate(nil, Limits{}); !fault.Is(err, fault.KindInvalid) {
			t.Errorf("got %v, want an invalid fault", err)
		}
	})
	t.Run("unknown preset lists the known ones", func(t *testing.T) {
		t.Parallel()
		_, err := submit(t, `{"preset":"x"}`, Limits{Presets: map[string]apiv1.JobRequirements{"b": {}, "a": {}}})
		fe, _ := fault.As(err)
		if !strings.Contains(fe.Message, "known: a, b") {
			t.Errorf("got message %q, want it to list a, b", fe.Message)
		}
	})
}

func TestValidatedSpecsExpand(t *testing.T) {
	t.Parallel()
	// Every valid submission's Spec expands, and into TaskCount tasks.
	for _, extra := range []string{
		``,
		`{"payload":{"xs":[1,2,3]},"fan_out":{"by":"xs"},"batch_size":2}`,
		`{"fan_out":{"items":[{"a":1},{"b":2}]}}`,
		`{"fan_out":{"chunks":3,"total":10}}`,
		`{"type":"sweep","parameters":{"a":[1,2],"b":[3]},"rank_by":"x"}`,
		`{"type":"map_reduce","split":{"field":"r","total":10,"chunks":3},"reduce":{"a":"sum"}}`,
		`{"type":"benchmark","candidates":{"a":{},"b":{}},"replicas":2}`,
	} {
		s, err := submit(t, extra, Limits{})
		if err != nil {
			t.Fatalf("%s: got %v, want valid", extra, err)
		}
		tasks, err := expand.Tasks(&s.Expand)
		if err != nil || len(tasks) != s.TaskCount {
			t.Errorf("%s: got %d tasks, %v; want %d", extra, len(tasks), err, s.TaskCount)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func BenchmarkValidateAndExpandFanOut10k(b *testing.B) {
	xs := jsonList(10_000, func(i int) string { return fmt.Sprintf(`{"id":%d,"path":"data/part-%05d.parquet"}`, i, i) })
	body := []byte(`{"project":"demo","runner_command":["python","main.py"],"payload":{"model":"m","xs":` + xs + `},"fan_out":{"by":"xs"}}`)
	b.ReportAllocs()
	for b.Loop() {
		s, err := Decode(body)
		if err != nil {
			b.Fatal(err)
		}
		sub, err := Validate(s, Limits{})
		if err != nil {
			b.Fatal(err)
		}
		tasks, err := expand.Tasks(&sub.Expand)
		if err != nil || len(tasks) != 10_000 {
			b.Fatalf("got %d tasks, %v", len(tasks), err)
		}
	}
}
