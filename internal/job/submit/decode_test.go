package submit

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/internal/fault"
)

func TestDecodeTypeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   string
		fields map[string]string
	}{
		{"integer as a string", `{"timeout_s":"10"}`, map[string]string{"timeout_s": "must be an integer, not string"}},
		{"integer as a fraction", `{"max_retries":1.5}`, map[string]string{"max_retries": "must be an integer, not number 1.5"}},
		{"integer too large", `{"timeout_s":1e30}`, map[string]string{"timeout_s": "must be an integer, not number 1e30"}},
		{"string as a number", `{"project":5}`, map[string]string{"project": "must be a string, not number"}},
		{"type as a list", `{"type":["sweep"]}`, map[string]string{"type": "must be a string, not array"}},
		{"command as a string", `{"runner_command":"python main.py"}`, map[string]string{"runner_command": "must be an array of strings, not string"}},
		{"command with a number", `{"runner_command":["python",1]}`, map[string]string{"runner_command": "must be an array of strings, not number"}},
		{"tags as an object", `{"tags":{"a":1}}`, map[string]string{"tags": "must be an array of strings, not object"}},
		{"nested number", `{"requirements":{"cpu":"2"}}`, map[string]string{"requirements.cpu": "must be a number, not string"}},
		{"nested integer", `{"requirements":{"memory_mb":1.5}}`, map[string]string{"requirements.memory_mb": "must be an integer, not number 1.5"}},
		{"object as a string", `{"requirements":"big"}`, map[string]string{"requirements": "must be an object, not string"}},
		{"nested boolean", `{"checkpointing":{"enabled":"yes"}}`, map[string]string{"checkpointing.enabled": "must be true or false, not string"}},
		{"nested map", `{"state":{"publish":{"a":1}}}`, map[string]string{"state.publish": "must be an object of strings, not number"}},
		{"nested list", `{"fan_out":{"items":5}}`, map[string]string{"fan_out.items": "must be an array, not number"}},
		{"map of strings", `{"reduce":{"a":5}}`, map[string]string{"reduce": "must be an object of strings, not number"}},
		{"several at once", `{"timeout_s":"x","priority":1,"split":{"chunks":"2"}}`, map[string]string{
			"timeout_s": "must be an integer, not string", "priority": "must be a string, not number", "split.chunks": "must be an integer, not string"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Decode([]byte(tt.body))
			fe, ok := fault.As(err)
			if !ok || fe.Kind != fault.KindInvalid {
				t.Fatalf("got %v, want an invalid fault", err)
			}
			got := map[string]string{}
			for k, v := range fe.Details["fields"].(map[string]any) {
				got[k] = v.(string)
			}
			if !maps.Equal(got, tt.fields) {
				t.Errorf("got %v, want %v", got, tt.fields)
			}
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	t.Parallel()
	s, err := Decode([]byte(`{"project":"p","payload":{"a":1},"client_ref":7,"callback_url":{},"unknown":[1],"requirements":{"cpu":2}}`))
	if err != nil {
		t.Fatalf("got %v, want the hand-checked fields left for Validate", err)
	}
	if *s.Project != "p" || string(s.Payload) != `{"a":1}` || string(s.ClientRef) != "7" || string(s.CallbackURL) != "{}" || *s.Requirements.CPU != 2 {
		t.Errorf("got %+v", s)
	}
}

func TestDecodeBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		kind fault.Kind
		code string
	}{
		{"not JSON", `{"project":`, fault.KindBadRequest, "malformed_json"},
		{"empty", ``, fault.KindBadRequest, "malformed_json"},
		{"a list", `[{}]`, fault.KindInvalid, "not_an_object"},
		{"a string", `"job"`, fault.KindInvalid, "not_an_object"},
		{"null", `null`, fault.KindInvalid, "not_an_object"},
		{"invalid UTF-8 in a raw field", "{\"payload\":{\"a\":\"\xff\"}}", fault.KindInvalid, "invalid_job"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Decode([]byte(tt.body))
			fe, ok := fault.As(err)
			if !ok || fe.Kind != tt.kind || fe.Code != tt.code {
				t.Errorf("got %v, want kind %q code %q", err, tt.kind, tt.code)
			}
		})
	}
}

