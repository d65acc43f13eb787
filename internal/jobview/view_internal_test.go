package jobview

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

func TestTextCuts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, got, want string
	}{
		{"tail of short", tailChars("abc", 5), "abc"},
		{"tail by characters", tailChars("héllo wörld", 5), "wörld"},
		{"head by characters", headChars("héllo", 2), "hé"},
		{"head of short", headChars("hé", 5), "hé"},
		{"head bytes on a boundary", headBytes("aé", 2), "a"}, // é is 2 bytes: never cut in half
		{"head bytes exact", headBytes("aé", 3), "aé"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestCompleteSummary(t *testing.T) {
	t.Parallel()
	if _, ok := completeSummary(json.RawMessage(`{}`)); ok {
		t.Error("an empty stored summary: got usable, want false")
	}
	raw, ok := completeSummary(json.RawMessage(`{"task_outcome_counts":{"succeeded":1},"leaderboard":[1],"aggregate_aliases":null}`))
	if !ok {
		t.Fatal("got unusable")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"task_outcome_counts", "aggregate_result", "aggregate_aliases", "completeness",
		"result_persisted", "output_persisted", "leaderboard"} {
		if m[k] == nil {
			t.Errorf("missing %s in %s", k, raw)
		}
	}
	if string(m["task_outcome_counts"]) != `{"succeeded":1}` || string(m["aggregate_aliases"]) != `{}` {
		t.Errorf("got %s, want the stored counts kept and empty aliases filled in", raw)
	}
}

func TestLiveSummary(t *testing.T) {
	t.Parallel()
	s := liveSummary(map[store.TaskStatus]int64{store.TaskSucceeded: 1, store.TaskRunning: 2, store.TaskQueued: 1})
	c := s.Completeness
	if c.Total != 4 || c.Pending != 3 || c.Fraction != 0.25 || s.TaskOutcomeCounts.Running != 2 || s.AggregateResult != nil {
		t.Errorf("got %+v", s)
	}
}

func TestOutputView(t *testing.T) {
	t.Parallel()
	tasks := []*store.Task{
		{Status: store.TaskSucceeded, Output: "a"},
		{Status: store.TaskFailed, Output: "b\n", ErrorText: "first failure"},
		{Status: store.TaskSucceeded, ErrorText: "a warning on stderr"},                                // not a failure
		{Status: store.TaskQueued, RetriesUsed: 1, ErrorText: "retrying " + strings.Repeat("x", 2000)}, // the last failing
		{Status: store.TaskQueued},
	}
	out := OutputView(tasks)
	if out.Output != "a\nb\n" || out.OutputTruncated {
		t.Errorf("got output %q, want each task's stdout on its own lines", out.Output)
	}
	if out.Error == nil || len([]rune(*out.Error)) != MaxErrorChars || !strings.HasSuffix(*out.Error, "x") {
		t.Errorf("got error of %d characters, want the last %d of the last failing task", len(*out.Error), MaxErrorChars)
	}
	if out := OutputView([]*store.Task{{Status: store.TaskSucceeded, ErrorText: "noise"}}); out.Error != nil {
		t.Errorf("succeeded job: got error %q, want none", *out.Error)
	}
}

func TestTaskViewHealth(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	started := now.Add(-time.Minute)
	running := &store.Attempt{Number: 1, Status: store.AttemptRunning, HostID: "wkr_a", AssignedAt: started, StartedAt: &started,
		ResourceProfile: json.RawMessage(`{"cpu_count":4,"hostname":"n1"}`)}
	assigned := &store.Attempt{Number: 1, Status: store.AttemptAssigned, HostID: "wkr_a", AssignedAt: started}
	for _, tc := range []struct {
		name    string
		task    *store.Task
		att     *store.Attempt
		health  string // "" for null
		staleS  float64
		runtime float64
	}{
		{"reported just now", &store.Task{Status: store.TaskRunning, UpdatedAt: now}, running, HealthHealthy, 0, 60},
		{"silent past the limit", &store.Task{Status: store.TaskRunning, UpdatedAt: now.Add(-StaleAfter)}, running, HealthStale, 300, 60},
		{"not started yet", &store.Task{Status: store.TaskRunning, UpdatedAt: now.Add(-time.Second)}, assigned, HealthStarting, 1, 0},
		{"queued", &store.Task{Status: store.TaskQueued, UpdatedAt: now.Add(-time.Hour)}, nil, "", 0, 0},
	} {
		var atts []*store.Attempt
		if tc.att != nil {
			atts = append(atts, tc.att)
		}
		v := TaskView(tc.task, atts, now)
		switch {
		case tc.health == "" && (v.HealthStatus != nil || v.StaleForS != nil || v.LiveFeedback != nil):
			t.Errorf("%s: got health %v stale %v, want null", tc.name, v.HealthStatus, v.StaleForS)
		case tc.health != "" && (v.HealthStatus == nil || *v.HealthStatus != tc.health || *v.StaleForS != tc.staleS):
			t.Errorf("%s: got health %v stale %v, want %s %v", tc.name, v.HealthStatus, v.StaleForS, tc.health, tc.staleS)
		}
		if v.RuntimeS != tc.runtime {
			t.Errorf("%s: got runtime %v, want %v", tc.name, v.RuntimeS, tc.runtime)
		}
		if len(v.ResultWarnings) != 0 || v.ResultWarnings == nil {
			t.Errorf("%s: got result_warnings %v, want []", tc.name, v.ResultWarnings)
		}
	}
	v := AttemptView(running, now)
	b, _ := json.Marshal(v)
	if strings.Contains(string(b), "hostname") || *v.ResourceProfile.CPUCount != 4 || *v.DurationS != 60 {
		t.Errorf("got attempt %s, want only the documented profile fields and 60 s", b)
	}
}
