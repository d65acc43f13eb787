package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/job/submit"
	"github.com/skiffhq/skiff/internal/store"
)

const bigJobTasks = 10_000

// submitBigJob admits a fan-out job of n items through the job service (as
// POST /jobs would, without sending a 10,000-item body through the test
// client) and returns it.
func submitBigJob(t testing.TB, e *apitest.Env, accountID string, n int) *store.Job {
	t.Helper()
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`{"i":%d}`, i)
	}
	body := `{"project":"` + fixtureProject + `","runner_command":["/runner"],"payload":{},"fan_out":{"items":[` +
		strings.Join(items, ",") + `]}}`
	js, err := submit.Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	j, err := e.Jobs.Submit(t.Context(), accountID, js)
	if err != nil {
		t.Fatalf("submit a %d-task job: %v", n, err)
	}
	return j
}

// TestTaskPaging10k pages through GET /jobs/{id}/tasks and GET
// /results/{job_id} of a running 10,000-task job on every engine.
func TestTaskPaging10k(t *testing.T) {
	runSuite(t, []apiCase{{"10k_tasks", testTaskPaging10k}}, funded(1000_000_000))
}

func testTaskPaging10k(t *testing.T, f *fixture) {
	c := f.viewer
	j := submitBigJob(t, f.e, f.acct.ID, bigJobTasks)
	if got := getJob(t, c, j.ID); got.TaskCount != bigJobTasks {
		t.Fatalf("task_count = %d; want %d", got.TaskCount, bigJobTasks)
	}

	// Task 0 fails once and succeeds on its retry; task 1 succeeds with
	// stdout; task 2 is still running. The job runs.
	t0, a0 := startJob(t, f, j.ID)
	startAttempt(t, f, a0)
	finish(t, f, &store.AttemptFinishParams{AttemptID: a0.ID, Status: store.AttemptFailed, TaskStatus: store.TaskQueued,
		RetryDecision: "retry", TerminalKind: "exit", RetriesUsed: 1})
	for i, want := range []int64{0, 1, 2} {
		task, a := claimTask(t, f, "wkr_one", `{"cpu_count":8}`)
		if task.Index != want {
			t.Fatalf("claim %d took task %d; want %d", i, task.Index, want)
		}
		startAttempt(t, f, a)
		if want == 2 {
			break
		}
		out := map[int64]string{0: "", 1: "hello\n"}[want]
		finish(t, f, &store.AttemptFinishParams{AttemptID: a.ID, Status: store.AttemptSucceeded,
			TaskStatus: store.TaskSucceeded, Result: json.RawMessage(`{"ok":true}`), Output: &out})
	}
	if t0.Index != 0 {
		t.Fatalf("first claim took task %d", t0.Index)
	}

	// Pages of GET /jobs/{id}/tasks.
	tasksPage := func(query string) (apiv1.TaskList, []map[string]any) {
		t.Helper()
		r := c.Get(t, jobPath(j.ID, "/tasks"+query)).Want(t, http.StatusOK)
		var out apiv1.TaskList
		var raw struct {
			Tasks []map[string]any `json:"tasks"`
		}
		if err := json.Unmarshal(r.Body, &out); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal(r.Body, &raw)
		return out, raw.Tasks
	}
	var taskIDs []string // by index, from the pages read
	for _, pc := range []struct {
		query                string
		limit, offset, count int
	}{
		{"", 1000, 0, 1000},                           // first page, the default limit
		{"?offset=1000&limit=1000", 1000, 1000, 1000}, // second page
		{"?offset=4000&limit=1000", 1000, 4000, 1000}, // a middle page
		{"?offset=9500", 1000, 9500, 500},             // the last, partial page
		{"?offset=10000", 1000, 10000, 0},             // offset at the end
		{"?offset=20000&limit=5", 5, 20000, 0},        // past the end
		{"?offset=9999&limit=1", 1, 9999, 1},
	} {
		page, raw := tasksPage(pc.query)
		// count is the job's tasks (spec {tasks, count}); the page's
		// size is its tasks' length.
		if page.Count != bigJobTasks || len(page.Tasks) != pc.count || page.Total != bigJobTasks ||
			page.Limit != pc.limit || page.Offset != pc.offset {
			t.Errorf("tasks%s: count %d (%d tasks), total %d, limit %d, offset %d; want count and total %d, %d tasks, %d, %d", pc.query,
				page.Count, len(page.Tasks), page.Total, page.Limit, page.Offset, bigJobTasks, pc.count, pc.limit, pc.offset)
			continue
		}
		for i, task := range page.Tasks {
			want := int64(pc.offset + i)
			if task.Index != want || string(task.Payload) != fmt.Sprintf(`{"i":%d}`, want) {
				t.Fatalf("tasks%s[%d] = index %d payload %s; want index %d", pc.query, i, task.Index, task.Payload, want)
			}
			if int(want) == len(taskIDs) {
				taskIDs = append(taskIDs, task.ID)
			}
		}
		if len(raw) > 0 {
			wantKeys(t, "task", raw[0], taskKeys...)
		}
	}
	if len(taskIDs) != 2000 || len(slices.Compact(slices.Sorted(slices.Values(taskIDs)))) != 2000 {
		t.Fatalf("read %d task ids from the first two pages; want 2000 distinct", len(taskIDs))
	}

	// Each task on a page comes with its own attempts, and only those.
	page, _ := tasksPage("?limit=4")
	attempts := func(i int) []string {
		var out []string
		for _, a := range page.Tasks[i].Attempts {
			out = append(out, fmt.Sprintf("%d:%s", a.AttemptNumber, a.Status))
		}
		return out
	}
	for i, want := range [][]string{{"1:failed", "2:succeeded"}, {"1:succeeded"}, {"1:running"}, nil} {
		if got := attempts(i); !slices.Equal(got, want) {
			t.Errorf("task %d attempts = %v; want %v", i, got, want)
		}
	}
	if page, _ := tasksPage("?offset=2&limit=1"); len(page.Tasks) != 1 || len(page.Tasks[0].Attempts) != 1 ||
		page.Tasks[0].Status != "running" {
		t.Errorf("task 2 alone = %+v; want it running with its one attempt", page.Tasks)
	}
	for _, q := range []string{"?limit=0", "?limit=1001", "?limit=x", "?offset=-1"} {
		c.Do(t, apitest.Request{Method: "GET", Path: jobPath(j.ID, "/tasks"+q), Check: apitest.MustViolate}).
			Fail(t, http.StatusUnprocessableEntity)
	}

	// Pages of GET /results/{job_id}.
	for _, pc := range []struct {
		query                string
		limit, offset, count int
	}{
		{"", 1000, 0, 1000},
		{"?offset=1000", 1000, 1000, 1000},
		{"?offset=7000&limit=250", 250, 7000, 250},
		{"?offset=9900", 1000, 9900, 100},
		{"?offset=10000", 1000, 10000, 0},
		{"?offset=12345&limit=10", 10, 12345, 0},
	} {
		var res apiv1.JobResult
		c.Get(t, "/api/v1/results/"+j.ID+pc.query).JSON(t, http.StatusOK, &res)
		if res.Count != bigJobTasks || len(res.Results) != pc.count || res.Limit != pc.limit || res.Offset != pc.offset ||
			res.ResultCount != 2 || res.OutputCount != 1 || res.TaskCount != bigJobTasks || res.Status != "running" {
			t.Errorf("result%s: count %d (%d), limit %d, offset %d, result_count %d, output_count %d, task_count %d, %s",
				pc.query, res.Count, len(res.Results), res.Limit, res.Offset, res.ResultCount, res.OutputCount,
				res.TaskCount, res.Status)
			continue
		}
		for i, e := range res.Results {
			want := pc.offset + i
			if e.Index != int64(want) || string(e.Payload) != fmt.Sprintf(`{"i":%d}`, want) ||
				(want < len(taskIDs) && e.TaskID != taskIDs[want]) {
				t.Fatalf("result%s[%d] = index %d task %s; want index %d", pc.query, i, e.Index, e.TaskID, want)
			}
		}
		if pc.offset == 0 {
			if !res.Results[0].ResultPresent || !res.Results[1].ResultPresent || res.Results[2].ResultPresent ||
				!res.Results[1].OutputPresent || res.Results[0].OutputPresent || res.Results[1].Status != "succeeded" {
				t.Errorf("first results = %+v", res.Results[:3])
			}
		}
	}
	var res apiv1.JobResult
	c.Get(t, "/api/v1/results/"+j.ID).JSON(t, http.StatusOK, &res)
	var sum struct {
		Completeness struct{ Total, Succeeded, Pending int64 } `json:"completeness"`
	}
	if err := json.Unmarshal(res.Summary, &sum); err != nil || sum.Completeness.Total != bigJobTasks ||
		sum.Completeness.Succeeded != 2 || sum.Completeness.Pending != bigJobTasks-2 {
		t.Errorf("result summary completeness = %+v, %v", sum.Completeness, err)
	}

	// The results list's include_tasks carries the first 100 tasks.
	_, list, _ := resultIDs(t, c, "?status=running&include_tasks=true")
	if len(list.Results) != 1 || list.Results[0].Results == nil || len(*list.Results[0].Results) != apiv1.MaxResultListTasks ||
		!*list.Results[0].ResultsTruncated || *list.Results[0].ResultCount != 2 || *list.Results[0].OutputCount != 1 {
		t.Fatalf("results list with include_tasks = %+v", list.Results)
	}
	for i, e := range *list.Results[0].Results {
		if e.Index != int64(i) || e.TaskID != taskIDs[i] {
			t.Fatalf("include_tasks entry %d = index %d task %s", i, e.Index, e.TaskID)
		}
	}
}