func TestDecodeBatch(t *testing.T) {
	t.Parallel()
	many := func(n int) string {
		return `{"jobs":[` + strings.TrimSuffix(strings.Repeat(`{},`, n), ",") + `]}`
	}
	tests := []struct {
		name  string
		body  string
		want  int    // entries, when valid
		field string // else the field at fault
		code  string
	}{
		{name: "one", body: many(1), want: 1},
		{name: "two hundred", body: many(200), want: 200},
		{name: "entries of any shape pass here", body: `{"jobs":[1,"x",null,{}]}`, want: 4},
		{name: "two hundred and one", body: many(201), field: "jobs", code: "batch_too_large"},
		{name: "empty", body: `{"jobs":[]}`, field: "jobs", code: "invalid_job"},
		{name: "missing", body: `{}`, field: "jobs", code: "invalid_job"},
		{name: "null", body: `{"jobs":null}`, field: "jobs", code: "invalid_job"},
		{name: "not a list", body: `{"jobs":{"a":{}}}`, field: "jobs", code: "invalid_job"},
		{name: "not an object", body: `[{}]`, code: "not_an_object"},
		{name: "not JSON", body: `{"jobs":[`, code: "malformed_json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			jobs, err := DecodeBatch([]byte(tt.body))
			if tt.code == "" {
				if err != nil || len(jobs) != tt.want {
					t.Fatalf("got %d jobs, %v; want %d", len(jobs), err, tt.want)
				}
				return
			}
			fe, ok := fault.As(err)
			if !ok || fe.Code != tt.code {
				t.Fatalf("got %v, want code %q", err, tt.code)
			}
			if tt.field != "" {
				if got := slices.Collect(maps.Keys(fe.Details["fields"].(map[string]any))); !slices.Equal(got, []string{tt.field}) {
					t.Errorf("got fields %q, want %q", got, tt.field)
				}
			}
		})
	}
}

func TestDecodeBatchEntry(t *testing.T) {
	t.Parallel()
	jobs, err := DecodeBatch([]byte(`{"jobs":[{"project":"a","runner_command":["x"]},5,{"timeout_s":"x"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	wants := []string{"", "not_an_object", "invalid_job"}
	for i, raw := range jobs {
		_, err := DecodeBatchEntry(raw)
		got := ""
		if fe, ok := fault.As(err); ok {
			got = fe.Code
		} else if err != nil {
			got = err.Error()
		}
		if got != wants[i] {
			t.Errorf("entry %d: got %q, want %q", i, got, wants[i])
		}
	}
}

// TestEveryFieldDecodes guards the reflection in DecodeFields: each tagged
// field of JobSubmit is read from its JSON name.
func TestEveryFieldDecodes(t *testing.T) {
	t.Parallel()
	full := `{"type":"sweep","project":"p","runner_command":["x"],"payload":{},"timeout_s":1,"runtime_hint_s":1,
		"max_retries":1,"priority":"high","depends_on":["job_a"],"tags":["t"],"client_ref":"c","preset":"s",
		"requirements":{"cpu":1},"reservation":{"mode":"best_effort"},"distribution":{},"checkpointing":{"enabled":false},
		"reliability_mode":"best_effort","placement_policy":"shared","execution_policy":"sandboxed","callback_url":"",
		"result_schema":{},"state":{"publish":{}},"fan_out":{"by":"x"},"batch_size":1,"batch_per_task":1,
		"merge_strategy":"collect","value_field":"v","weight_field":"w","split":{"field":"f"},"reduce":{"a":"sum"},
		"parameters":{"a":[1]},"fixed_payload":{},"rank_by":"r","rank_order":"asc","candidates":{},"shared_payload":{},
		"replicas":1,"meta":{},"variant":"v","tasks":[]}`
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(full), &raw); err != nil {
		t.Fatal(err)
	}
	s, err := DecodeFields(raw)
	if err != nil {
		t.Fatal(err)
	}
	back, _ := json.Marshal(s)
	var got map[string]json.RawMessage
	_ = json.Unmarshal(back, &got)
	for k := range raw {
		if _, ok := got[k]; !ok {
			t.Errorf("field %q: got it dropped, want it decoded", k)
		}
	}
	if len(got) != len(raw) {
		t.Errorf("got %d fields back, want %d", len(got), len(raw))
	}
}
