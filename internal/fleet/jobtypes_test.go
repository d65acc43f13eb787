package fleet_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
	"github.com/skiffhq/skiff/internal/store"
)

func summaryOf(t *testing.T, j *store.Job) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(j.Summary, &m); err != nil {
		t.Fatalf("summary %s: %v", j.Summary, err)
	}
	return m
}

func jsonEq(t *testing.T, what string, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %s: %v", what, got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("%s: got %s, want %s", what, gb, wb)
	}
}

// TestJobTypesInGVisor runs every job type and merge for real: the runner
// echoes payload fields into its result so that merges have something to
// combine.
func TestJobTypesInGVisor(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.host(3)
	typ := func(s apiv1.JobType) *apiv1.JobType { return &s }

	t.Run("sweep ranks a leaderboard", func(t *testing.T) {
		j := h.wait(h.submit(apiv1.JobSubmit{Type: typ(apiv1.JobTypeSweep),
			Parameters:   json.RawMessage(`{"lr":[0.1,0.3,0.2],"depth":[1,2]}`),
			FixedPayload: json.RawMessage(`{"echo":["lr","depth"]}`), RankBy: ptr("lr"), RankOrder: ptr("desc")}), time.Minute)
		if j.Status != store.JobCompleted || j.TaskCount != 6 {
			t.Fatalf("sweep: %s with %d tasks", j.Status, j.TaskCount)
		}
		var best struct {
			Rank   int             `json:"rank"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(summaryOf(t, j)["best"], &best); err != nil || best.Rank != 1 {
			t.Fatalf("best: %s (%v)", summaryOf(t, j)["best"], err)
		}
		var params map[string]float64
		_ = json.Unmarshal(best.Params, &params)
		if params["lr"] != 0.3 {
			t.Errorf("best params: %s", best.Params)
		}
		var board []map[string]any
		_ = json.Unmarshal(summaryOf(t, j)["leaderboard"], &board)
		if len(board) != 6 || board[5]["rank"] != float64(6) {
			t.Errorf("leaderboard: %v", board)
		}
	})

	t.Run("map_reduce reduces", func(t *testing.T) {
		j := h.wait(h.submit(apiv1.JobSubmit{Type: typ(apiv1.JobTypeMapReduce),
			Payload: json.RawMessage(`{"one":1,"echo":["one","part"]}`),
			Split:   &apiv1.JobSplit{Field: ptr("part"), Start: ptr[int64](10), Total: ptr[int64](100), Chunks: ptr[int64](4)},
			Reduce:  map[string]string{"one": "sum", "part": "count"}}), time.Minute)
		if j.Status != store.JobCompleted {
			t.Fatalf("map_reduce: %s", j.Status)
		}
		jsonEq(t, "aggregate", summaryOf(t, j)["aggregate_result"], `{"one":4,"part":4}`)
	})

	t.Run("benchmark ranks candidates across replicas", func(t *testing.T) {
		j := h.wait(h.submit(apiv1.JobSubmit{Type: typ(apiv1.JobTypeBenchmark),
			Candidates:    json.RawMessage(`{"slow":{"speed":1},"fast":{"speed":5}}`),
			SharedPayload: json.RawMessage(`{"echo":["speed"]}`), Replicas: ptr[int64](2), RankBy: ptr("speed")}), time.Minute)
		if j.Status != store.JobCompleted || j.TaskCount != 4 {
			t.Fatalf("benchmark: %s with %d tasks", j.Status, j.TaskCount)
		}
		var ranking []struct {
			Candidate string  `json:"candidate"`
			Value     float64 `json:"value"`
			Replicas  []struct {
				WorkerHandle    string          `json:"worker_handle"`
				ResourceProfile json.RawMessage `json:"resource_profile"`
			} `json:"replicas"`
		}
		if err := json.Unmarshal(summaryOf(t, j)["leaderboard"], &ranking); err != nil {
			t.Fatal(err)
		}
		if len(ranking) != 2 || ranking[0].Candidate != "fast" || ranking[0].Value != 5 || len(ranking[0].Replicas) != 2 ||
			!strings.HasPrefix(ranking[0].Replicas[0].WorkerHandle, "wkr_") || !strings.Contains(string(ranking[0].Replicas[0].ResourceProfile), "cpu_count") {
			t.Errorf("ranking: %s", summaryOf(t, j)["leaderboard"])
		}
	})

	t.Run("keyed fan-out", func(t *testing.T) {
		j := h.wait(h.submit(apiv1.JobSubmit{Payload: json.RawMessage(`{"city":["oslo","rome"],"echo":["city"]}`),
			FanOut: &apiv1.JobFanOut{By: ptr("city")}, MergeStrategy: ptr("keyed")}), time.Minute)
		var agg map[string]map[string]json.RawMessage
		if err := json.Unmarshal(summaryOf(t, j)["aggregate_result"], &agg); err != nil || len(agg) != 2 {
			t.Fatalf("keyed: %s (%v)", summaryOf(t, j)["aggregate_result"], err)
		}
		jsonEq(t, "oslo", agg["oslo"]["city"], `["oslo"]`)
	})

	t.Run("weighted average with weighted completeness", func(t *testing.T) {
		items := []json.RawMessage{
			json.RawMessage(`{"v":1,"w":1,"echo":["v","w"]}`), json.RawMessage(`{"v":4,"w":3,"echo":["v","w"]}`),
			json.RawMessage(`{"v":9,"w":4,"exit":2,"no_result":true}`),
		}
		j := h.wait(h.submit(apiv1.JobSubmit{Payload: json.RawMessage(`{}`), FanOut: &apiv1.JobFanOut{Items: items},
			MergeStrategy: ptr("weighted_avg"), ValueField: ptr("v"), WeightField: ptr("w")}), time.Minute)
		if j.Status != store.JobPartial {
			t.Fatalf("status %s, want partial", j.Status)
		}
		jsonEq(t, "aggregate", summaryOf(t, j)["aggregate_result"], `3.25`)
		var c job.Completeness
		_ = json.Unmarshal(summaryOf(t, j)["completeness"], &c)
		if c.WeightField != "w" || *c.ExpectedWeight != 8 || *c.CompletedWeight != 4 || *c.PendingWeight != 4 {
			t.Errorf("completeness: %s", summaryOf(t, j)["completeness"])
		}
	})

	t.Run("checkpoint resumes a retry", func(t *testing.T) {
		j := h.wait(h.submit(apiv1.JobSubmit{MaxRetries: ptr[int64](1),
			Checkpointing: &apiv1.JobCheckpointing{Enabled: ptr(true), ResumeFromLatest: ptr(true)},
			Payload:       payload(t, sandboxtest.Payload{Progress: []string{`{"pct":50,"checkpoint":{"step":7}}`}, ExitUnlessResumed: 1})}), time.Minute)
		tasks, atts := h.tasks(j)
		if j.Status != store.JobCompleted || len(atts) != 2 {
			t.Fatalf("job %s after %d attempts, want completed on the resumed retry", j.Status, len(atts))
		}
		jsonEq(t, "checkpoint", tasks[0].Checkpoint, `{"step":7}`)
		r := sandboxtest.DecodeReport(t, tasks[0].Result)
		var p map[string]json.RawMessage
		_ = json.Unmarshal(r.Payload, &p)
		jsonEq(t, "_resume", p["_resume"], `{"step":7}`)
		if !strings.Contains(string(tasks[0].ResumeState), `"attempt_number":2`) {
			t.Errorf("resume_state: %s", tasks[0].ResumeState)
		}
	})

	t.Run("state.publish writes shared state", func(t *testing.T) {
		j := h.wait(h.submit(apiv1.JobSubmit{Type: typ(apiv1.JobTypeSweep),
			Parameters: json.RawMessage(`{"lr":[0.5,0.7]}`), FixedPayload: json.RawMessage(`{"echo":["lr"]}`),
			RankBy: ptr("lr"), State: &apiv1.JobState{Publish: map[string]string{
				"best_lr": "aggregate_result.best.params.lr", "nothing": "aggregate_result.no.such"}}}), time.Minute)
		if j.Status != store.JobCompleted {
			t.Fatalf("status %s", j.Status)
		}
		kv, err := h.st.KVGet(context.Background(), j.ProjectID, "best_lr", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		jsonEq(t, "best_lr", kv.Value, `0.7`)
		if _, err := h.st.KVGet(context.Background(), j.ProjectID, "nothing", time.Now()); err == nil {
			t.Errorf("a path that does not resolve was published")
		}
	})

	t.Run("strict_complete fails as a whole and stops the rest", func(t *testing.T) {
		items := []json.RawMessage{
			json.RawMessage(`{"exit":2,"no_result":true,"sleep_ms":300}`), json.RawMessage(`{"sleep_ms":60000}`), json.RawMessage(`{}`),
		}
		start := time.Now()
		j := h.wait(h.submit(apiv1.JobSubmit{Payload: json.RawMessage(`{}`), FanOut: &apiv1.JobFanOut{Items: items},
			ReliabilityMode: ptr("strict_complete")}), time.Minute)
		if j.Status != store.JobFailed || !strings.Contains(j.Error, "strict_complete") {
			t.Fatalf("status %s (%s), want failed under strict_complete", j.Status, j.Error)
		}
		if time.Since(start) > 30*time.Second {
			t.Errorf("the sleeping task was not stopped: the job took %s", time.Since(start))
		}
		tasks, _ := h.tasks(j)
		if tasks[1].Status != store.TaskCancelled {
			t.Errorf("sleeping task: %s, want cancelled", tasks[1].Status)
		}
	})
}
