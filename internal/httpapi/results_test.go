package httpapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/store"
)

var taskKeys = []string{"id", "index", "status", "payload", "meta", "requirements", "result_present", "output_present",
	"output", "error", "result", "exit_code", "result_quality", "result_warnings", "live_feedback", "latest_progress",
	"checkpoint", "resume_state", "runtime_s", "stale_for_s", "health_status", "started_at", "completed_at",
	"retries_used", "infra_requeues", "cost", "attempts", "artifacts", "output_artifact_id", "result_spilled",
	"result_artifact_id", "result_filename"}

var chunkKeys = []string{"chunk_index", "chunk_count", "seed_range"}

var attemptKeys = []string{"attempt_number", "status", "assigned_at", "started_at", "ended_at", "duration_s",
	"terminal_kind", "retry_decision", "exit_code", "worker_handle", "resource_profile", "billed_seconds", "cost_usd"}

var resultCommonKeys = []string{"job_id", "project", "status", "type", "client_ref", "tags", "meta", "variant",
	"artifact_ids", "links", "summary", "aggregate_result", "aggregate_aliases", "completeness", "result_persisted",
	"output_persisted", "task_count", "submitted_at", "completed_at", "error"}

var resultTaskKeys = []string{"task_id", "index", "status", "payload", "result", "artifact_ids", "result_present",
	"result_quality", "result_warnings", "output", "output_present", "error", "project_content_hash", "started_at", "completed_at"}

func finish(t *testing.T, f *fixture, p *store.AttemptFinishParams) {
	t.Helper()
	p.Now = f.e.Clock.Now()
	if p.TerminalKind == "" {
		p.TerminalKind, p.RetryDecision = "exit", "none"
	}
	if _, err := f.e.Store.AttemptFinish(t.Context(), p); err != nil {
		t.Fatalf("AttemptFinish: %v", err)
	}
}

func startAttempt(t *testing.T, f *fixture, a *store.Attempt) {
	t.Helper()
	if err := f.e.Store.AttemptStart(t.Context(), a.ID, f.e.Clock.Now()); err != nil {
		t.Fatal(err)
	}
}

// endJob moves a job whose tasks all ended to its terminal status with the
// summary the dispatcher stores.
func endJob(t *testing.T, f *fixture, jobID string, to store.JobStatus, msg string) {
	t.Helper()
	ctx := t.Context()
	j, err := f.e.Store.JobGetByID(ctx, jobID)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := f.e.Store.TaskList(ctx, jobID)
	if err != nil {
		t.Fatal(err)
	}
	summary, err := json.Marshal(job.Summarize(j, tasks))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Store.JobSetStatus(ctx, &store.JobSetStatusParams{ID: jobID, To: to, Error: msg, Summary: summary,
		Now: f.e.Clock.Now()}); err != nil {
		t.Fatalf("end job %s as %s: %v", jobID, to, err)
	}
}

// runJob runs every task of a queued job, the oldest with queued work, to
// success (or failure when fail is set) and ends the job.
func runJob(t *testing.T, f *fixture, jobID string, fail bool) {
	t.Helper()
	runJobMetered(t, f, jobID, fail, 0)
}