// BenchmarkTasksPage reads one 1000-task page (offset 5000) of GET
// /jobs/{id}/tasks and of GET /results/{job_id} of a running 10,000-task job
// on SQLite, whose every task has run one attempt with a small result and
// stdout. Each iteration is one GET of each, timed at the client over
// loopback HTTP; median_tasks_ms and median_results_ms are the medians over
// the iterations, tasks_page_bytes the size of the tasks page.
//
//	go test -run '^$' -bench TasksPage -benchtime 5x ./internal/httpapi/
func BenchmarkTasksPage(b *testing.B) {
	e := apitest.Start(b, apitest.Options{})
	acct, c := fundedAccount(b, e, "acme", fixtureProject, 1000_000_000)
	j := submitBigJob(b, e, acct.ID, bigJobTasks)
	ctx, now := b.Context(), e.Clock.Now()
	out := "out\n"
	for range bigJobTasks {
		_, a, err := e.Store.TaskClaim(ctx, &store.TaskClaimParams{HostID: "wkr_bench", AttemptID: id.New(id.Attempt),
			ResourceProfile: json.RawMessage(`{"cpu_count":8}`), FreeCPU: 64, FreeMemoryMB: 1 << 20, Now: now})
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Store.AttemptStart(ctx, a.ID, now); err != nil {
			b.Fatal(err)
		}
		if _, err := e.Store.AttemptFinish(ctx, &store.AttemptFinishParams{AttemptID: a.ID, Status: store.AttemptSucceeded,
			TerminalKind: "exit", RetryDecision: "none", TaskStatus: store.TaskSucceeded,
			Result: json.RawMessage(`{"ok":true,"value":42}`), Output: &out, Now: now}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := e.Store.JobSetStatus(ctx, &store.JobSetStatusParams{ID: j.ID, To: store.JobRunning, Now: now}); err != nil {
		b.Fatal(err)
	}
	// The timed GETs skip the contract check of the test client: only the
	// server's answer is measured.
	c = &apitest.Client{BaseURL: e.URL, Token: acct.Member}
	var tasksTimes, resultTimes []time.Duration
	var size int
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		r := c.Get(b, jobPath(j.ID, "/tasks?offset=5000&limit=1000")).Want(b, http.StatusOK)
		tasksTimes = append(tasksTimes, time.Since(start))
		size = len(r.Body)
		start = time.Now()
		c.Get(b, "/api/v1/results/"+j.ID+"?offset=5000&limit=1000").Want(b, http.StatusOK)
		resultTimes = append(resultTimes, time.Since(start))
	}
	b.StopTimer()
	median := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds()) / 1000
	}
	b.ReportMetric(median(tasksTimes), "median_tasks_ms")
	b.ReportMetric(median(resultTimes), "median_results_ms")
	b.ReportMetric(float64(size), "tasks_page_bytes")
}