// runJobMetered is runJob with each attempt metered costMicros.
func runJobMetered(t *testing.T, f *fixture, jobID string, fail bool, costMicros int64) {
	t.Helper()
	j, err := f.e.Store.JobGetByID(t.Context(), jobID)
	if err != nil {
		t.Fatal(err)
	}
	startJob(t, f, jobID)
	open, err := f.e.Store.AttemptListOpen(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	a := open[0]
	for i := range j.TaskCount {
		if i > 0 {
			var task *store.Task
			task, a = claimTask(t, f, "wkr_one", `{}`)
			if task.JobID != jobID {
				t.Fatalf("claimed a task of %s, want %s", task.JobID, jobID)
			}
		}
		startAttempt(t, f, a)
		out := "out\n"
		p := &store.AttemptFinishParams{AttemptID: a.ID, Status: store.AttemptSucceeded, TaskStatus: store.TaskSucceeded,
			Result: json.RawMessage(`{"ok":true}`), Output: &out, CostMicros: costMicros}
		if fail {
			stderr := "Traceback: boom"
			p.Status, p.TaskStatus, p.Result, p.ErrorText = store.AttemptFailed, store.TaskFailed, nil, &stderr
		}
		finish(t, f, p)
	}
	to := store.JobCompleted
	if fail {
		to = store.JobFailed
	}
	endJob(t, f, jobID, to, map[bool]string{true: "all tasks failed"}[fail])
}

// Tasks, output, events and the result of a job followed through its
// execution, driven through the store as the dispatcher would.
func testExecutionViews(t *testing.T, f *fixture) {
	c := f.member
	j := submitJob(t, c, map[string]any{"fan_out": map[string]any{"chunks": 3, "total": 30}})

	var out apiv1.JobOutput
	r := c.Get(t, jobPath(j.ID, "/output"))
	wantKeys(t, "output", r.Object(t, http.StatusOK), "output", "error", "output_truncated")
	r.JSON(t, http.StatusOK, &out)
	if out.Output != "" || out.Error != nil || out.OutputTruncated {
		t.Errorf("before any attempt: got %+v, want empty", out)
	}
	tasks := func() ([]apiv1.Task, []map[string]any, []byte) {
		t.Helper()
		var tl apiv1.TaskList
		var raw struct {
			Tasks []map[string]any `json:"tasks"`
		}
		r := c.Get(t, jobPath(j.ID, "/tasks"))
		r.JSON(t, http.StatusOK, &tl)
		r.JSON(t, http.StatusOK, &raw)
		if tl.Count != 3 || len(tl.Tasks) != 3 {
			t.Fatalf("got %d tasks (count %d), want 3", len(tl.Tasks), tl.Count)
		}
		for _, m := range raw.Tasks {
			wantKeys(t, "task", m, append(slices.Clone(taskKeys), chunkKeys...)...)
			for _, a := range m["attempts"].([]any) {
				am := a.(map[string]any)
				wantKeys(t, "attempt", am, attemptKeys...)
				wantKeys(t, "resource profile", am["resource_profile"].(map[string]any),
					"cpu_model", "cpu_clock_ghz", "single_core_score", "cpu_count", "memory_total_mb", "gpu_count")
			}
		}
		return tl.Tasks, raw.Tasks, r.Body
	}
	ts, raw, _ := tasks()
	for i, task := range ts {
		if task.Status != "queued" || len(task.Attempts) != 0 || task.LiveFeedback != nil || task.HealthStatus != nil ||
			task.StaleForS != nil || task.RuntimeS != 0 || task.Error != nil || task.ResultPresent || task.OutputPresent ||
			task.Index != int64(i) || *task.ChunkIndex != i || *task.ChunkCount != 3 ||
			string(task.SeedRange) != `{"start":`+itoa(10*i)+`,"end":`+itoa(10*i+10)+`}` {
			t.Errorf("queued task %d: got %s", i, mustJSON(t, task))
		}
		if raw[i]["result_quality"] != nil || len(raw[i]["result_warnings"].([]any)) != 0 || raw[i]["checkpoint"] != nil ||
			raw[i]["resume_state"] != nil || raw[i]["result"] != nil || raw[i]["latest_progress"] != nil {
			t.Errorf("queued task %d: got %v", i, raw[i])
		}
	}

	// Task 0 runs on a host whose profile says more than the API may show.
	secretProfile := `{"cpu_model":"EPYC 9654","cpu_count":8,"memory_total_mb":32768,"hostname":"node-17.internal",` +
		`"image_dir":"/var/lib/skiff/images/sha256-abc"}`
	_, a0b := startJob(t, f, j.ID)
	f.e.Clock.Advance(2 * time.Second)
	startAttempt(t, f, a0b)
	f.e.Clock.Advance(3 * time.Second)
	tail, partial := "step 5\n", "partial\n"
	if err := f.e.Store.TaskSetProgress(t.Context(), &store.TaskSetProgressParams{TaskID: a0b.TaskID,
		Progress: json.RawMessage(`{"pct":50,"checkpoint":{"step":5}}`), Checkpoint: json.RawMessage(`{"step":5}`),
		Output: &partial, OutputTail: &tail, Now: f.e.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	_, a1 := claimTask(t, f, "wkr_bbb", secretProfile)
	ts, _, body := tasks()
	if strings.Contains(string(body), "node-17") || strings.Contains(string(body), "/var/lib") {
		t.Errorf("tasks answer shows host names or paths: %s", body)
	}
	t0 := ts[0]
	if t0.Status != "running" || t0.LiveFeedback == nil || t0.LiveFeedback.OutputTail != tail ||
		string(t0.LatestProgress) != `{"pct":50,"checkpoint":{"step":5}}` || string(t0.Checkpoint) != `{"step":5}` ||
		t0.HealthStatus == nil || *t0.HealthStatus != "healthy" || *t0.StaleForS != 0 || t0.RuntimeS != 3 || len(t0.Attempts) != 1 {
		t.Errorf("running task: got %s", mustJSON(t, t0))
	}
	at := t0.Attempts[0]
	if at.AttemptNumber != 1 || at.Status != "running" || at.WorkerHandle != "wkr_one" || *at.DurationS != 3 ||
		at.TerminalKind != nil || at.RetryDecision != nil || at.EndedAt != nil || !at.AssignedAt.Equal(apitest.Epoch) {
		t.Errorf("running attempt: got %s", mustJSON(t, at))
	}
	t1 := ts[1]
	if t1.Status != "running" || *t1.HealthStatus != "starting" || t1.RuntimeS != 0 || t1.Attempts[0].DurationS != nil {
		t.Errorf("assigned task: got %s", mustJSON(t, t1))
	}
	if p := t1.Attempts[0].ResourceProfile; *p.CPUModel != "EPYC 9654" || *p.CPUCount != 8 || *p.MemoryTotalMB != 32768 ||
		p.GPUCount != nil || p.SingleCoreScore != nil {
		t.Errorf("resource profile: got %s", mustJSON(t, p))
	}
	if ts[2].Status != "queued" || ts[2].HealthStatus != nil {
		t.Errorf("queued task: got %s", mustJSON(t, ts[2]))
	}
	// Silent for six minutes: stale.
	f.e.Clock.Advance(6 * time.Minute)
	ts, _, _ = tasks()
	if *ts[0].HealthStatus != "stale" || *ts[0].StaleForS != 360 || ts[0].RuntimeS != 363 {
		t.Errorf("silent task: got health %v stale_for_s %v runtime %v, want stale 360 363", *ts[0].HealthStatus, *ts[0].StaleForS, ts[0].RuntimeS)
	}

	// Task 0 succeeds; task 1's first attempt fails and it is retried.
	zero, one1, boom := "zero\n", "one-try-1\n", "boom-1"
	finish(t, f, &store.AttemptFinishParams{AttemptID: a0b.ID, Status: store.AttemptSucceeded, TaskStatus: store.TaskSucceeded,
		Result: json.RawMessage(`{"v":0}`), Output: &zero, ExitCode: ptr(int64(0))})
	startAttempt(t, f, a1)
	f.e.Clock.Advance(time.Second)
	finish(t, f, &store.AttemptFinishParams{AttemptID: a1.ID, Status: store.AttemptFailed, TerminalKind: "exit",
		RetryDecision: "retry", TaskStatus: store.TaskQueued, RetriesUsed: 1, Output: &one1, ErrorText: &boom, ExitCode: ptr(int64(1))})
	c.Get(t, jobPath(j.ID, "/output")).JSON(t, http.StatusOK, &out)
	if out.Output != "zero\none-try-1\n" || out.Error == nil || *out.Error != "boom-1" {
		t.Errorf("while retrying: got %+v, want both outputs and the failed attempt's error", out)
	}
	ts, _, _ = tasks()
	if ts[1].Status != "queued" || ts[1].Error == nil || *ts[1].Error != "boom-1" || ts[1].RetriesUsed != 1 || ts[1].HealthStatus != nil {
		t.Errorf("retrying task: got %s", mustJSON(t, ts[1]))
	}

	// The retry runs elsewhere and fails for good with a failure payload
	// and a long stderr; task 2 succeeds.
	task, a1b := claimTask(t, f, "wkr_ccc", `{"cpu_count":2}`)
	if task.Index != 1 {
		t.Fatalf("claimed task %d, want the retry of task 1", task.Index)
	}
	startAttempt(t, f, a1b)
	f.e.Clock.Advance(2 * time.Second)
	one2, stderr := "one-try-2\n", strings.Repeat("e", 600)+strings.Repeat("E", 900)
	failure := json.RawMessage(`{"failure_kind":"exit_code","exit_code":2,"command":["/runner"],"cwd":"/app","combined_output":"E"}`)
	finish(t, f, &store.AttemptFinishParams{AttemptID: a1b.ID, Status: store.AttemptFailed, TaskStatus: store.TaskFailed,
		RetriesUsed: 1, Result: failure, Output: &one2, ErrorText: &stderr, ExitCode: ptr(int64(2))})
	_, a2 := claimTask(t, f, "wkr_one", `{}`)
	startAttempt(t, f, a2)
	two := "two\n"
	finish(t, f, &store.AttemptFinishParams{AttemptID: a2.ID, Status: store.AttemptSucceeded, TaskStatus: store.TaskSucceeded,
		Result: json.RawMessage(`{"v":2}`), Output: &two})
	if err := f.e.Store.JobEventCreate(t.Context(), &store.JobEvent{ID: id.New(id.Event), JobID: j.ID, TaskID: a1.TaskID,
		AttemptID: a1.ID, Kind: "attempt.retried", Data: json.RawMessage(`{"exit_code":1}`), CreatedAt: f.e.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	endJob(t, f, j.ID, store.JobPartial, "1 of 3 tasks did not succeed")

	got := getJob(t, c, j.ID)
	s, _ := summaryOf(t, got)
	if got.Status != "partial" || s.TaskOutcomeCounts != (job.TaskOutcomeCounts{Succeeded: 2, Failed: 1}) ||
		string(s.AggregateResult) != `[{"v":0},null,{"v":2}]` || !s.ResultPersisted || !s.OutputPersisted ||
		got.Error == nil || got.CompletedAt == nil {
		t.Errorf("ended job: got %s %s", got.Status, got.Summary)
	}
	c.Get(t, jobPath(j.ID, "/output")).JSON(t, http.StatusOK, &out)
	wantErr := strings.Repeat("e", 100) + strings.Repeat("E", 900)
	if out.Output != "zero\none-try-2\ntwo\n" || out.Error == nil || *out.Error != wantErr {
		t.Errorf("ended: got output %q error %v, want the last attempts' stdout and the last 1000 characters of stderr", out.Output, out.Error)
	}
	ts, _, _ = tasks()
	t1 = ts[1]
	if t1.Status != "failed" || *t1.Error != wantErr || !t1.ResultPresent || string(t1.Result) != string(failure) ||
		*t1.ExitCode != 2 || len(t1.Attempts) != 2 || t1.RuntimeS != 3 || t1.LiveFeedback != nil || t1.CompletedAt == nil {
		t.Errorf("failed task: got %s", mustJSON(t, t1))
	}
	if a := t1.Attempts; a[0].WorkerHandle != "wkr_bbb" || *a[0].TerminalKind != "exit" || *a[0].RetryDecision != "retry" ||
		a[0].Status != "failed" || *a[0].DurationS != 1 || a[1].WorkerHandle != "wkr_ccc" || a[1].AttemptNumber != 2 ||
		*a[1].RetryDecision != "none" || *a[1].ExitCode != 2 {
		t.Errorf("attempts: got %s", mustJSON(t, a))
	}
	if ts[0].Error != nil || ts[0].Output != "zero\n" || string(ts[0].Result) != `{"v":0}` {
		t.Errorf("succeeded task: got %s", mustJSON(t, ts[0]))
	}

	// Events, oldest first.
	var evs apiv1.JobEventList
	var rawEvs struct {
		Events []map[string]any `json:"events"`
	}
	r = c.Get(t, jobPath(j.ID, "/events"))
	r.JSON(t, http.StatusOK, &evs)
	r.JSON(t, http.StatusOK, &rawEvs)
	if evs.Count != 2 || evs.Events[0].Kind != "job.submitted" || evs.Events[1].Kind != "attempt.retried" ||
		evs.Events[1].TaskID != a1.TaskID || evs.Events[1].AttemptID != a1.ID || string(evs.Events[1].Data) != `{"exit_code":1}` {
		t.Errorf("got events %s", r.Body)
	}
	wantKeys(t, "job event", rawEvs.Events[0], "id", "kind", "data", "created_at", "position")
	wantKeys(t, "attempt event", rawEvs.Events[1], "id", "kind", "task_id", "attempt_id", "data", "created_at", "position")
	c.Get(t, jobPath(j.ID, "/events?limit=1")).JSON(t, http.StatusOK, &evs)
	if evs.Count != 1 || evs.Events[0].Kind != "job.submitted" {
		t.Errorf("limit=1: got %+v", evs)
	}
	for _, q := range []string{"?limit=0", "?limit=1001", "?limit=x"} {
		env := c.Do(t, apitest.Request{Method: "GET", Path: jobPath(j.ID, "/events"+q), Check: apitest.MustViolate}).
			Fail(t, http.StatusUnprocessableEntity)
		if env.Code != "invalid_limit" {
			t.Errorf("events%s: got code %q", q, env.Code)
		}
	}

	// The result.
	r = c.Get(t, "/api/v1/results/"+j.ID)
	m := r.Object(t, http.StatusOK)
	wantKeys(t, "result", m, append(slices.Clone(resultCommonKeys), "results", "count", "result_count", "output_count", "limit", "offset")...)
	for _, e := range m["results"].([]any) {
		wantKeys(t, "result entry", e.(map[string]any), append(slices.Clone(resultTaskKeys), chunkKeys...)...)
	}
	var res apiv1.JobResult
	r.JSON(t, http.StatusOK, &res)
	if res.JobID != j.ID || res.Project != fixtureProject || res.Status != "partial" || res.Count != 3 || res.ResultCount != 3 ||
		res.OutputCount != 3 || string(res.AggregateResult) != `[{"v":0},null,{"v":2}]` || !res.ResultPersisted ||
		res.Links.Result != "/api/v1/results/"+j.ID || res.Links.Stream != "/api/v1/jobs/"+j.ID+"/stream" || res.Limit != 1000 {
		t.Errorf("result: got %s", r.Body)
	}
	var comp job.Completeness
	_ = json.Unmarshal(res.Completeness, &comp)
	if comp.Total != 3 || comp.Succeeded != 2 || comp.Failed != 1 {
		t.Errorf("completeness: got %s", res.Completeness)
	}
	e1 := res.Results[1]
	if e1.TaskID != ts[1].ID || e1.Status != "failed" || *e1.Error != wantErr || string(e1.Result) != string(failure) ||
		*e1.ChunkIndex != 1 || e1.Output != "one-try-2\n" || !e1.OutputPresent {
		t.Errorf("result entry 1: got %s", mustJSON(t, e1))
	}
	c.Get(t, "/api/v1/results/"+j.ID+"?limit=1&offset=1").JSON(t, http.StatusOK, &res)
	// count is the job's tasks on every page (spec 2.6), like
	// result_count and output_count; the page is len(results).
	if res.Count != 3 || len(res.Results) != 1 || res.Results[0].Index != 1 || res.ResultCount != 3 || res.Offset != 1 {
		t.Errorf("page 2 of 1: got count %d results %v result_count %d; want count 3, one result", res.Count, res.Results, res.ResultCount)
	}
	res = apiv1.JobResult{}
	c.Get(t, "/api/v1/results/"+j.ID+"?offset=5").JSON(t, http.StatusOK, &res)
	if res.Count != 3 || len(res.Results) != 0 {
		t.Errorf("offset past the end: got count %d, %d results; want 3 and none", res.Count, len(res.Results))
	}
	for _, q := range []string{"?limit=0", "?limit=1001", "?offset=-1"} {
		c.Do(t, apitest.Request{Method: "GET", Path: "/api/v1/results/" + j.ID + q, Check: apitest.MustViolate}).
			Fail(t, http.StatusUnprocessableEntity)
	}
	c.Get(t, "/api/v1/results/job_nope").Fail(t, http.StatusNotFound)

	// Outputs past 10 KB in all are cut.
	big := submitJob(t, c, map[string]any{"fan_out": map[string]any{"items": []any{map[string]any{}, map[string]any{}}}})
	for range 2 {
		task, a := claimTask(t, f, "wkr_one", `{}`)
		if task.JobID != big.ID {
			t.Fatalf("claimed a task of %s", task.JobID)
		}
		startAttempt(t, f, a)
		o := strings.Repeat("x", 6000) + "\n"
		finish(t, f, &store.AttemptFinishParams{AttemptID: a.ID, Status: store.AttemptSucceeded, TaskStatus: store.TaskSucceeded, Output: &o})
	}
	c.Get(t, jobPath(big.ID, "/output")).JSON(t, http.StatusOK, &out)
	if len(out.Output) != 10240 || !out.OutputTruncated || out.Error != nil {
		t.Errorf("big output: got %d bytes, truncated %v", len(out.Output), out.OutputTruncated)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func ptr[T any](v T) *T { return &v }

func resultIDs(t *testing.T, c *apitest.Client, query string) ([]string, apiv1.ResultList, []map[string]any) {
	t.Helper()
	var l apiv1.ResultList
	var raw struct {
		Results []map[string]any `json:"results"`
	}
	r := c.Get(t, "/api/v1/results"+query)
	r.JSON(t, http.StatusOK, &l)
	r.JSON(t, http.StatusOK, &raw)
	ids := []string{}
	for _, e := range l.Results {
		ids = append(ids, e.JobID)
	}
	if l.Count != len(l.Results) {
		t.Errorf("results%s: got count %d for %d entries", query, l.Count, len(l.Results))
	}
	return ids, l, raw.Results
}

func testResultList(t *testing.T, f *fixture) {
	c := f.member
	a := submitJob(t, c, map[string]any{"client_ref": "r1", "tags": []string{"x"}})
	runJob(t, f, a.ID, false)
	f.e.Clock.Advance(time.Minute)
	b := submitJob(t, c, map[string]any{"client_ref": "r2"})
	runJob(t, f, b.ID, true)
	f.e.Clock.Advance(time.Minute)
	q := submitJob(t, c, map[string]any{"client_ref": "r1"})
	f.e.Clock.Advance(time.Minute)
	d := submitJob(t, c, map[string]any{"type": "sweep", "parameters": map[string]any{"lr": []float64{0.1, 0.2}}, "rank_by": "loss"})
	c.Put(t, jobPath(d.ID, "/cancel"), nil).Want(t, http.StatusOK)

	ids, l, raw := resultIDs(t, c, "")
	if !slices.Equal(ids, []string{d.ID, b.ID, a.ID}) || l.Total != 3 || l.Limit != 20 || l.Offset != 0 {
		t.Fatalf("default: got %v total %d limit %d, want the terminal jobs newest first", ids, l.Total, l.Limit)
	}
	for _, e := range raw {
		wantKeys(t, "result list entry", e, resultCommonKeys...)
	}
	if !slices.Equal(l.AppliedFilters.Status, []string{"completed", "partial", "failed", "cancelled"}) ||
		l.AppliedFilters.IncludeTasks || len(l.ResultGuide) == 0 || l.AppliedFilters.Ignored != nil {
		t.Errorf("got applied_filters %+v, result_guide %d entries", l.AppliedFilters, len(l.ResultGuide))
	}
	ea := l.Results[2]
	if ea.Status != "completed" || string(ea.AggregateResult) != `[{"ok":true}]` || !ea.ResultPersisted ||
		ea.Links.Job != "/api/v1/jobs/"+a.ID || ea.Links.Tasks != "/api/v1/jobs/"+a.ID+"/tasks" ||
		ea.Links.Stream != "/api/v1/jobs/"+a.ID+"/stream" || ea.Links.Result != "/api/v1/results/"+a.ID {
		t.Errorf("completed entry: got %s", mustJSON(t, ea))
	}
	if eb := l.Results[1]; eb.Status != "failed" || eb.Error == nil || string(eb.AggregateResult) != `[null]` {
		t.Errorf("failed entry: got %s", mustJSON(t, eb))
	}
	var ds job.Summary
	if err := json.Unmarshal(l.Results[0].Summary, &ds); err != nil || ds.TaskOutcomeCounts.Cancelled != 2 {
		t.Errorf("cancelled entry summary: got %s", l.Results[0].Summary)
	}

	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"?status=queued", []string{q.ID}},
		{"?client_ref=r1", []string{a.ID}},
		{"?client_ref=r1&status=queued,completed", []string{q.ID, a.ID}},
		{"?client_ref=r3", []string{}},
		{"?job_id=" + a.ID, []string{a.ID}},
		{"?ids=" + a.ID + "," + b.ID, []string{b.ID, a.ID}},
		{"?job_id=" + a.ID + "&ids=" + b.ID, []string{b.ID, a.ID}},
		{"?tag=x", []string{a.ID}},
		{"?type=sweep", []string{d.ID}},
		{"?project=alpha&status=failed", []string{b.ID}},
		{"?project=nope", []string{}},
		{"?since=" + apitest.Epoch.Add(time.Minute).Format(time.RFC3339), []string{d.ID, b.ID}},
		{"?limit=2", []string{d.ID, b.ID}},
		{"?limit=2&offset=2", []string{a.ID}},
	} {
		got, l, _ := resultIDs(t, c, tc.query)
		if !slices.Equal(got, tc.want) {
			t.Errorf("results%s: got %v, want %v", tc.query, got, tc.want)
		}
		if strings.HasPrefix(tc.query, "?limit") && l.Total != 3 {
			t.Errorf("results%s: got total %d, want 3", tc.query, l.Total)
		}
	}
	_, l, _ = resultIDs(t, c, "?client_ref=r1&tag=x&type=structured_runner&project=alpha&since=2026-01-02")
	if af := l.AppliedFilters; *af.ClientRef != "r1" || *af.Tag != "x" || *af.Type != "structured_runner" || *af.Project != "alpha" ||
		*af.Since != "2026-01-02T00:00:00Z" {
		t.Errorf("applied_filters: got %s", mustJSON(t, af))
	}

	// Ignored parameters are accepted, named, and change nothing.
	ids, l, _ = resultIDs(t, c, "?recipe_cache_key=k&recipe_cache_hit=true")
	if !slices.Equal(ids, []string{d.ID, b.ID, a.ID}) || !slices.Equal(l.AppliedFilters.Ignored, []string{"recipe_cache_key", "recipe_cache_hit"}) {
		t.Errorf("ignored: got %v, applied %+v", ids, l.AppliedFilters)
	}

	// include_tasks adds each job's task results, at most 100.
	_, l, raw = resultIDs(t, c, "?include_tasks=true")
	for _, e := range raw {
		wantKeys(t, "result list entry with tasks", e, append(slices.Clone(resultCommonKeys), "results", "result_count",
			"output_count", "results_truncated")...)
	}
	if e := l.Results[2]; e.Results == nil || len(*e.Results) != 1 || string((*e.Results)[0].Result) != `{"ok":true}` ||
		*e.ResultCount != 1 || *e.OutputCount != 1 || *e.ResultsTruncated {
		t.Errorf("with tasks: got %s", mustJSON(t, e))
	}
	items := make([]any, 101)
	for i := range items {
		items[i] = map[string]any{"i": i}
	}
	wide := submitJob(t, c, map[string]any{"fan_out": map[string]any{"items": items}})
	c.Put(t, jobPath(wide.ID, "/cancel"), nil).Want(t, http.StatusOK)
	_, l, _ = resultIDs(t, c, "?include_tasks=1&ids="+wide.ID)
	if e := l.Results[0]; len(*e.Results) != 100 || !*e.ResultsTruncated || e.TaskCount != 101 {
		t.Errorf("101 tasks: got %d results, truncated %v", len(*e.Results), *e.ResultsTruncated)
	}

	const v, m = apitest.MustViolate, apitest.MustMatch
	for _, tc := range []struct {
		query, code string
		check       apitest.Check
	}{
		{"?limit=0", "invalid_limit", v},
		{"?limit=101", "invalid_limit", v},
		{"?limit=x", "invalid_limit", v},
		{"?offset=-1", "invalid_offset", v},
		{"?status=done", "invalid_status", m},
		{"?include_tasks=maybe", "invalid_include_tasks", v},
		{"?since=soon", "invalid_since", m},
		{"?type=other", "invalid_type", v},
		{"?group_by=user", "invalid_group_by", v},
	} {
		env := c.Do(t, apitest.Request{Method: "GET", Path: "/api/v1/results" + tc.query, Check: tc.check}).
			Fail(t, http.StatusUnprocessableEntity)
		if env.Code != tc.code {
			t.Errorf("results%s: got code %q, want %q", tc.query, env.Code, tc.code)
		}
	}
	// A viewer reads results as a member does.
	vr := f.viewer.Get(t, "/api/v1/results").Want(t, http.StatusOK)
	mr := c.Get(t, "/api/v1/results").Want(t, http.StatusOK)
	if string(vr.Body) != string(mr.Body) {
		t.Errorf("viewer results differ from the member's")
	}
}
