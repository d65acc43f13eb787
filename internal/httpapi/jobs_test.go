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
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/jobview"
	"github.com/skiffhq/skiff/internal/store"
)

// jobSuite is every test of the job and result endpoints. TestJobsAPI runs
// it against each store engine, each case on a fresh server whose project
// "alpha" has a published revision.
func jobSuite() []apiCase {
	return []apiCase{
		{"submit_shape", testJobSubmitShape},
		{"submit_refusals", testJobSubmitRefusals},
		{"payment_required", testJobPaymentRequired},
		{"batch", testJobBatch},
		{"viewer_and_other_account", testJobAccess},
		{"list_filters_and_paging", testJobList},
		{"cancel", testJobCancel},
		{"cancel_queued", testCancelQueued},
		{"edit_requirements", testEditRequirements},
		{"execution_views", testExecutionViews},
		{"events_paged", testJobEventsPaged},
		{"body_caps", testJobBodyCaps},
		{"error_bodies_match_document", testErrorBodiesMatchDocument},
		{"placement_advice", testPlacementAdvice},
		{"result_list", testResultList},
		{"result_project_content_hash", testResultProjectContentHash},
		{"result_user_id", testResultUserID},
		{"checkpoint_artifacts", testCheckpointArtifacts},
		{"result_groups", testResultGroups},
	}
}

func TestJobsAPI(t *testing.T) {
	runSuite(t, jobSuite(), funded(1000_000_000))
}

// publish gives a project of the fixture's account a published revision,
// straight through the store: these tests never build.
func publish(t *testing.T, f *fixture, name string) {
	t.Helper()
	publishFor(t, f.e, f.acct.ID, name)
}

func publishFor(tb testing.TB, e *apitest.Env, accountID, name string) {
	tb.Helper()
	e.Publish(tb, accountID, name)
}

// submitJob submits body (runner_command and project filled in when
// absent) and returns the job object.
func submitJob(t *testing.T, c *apitest.Client, body map[string]any) *apiv1.Job {
	t.Helper()
	b := map[string]any{"project": fixtureProject, "runner_command": []string{"/runner"}}
	for k, v := range body {
		b[k] = v
	}
	var j apiv1.Job
	c.Post(t, "/api/v1/jobs", b).JSON(t, http.StatusCreated, &j)
	if j.ID == "" {
		t.Fatalf("submit %v: got no job id", body)
	}
	return &j
}

func getJob(t *testing.T, c *apitest.Client, jobID string) *apiv1.Job {
	t.Helper()
	var j apiv1.Job
	c.Get(t, "/api/v1/jobs/"+jobID).JSON(t, http.StatusOK, &j)
	return &j
}

func jobPath(jobID, rest string) string { return "/api/v1/jobs/" + jobID + rest }

// jobObjectKeys are exactly the fields of a job object.
var jobObjectKeys = []string{"id", "status", "type", "project", "priority", "requirements", "reservation",
	"checkpointing", "timeout_s", "max_retries", "depends_on", "preset", "recommended_action", "meta", "variant",
	"feedback_summary", "client_ref", "tags", "task_count", "submitted_at", "started_at", "completed_at", "links",
	"summary", "error"}

var summaryKeys = []string{"task_outcome_counts", "aggregate_result", "aggregate_aliases", "completeness",
	"result_persisted", "output_persisted", "billing_estimate", "billing_admission", "billing_hold", "cost"}

func summaryOf(t *testing.T, j *apiv1.Job) (job.Summary, map[string]any) {
	t.Helper()
	var s job.Summary
	var m map[string]any
	if err := json.Unmarshal(j.Summary, &s); err != nil {
		t.Fatalf("summary %s: %v", j.Summary, err)
	}
	_ = json.Unmarshal(j.Summary, &m)
	return s, m
}

func testJobSubmitShape(t *testing.T, f *fixture) {
	body := map[string]any{"project": fixtureProject, "runner_command": []string{"python", "main.py"},
		"payload": map[string]any{"xs": []int{1, 2, 3}}, "fan_out": map[string]any{"by": "xs"},
		"tags": []string{"nightly", "gpu"}, "client_ref": "run-7", "meta": map[string]any{"owner": "ana"},
		"variant": "b", "priority": "high", "max_retries": 2, "timeout_s": 600}
	r := f.member.Post(t, "/api/v1/jobs", body)
	m := r.Object(t, http.StatusCreated)
	wantKeys(t, "job object", m, jobObjectKeys...)
	var j apiv1.Job
	r.JSON(t, http.StatusCreated, &j)
	if !strings.HasPrefix(j.ID, "job_") || j.Status != "queued" || j.Type != "structured_runner" || j.Project != fixtureProject ||
		j.Priority != "high" || j.TaskCount != 3 || j.MaxRetries != 2 || j.TimeoutS != 600 {
		t.Errorf("got job %+v; want a queued structured_runner of 3 tasks on alpha, high priority, 2 retries, 600 s", j.JobCommon)
	}
	if !j.SubmittedAt.Equal(apitest.Epoch) || j.StartedAt != nil || j.CompletedAt != nil {
		t.Errorf("got times %v %v %v, want submitted at %v only", j.SubmittedAt, j.StartedAt, j.CompletedAt, apitest.Epoch)
	}
	rq := j.Requirements
	if rq.CPU == nil || *rq.CPU != 1 || *rq.MemoryMB != 2048 || *rq.GPUCount != 0 || *rq.Profile != "cpu" ||
		*rq.StorageGB != 10 || *rq.GPUMemoryMB != 0 || rq.MinSingleCoreScore != nil {
		t.Errorf("got requirements %s, want the defaults", mustJSON(t, rq))
	}
	if *j.Reservation.Mode != "best_effort" || *j.Checkpointing.Enabled || *j.Checkpointing.PayloadKey != "_resume" {
		t.Errorf("got reservation %s checkpointing %s", mustJSON(t, j.Reservation), mustJSON(t, j.Checkpointing))
	}
	if j.ClientRef == nil || *j.ClientRef != "run-7" || !slices.Equal(j.Tags, []string{"nightly", "gpu"}) ||
		string(j.Meta) != `{"owner":"ana"}` || j.Variant == nil || *j.Variant != "b" {
		t.Errorf("got client_ref %v tags %v meta %s variant %v", j.ClientRef, j.Tags, j.Meta, j.Variant)
	}
	if j.Error != nil || j.RecommendedAction != nil {
		t.Errorf("got error %v, recommended_action %v; want null", j.Error, j.RecommendedAction)
	}
	if m["feedback_summary"] != nil || m["preset"] != nil {
		t.Errorf("got feedback_summary %v preset %v, want null", m["feedback_summary"], m["preset"])
	}
	if j.Links != jobview.JobLinksOf(j.ID) || j.Links.Self != "/api/v1/jobs/"+j.ID {
		t.Errorf("got links %+v", j.Links)
	}
	s, sm := summaryOf(t, &j)
	wantKeys(t, "summary", sm, summaryKeys...)
	if s.TaskOutcomeCounts != (job.TaskOutcomeCounts{Queued: 3}) || s.Completeness.Total != 3 || s.Completeness.Pending != 3 ||
		s.Completeness.Fraction != 0 || string(s.AggregateResult) != "null" || s.ResultPersisted {
		t.Errorf("got summary %s, want 3 queued, nothing merged yet", j.Summary)
	}
	// GET answers the same object.
	got := f.member.Get(t, jobPath(j.ID, "")).Want(t, http.StatusOK)
	if !jsonEqual(t, got.Body, r.Body) {
		t.Errorf("GET %s:\ngot  %s\nwant %s", j.ID, got.Body, r.Body)
	}
	// A viewer reads it too.
	f.viewer.Get(t, jobPath(j.ID, "")).Want(t, http.StatusOK)

	// A dependent job waits in planning.
	dep := submitJob(t, f.member, map[string]any{"depends_on": []string{j.ID}})
	if dep.Status != "planning" || !slices.Equal(dep.DependsOn, []string{j.ID}) {
		t.Errorf("dependent job: got status %s depends_on %v, want planning on %s", dep.Status, dep.DependsOn, j.ID)
	}
}

// Every refusal family of a submission is a 422 through HTTP, names what
// is wrong, and stores nothing.
func testJobSubmitRefusals(t *testing.T, f *fixture) {
	f.member.Post(t, "/api/v1/projects", map[string]any{"name": "unpushed"}).Want(t, http.StatusCreated)
	tags := make([]string, 21)
	deps := make([]string, 51)
	for i := range tags {
		tags[i] = fmt.Sprintf("t%d", i)
	}
	for i := range deps {
		deps[i] = fmt.Sprintf("job_%d", i)
	}
	const v, m = apitest.MustViolate, apitest.MustMatch
	for _, tc := range []struct {
		name  string
		body  map[string]any
		check apitest.Check
		field string // in details.fields; "" when code says it
		code  string
	}{
		{"max_retries too high", map[string]any{"max_retries": 11}, v, "max_retries", "invalid_job"},
		{"max_retries negative", map[string]any{"max_retries": -1}, v, "max_retries", "invalid_job"},
		{"21 tags", map[string]any{"tags": tags}, v, "tags", "invalid_job"},
		{"client_ref of 256 bytes", map[string]any{"client_ref": strings.Repeat("r", 256)}, v, "client_ref", "invalid_job"},
		{"51 depends_on", map[string]any{"depends_on": deps}, v, "depends_on", "invalid_job"},
		{"unknown preset", map[string]any{"preset": "huge"}, m, "preset", "unknown_preset"},
		{"guaranteed reservation", map[string]any{"reservation": map[string]any{"mode": "guaranteed"}}, v, "reservation.mode", "reservation_unsupported"},
		{"reservation parallelism", map[string]any{"reservation": map[string]any{"parallelism": 4}}, v, "reservation.parallelism", "reservation_unsupported"},
		{"max_tasks_per_node", map[string]any{"distribution": map[string]any{"max_tasks_per_node": 1}}, v, "distribution.max_tasks_per_node", "reservation_unsupported"},
		{"callback_url", map[string]any{"callback_url": "https://example.com/hook"}, v, "callback_url", "callback_url_unsupported"},
		{"result_schema not an object", map[string]any{"result_schema": "strict"}, v, "result_schema", "invalid_job"},
		{"result_schema a list", map[string]any{"result_schema": []int{1}}, v, "result_schema", "invalid_job"},
		{"execution_policy", map[string]any{"execution_policy": "privileged"}, v, "execution_policy", "execution_policy_unsupported"},
		{"unpublished project", map[string]any{"project": "unpushed"}, m, "", "project_not_published"},
		{"unknown project", map[string]any{"project": "nope"}, m, "", "unknown_project"},
		{"unknown dependency", map[string]any{"depends_on": []string{"job_zzz"}}, m, "", "unknown_dependency"},
		{"mistyped timeout", map[string]any{"timeout_s": "600"}, v, "timeout_s", "invalid_job"},
		{"mixed fan-out", map[string]any{"payload": map[string]any{"xs": []int{1}}, "fan_out": map[string]any{"by": "xs", "chunks": 2, "total": 4}}, m, "fan_out", "mixed_fan_out"},
		{"top-level tasks", map[string]any{"tasks": []any{map[string]any{}}}, v, "tasks", "tasks_unsupported"},
		{"no runner_command", map[string]any{"runner_command": nil}, v, "runner_command", "invalid_job"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := map[string]any{"project": fixtureProject, "runner_command": []string{"/runner"}}
			for k, val := range tc.body {
				if val == nil {
					delete(body, k)
					continue
				}
				body[k] = val
			}
			env := f.member.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/jobs", Body: body, Check: tc.check}).
				Fail(t, http.StatusUnprocessableEntity)
			if env.Code != tc.code {
				t.Errorf("got code %q, want %q (%s)", env.Code, tc.code, env.Error)
			}
			if env.RecommendedAction == "" {
				t.Error("got no recommended_action")
			}
			if tc.field != "" {
				fields, _ := env.Details["fields"].(map[string]any)
				if _, ok := fields[tc.field]; !ok && env.Details["field"] != tc.field {
					t.Errorf("got details %v, want field %s named", env.Details, tc.field)
				}
			}
		})
	}
	// Several problems are answered at once.
	env := f.member.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/jobs", Check: v,
		Body: map[string]any{"project": fixtureProject, "runner_command": []string{"/r"}, "max_retries": 99, "tags": tags}}).
		Fail(t, http.StatusUnprocessableEntity)
	if fields, _ := env.Details["fields"].(map[string]any); len(fields) != 2 {
		t.Errorf("got details %v, want max_retries and tags", env.Details)
	}
	// A body that is not JSON is a 400, not an object a 422.
	f.member.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/jobs", Body: `{"project":`, Check: apitest.Unchecked}).
		Fail(t, http.StatusBadRequest)
	f.member.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/jobs", Body: `[1]`, Check: v}).
		Fail(t, http.StatusUnprocessableEntity)

	var l apiv1.JobList
	f.member.Get(t, "/api/v1/jobs").JSON(t, http.StatusOK, &l)
	if l.Total != 0 {
		t.Errorf("refused submissions stored %d jobs, want none", l.Total)
	}
}

// An account whose balance cannot cover the hold gets a 402 with a
// shortfall quote, alone or inside a batch, and nothing is stored.
func testJobPaymentRequired(t *testing.T, f *fixture) {
	_, c := fundedAccount(t, f.e, "poor", "thin", 0)
	body := map[string]any{"project": "thin", "runner_command": []string{"/r"}}
	env := c.Post(t, "/api/v1/jobs", body).Fail(t, http.StatusPaymentRequired)
	quote, _ := env.Details["quote"].(map[string]any)
	if env.Code != "insufficient_balance" || quote["quote_type"] != "job_shortfall" || env.Details["shortfall_usd"] == nil {
		t.Errorf("got %s %v, want insufficient_balance with a job_shortfall quote", env.Code, env.Details)
	}
	var res apiv1.JobBatchResult
	c.Post(t, "/api/v1/jobs/batch", map[string]any{"jobs": []any{body}}).JSON(t, http.StatusMultiStatus, &res)
	if res.Submitted != 0 || len(res.Errors) != 1 || res.Errors[0].Code != "insufficient_balance" || res.Errors[0].Details["quote"] == nil {
		t.Errorf("batch: got %s, want the entry refused with its quote", mustJSON(t, res))
	}
	if _, l := listIDs(t, c, ""); l.Total != 0 {
		t.Errorf("got %d jobs stored, want none", l.Total)
	}
}

func testJobBatch(t *testing.T, f *fixture) {
	ok := map[string]any{"project": fixtureProject, "runner_command": []string{"/r"}, "payload": map[string]any{"n": 1},
		"meta": map[string]any{"k": "v"}, "variant": "a"}
	ok2 := map[string]any{"project": fixtureProject, "runner_command": []string{"/r"}}
	bad := map[string]any{"project": fixtureProject, "runner_command": []string{"/r"}, "max_retries": 11}

	var all apiv1.JobBatchResult
	f.member.Post(t, "/api/v1/jobs/batch", map[string]any{"jobs": []any{ok, ok2}}).JSON(t, http.StatusCreated, &all)
	if all.Submitted != 2 || all.ErrorCount != 0 || len(all.Jobs) != 2 || len(all.Errors) != 0 {
		t.Fatalf("got %+v, want 2 submitted, no errors", all)
	}
	e := all.Jobs[0]
	if e.Index != 0 || e.Status != "queued" || string(e.Payload) != `{"n":1}` || string(e.Meta) != `{"k":"v"}` ||
		e.Variant == nil || *e.Variant != "a" || all.Jobs[1].Index != 1 || string(all.Jobs[1].Meta) != "null" {
		t.Errorf("got entries %s", mustJSON(t, all.Jobs))
	}
	getJob(t, f.member, e.ID)

	// One refusal answers 207: the others are still admitted, exactly as
	// single submissions.
	r := f.member.Post(t, "/api/v1/jobs/batch", map[string]any{"jobs": []any{ok, bad, ok2}})
	var some apiv1.JobBatchResult
	r.JSON(t, http.StatusMultiStatus, &some)
	if some.Submitted != 2 || some.ErrorCount != 1 || len(some.Errors) != 1 || some.Jobs[0].Index != 0 || some.Jobs[1].Index != 2 {
		t.Fatalf("got %s, want indexes 0 and 2 admitted, 1 refused", r.Body)
	}
	be := some.Errors[0]
	fields, _ := be.Details["fields"].(map[string]any)
	if be.Index != 1 || be.Code != "invalid_job" || be.RecommendedAction == "" || fields["max_retries"] == nil {
		t.Errorf("got error %+v, want index 1 invalid_job on max_retries", be)
	}
	// Every entry refused is still a 207; an entry that is not an object is
	// refused on its index.
	r = f.member.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/jobs/batch", Check: apitest.MustViolate,
		Body: map[string]any{"jobs": []any{bad, 7}}})
	r.JSON(t, http.StatusMultiStatus, &some)
	if some.Submitted != 0 || some.ErrorCount != 2 || len(some.Jobs) != 0 || some.Errors[1].Code != "not_an_object" {
		t.Errorf("got %s, want both refused", r.Body)
	}

	// More than 200, or none, refuse the whole batch.
	big := make([]any, 201)
	for i := range big {
		big[i] = ok2
	}
	env := f.member.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/jobs/batch", Body: map[string]any{"jobs": big},
		Check: apitest.MustViolate}).Fail(t, http.StatusUnprocessableEntity)
	if env.Code != "batch_too_large" {
		t.Errorf("got code %q, want batch_too_large", env.Code)
	}
	f.member.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/jobs/batch", Body: map[string]any{"jobs": []any{}},
		Check: apitest.MustViolate}).Fail(t, http.StatusUnprocessableEntity)
	f.member.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/jobs/batch", Body: map[string]any{},
		Check: apitest.MustViolate}).Fail(t, http.StatusUnprocessableEntity)

	var l apiv1.JobList
	f.member.Get(t, "/api/v1/jobs").JSON(t, http.StatusOK, &l)
	if l.Total != 4 {
		t.Errorf("got %d jobs stored, want 4 (2 + 2 admitted)", l.Total)
	}
	// 200 is the limit, not over it.
	big = big[:200]
	var full apiv1.JobBatchResult
	f.member.Post(t, "/api/v1/jobs/batch", map[string]any{"jobs": big}).JSON(t, http.StatusCreated, &full)
	if full.Submitted != 200 {
		t.Errorf("got %d submitted, want 200", full.Submitted)
	}
}

// A viewer reads jobs but may not change them; another account's job
// answers exactly as an unknown one, on every job route.
func testJobAccess(t *testing.T, f *fixture) {
	j := submitJob(t, f.member, map[string]any{"tags": []string{"x"}})
	before := f.state(t)
	for _, req := range []apitest.Request{
		{Method: "POST", Path: "/api/v1/jobs", Body: map[string]any{"project": fixtureProject, "runner_command": []string{"/r"}}},
		{Method: "PUT", Path: jobPath(j.ID, "/cancel")},
		{Method: "PATCH", Path: jobPath(j.ID, "/requirements"), Body: map[string]any{"cpu": 2}},
		{Method: "PUT", Path: "/api/v1/projects/alpha/cancel-queued"},
	} {
		if env := f.viewer.Do(t, req).Fail(t, http.StatusForbidden); env.Code != "read_only_key" {
			t.Errorf("viewer %s %s: got code %q, want read_only_key", req.Method, req.Path, env.Code)
		}
	}
	f.unchanged(t, before, "a viewer's job writes")
	if got := getJob(t, f.viewer, j.ID); got.Status != "queued" {
		t.Errorf("viewer GET: got status %s, want queued", got.Status)
	}

	other := f.e.NewAccount(t, "mallory")
	mal := f.e.Client(other.Member)
	unknown := "job_" + strings.Repeat("z", 26)
	routes := []struct {
		method, rest string
		body         any
	}{
		{"GET", "", nil}, {"GET", "/output", nil}, {"GET", "/tasks", nil}, {"GET", "/events", nil},
		{"PUT", "/cancel", nil}, {"PATCH", "/requirements", map[string]any{"cpu": 2}}, {"GET", "result", nil},
	}
	path := func(jobID, rest string) string {
		if rest == "result" {
			return "/api/v1/results/" + jobID
		}
		return jobPath(jobID, rest)
	}
	for _, rt := range routes {
		a := mal.Do(t, apitest.Request{Method: rt.method, Path: path(j.ID, rt.rest), Body: rt.body})
		b := mal.Do(t, apitest.Request{Method: rt.method, Path: path(unknown, rt.rest), Body: rt.body})
		ea, eb := a.Fail(t, http.StatusNotFound), b.Fail(t, http.StatusNotFound)
		wa := strings.ReplaceAll(string(mustJSON(t, ea.WithoutRequestID())), j.ID, unknown)
		if wb := string(mustJSON(t, eb.WithoutRequestID())); wa != wb || ea.Code != "job_not_found" {
			t.Errorf("%s %s: another account's job answered %s; an unknown one %s", rt.method, rt.rest, wa, wb)
		}
	}
	for _, p := range []string{"/api/v1/jobs", "/api/v1/jobs?ids=" + j.ID, "/api/v1/results?status=queued", "/api/v1/jobs?tag=x"} {
		var l struct {
			Total int `json:"total"`
		}
		mal.Get(t, p).JSON(t, http.StatusOK, &l)
		if l.Total != 0 {
			t.Errorf("mallory GET %s: got total %d, want 0", p, l.Total)
		}
	}
	f.e.Client(other.Member).Put(t, "/api/v1/projects/alpha/cancel-queued", nil).Fail(t, http.StatusNotFound)
	if got := getJob(t, f.member, j.ID); got.Status != "queued" || *got.Requirements.CPU != 1 {
		t.Errorf("after mallory: got status %s cpu %v, want it untouched", got.Status, *got.Requirements.CPU)
	}
}

var listEntryKeys = []string{"id", "status", "type", "project", "priority", "requirements", "reservation",
	"checkpointing", "timeout_s", "max_retries", "depends_on", "preset", "recommended_action", "meta", "variant",
	"feedback_summary", "client_ref", "tags", "task_count", "submitted_at", "started_at", "completed_at", "links",
	"payload", "user_id", "has_error", "has_output", "error_snippet"}

func listIDs(t *testing.T, c *apitest.Client, query string) ([]string, apiv1.JobList) {
	t.Helper()
	var l apiv1.JobList
	c.Get(t, "/api/v1/jobs"+query).JSON(t, http.StatusOK, &l)
	ids := make([]string, len(l.Jobs))
	for i, j := range l.Jobs {
		ids[i] = j.ID
	}
	if l.Count != len(l.Jobs) {
		t.Errorf("GET /api/v1/jobs%s: got count %d for %d jobs", query, l.Count, len(l.Jobs))
	}
	return ids, l
}

func testJobList(t *testing.T, f *fixture) {
	f.member.Post(t, "/api/v1/projects", map[string]any{"name": "beta"}).Want(t, http.StatusCreated)
	publish(t, f, "beta")
	bodies := []map[string]any{
		{"tags": []string{"nightly"}, "payload": map[string]any{"n": 0}},
		{"type": "sweep", "parameters": map[string]any{"lr": []float64{0.1, 0.01}}, "rank_by": "loss"},
		{"project": "beta", "tags": []string{"nightly", "gpu"}},
		{"type": "map_reduce", "split": map[string]any{"field": "r", "total": 10, "chunks": 2}, "reduce": map[string]any{"hits": "sum"}},
		{"tags": []string{"gpu"}},
	}
	var ids []string // oldest first
	for _, b := range bodies {
		ids = append(ids, submitJob(t, f.member, b).ID)
		f.e.Clock.Advance(time.Minute)
	}
	newest := slices.Clone(ids)
	slices.Reverse(newest)
	f.member.Put(t, jobPath(ids[4], "/cancel"), map[string]any{"reason": strings.Repeat("why ", 40)}).Want(t, http.StatusOK)

	got, l := listIDs(t, f.member, "")
	if !slices.Equal(got, newest) || l.Total != 5 || l.Limit != 50 || l.Offset != 0 {
		t.Fatalf("got %v total %d limit %d offset %d, want %v newest first, 5, 50, 0", got, l.Total, l.Limit, l.Offset, newest)
	}
	var raw struct {
		Jobs []map[string]any `json:"jobs"`
	}
	f.member.Get(t, "/api/v1/jobs").JSON(t, http.StatusOK, &raw)
	for _, m := range raw.Jobs {
		wantKeys(t, "list entry", m, listEntryKeys...)
	}
	e := l.Jobs[4] // the oldest
	if string(e.Payload) != `{"n":0}` || e.UserID != f.acct.ID || e.HasError || e.HasOutput || e.ErrorSnippet != nil {
		t.Errorf("got entry %s", mustJSON(t, e))
	}
	c := l.Jobs[0] // the cancelled one
	if !c.HasError || c.ErrorSnippet == nil || len([]rune(*c.ErrorSnippet)) != 121 || !strings.HasSuffix(*c.ErrorSnippet, "…") {
		t.Errorf("cancelled entry: got has_error %v snippet %v, want 120 characters and an ellipsis", c.HasError, c.ErrorSnippet)
	}

	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"?status=cancelled", []string{ids[4]}},
		{"?status=queued,cancelled", newest},
		{"?status=queued&status=bogus", []string{ids[3], ids[2], ids[1], ids[0]}}, // the first value counts
		{"?project=beta", []string{ids[2]}},
		{"?project=alpha&tag=nightly", []string{ids[0]}},
		{"?project=nope", []string{}},
		{"?type=sweep", []string{ids[1]}},
		{"?tag=gpu", []string{ids[4], ids[2]}},
		{"?since=" + apitest.Epoch.Add(3*time.Minute).Format(time.RFC3339), []string{ids[4], ids[3]}},
		{"?since=2026-01-02T03:07:05%2B00:00", []string{ids[4], ids[3]}},
		{"?since=2026-01-02", newest},
		{"?since=2026-01-03", []string{}},
		{"?ids=" + ids[1] + "," + ids[3] + ",job_nope", []string{ids[3], ids[1]}},
		{"?limit=2", newest[:2]},
		{"?limit=2&offset=2", newest[2:4]},
		{"?limit=2&offset=4", newest[4:]},
		{"?offset=10", []string{}},
	} {
		got, l := listIDs(t, f.member, tc.query)
		if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("GET /api/v1/jobs%s: got %v, want %v", tc.query, got, tc.want)
		}
		if strings.Contains(tc.query, "limit=2") && l.Total != 5 {
			t.Errorf("GET /api/v1/jobs%s: got total %d, want 5 (all pages)", tc.query, l.Total)
		}
	}

	const v, m = apitest.MustViolate, apitest.MustMatch
	for _, tc := range []struct {
		query, code string
		check       apitest.Check
	}{
		{"?status=bogus", "invalid_status", m},
		{"?status=queued,done", "invalid_status", m},
		{"?type=batch", "invalid_type", v},
		{"?since=yesterday", "invalid_since", m},
		{"?since=2026-13-01", "invalid_since", m},
		{"?limit=0", "invalid_limit", v},
		{"?limit=201", "invalid_limit", v},
		{"?limit=ten", "invalid_limit", v},
		{"?offset=-1", "invalid_offset", v},
		{"?ids=" + manyIDs(201), "too_many_ids", m},
	} {
		env := f.member.Do(t, apitest.Request{Method: "GET", Path: "/api/v1/jobs" + tc.query, Check: tc.check}).
			Fail(t, http.StatusUnprocessableEntity)
		if env.Code != tc.code {
			t.Errorf("GET /api/v1/jobs%s: got code %q, want %q", tc.query, env.Code, tc.code)
		}
	}
	got, _ = listIDs(t, f.member, "?limit=200")
	if len(got) != 5 {
		t.Errorf("limit=200: got %d jobs, want 5", len(got))
	}
}

func manyIDs(n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("job_%d", i)
	}
	return strings.Join(ids, ",")
}

func testJobCancel(t *testing.T, f *fixture) {
	j := submitJob(t, f.member, map[string]any{"fan_out": map[string]any{"items": []any{map[string]any{}, map[string]any{}}}})
	f.e.Clock.Advance(5 * time.Second)
	r := f.member.Put(t, jobPath(j.ID, "/cancel"), map[string]any{"reason": "wrong input"})
	wantKeys(t, "cancelled job", r.Object(t, http.StatusOK), jobObjectKeys...)
	var c apiv1.Job
	r.JSON(t, http.StatusOK, &c)
	if c.Status != "cancelled" || c.Error == nil || !strings.Contains(*c.Error, "wrong input") || c.RecommendedAction == nil ||
		c.CompletedAt == nil || !c.CompletedAt.Equal(apitest.Epoch.Add(5*time.Second)) {
		t.Errorf("got %s, want cancelled with the reason, completed at +5s", r.Body)
	}
	s, _ := summaryOf(t, &c)
	if s.TaskOutcomeCounts != (job.TaskOutcomeCounts{Cancelled: 2}) || s.Completeness.Cancelled != 2 || s.Completeness.Pending != 0 {
		t.Errorf("got summary %s, want 2 cancelled tasks", c.Summary)
	}
	var tasks apiv1.TaskList
	f.member.Get(t, jobPath(j.ID, "/tasks")).JSON(t, http.StatusOK, &tasks)
	for _, task := range tasks.Tasks {
		if task.Status != "cancelled" || task.CompletedAt == nil {
			t.Errorf("task %d: got %s, want cancelled", task.Index, task.Status)
		}
	}
	// A terminal job cannot be cancelled again.
	env := f.member.Put(t, jobPath(j.ID, "/cancel"), nil).Fail(t, http.StatusConflict)
	if env.Code != "job_terminal" || env.RecommendedAction == "" || env.Details["status"] != "cancelled" {
		t.Errorf("second cancel: got %s %v", env.Code, env.Details)
	}

	// No body, an empty body and an empty object are all fine.
	for _, body := range []any{nil, "", map[string]any{}} {
		k := submitJob(t, f.member, nil)
		var got apiv1.Job
		f.member.Do(t, apitest.Request{Method: "PUT", Path: jobPath(k.ID, "/cancel"), Body: body}).JSON(t, http.StatusOK, &got)
		if got.Status != "cancelled" || got.Error == nil || *got.Error == "cancelled: " {
			t.Errorf("cancel with body %v: got %s %v", body, got.Status, got.Error)
		}
	}
	k := submitJob(t, f.member, nil)
	f.member.Do(t, apitest.Request{Method: "PUT", Path: jobPath(k.ID, "/cancel"), Check: apitest.MustViolate,
		Body: map[string]any{"reason": strings.Repeat("x", 501)}}).Fail(t, http.StatusUnprocessableEntity)
	f.member.Do(t, apitest.Request{Method: "PUT", Path: jobPath(k.ID, "/cancel"), Check: apitest.MustViolate,
		Body: map[string]any{"reason": 7}}).Fail(t, http.StatusUnprocessableEntity)
	if got := getJob(t, f.member, k.ID); got.Status != "queued" {
		t.Errorf("refused cancel: got status %s, want queued", got.Status)
	}
	f.member.Put(t, jobPath("job_nope", "/cancel"), nil).Fail(t, http.StatusNotFound)

	// The events record it.
	var evs apiv1.JobEventList
	f.member.Get(t, jobPath(j.ID, "/events")).JSON(t, http.StatusOK, &evs)
	if evs.Count != 2 || evs.Events[0].Kind != "job.submitted" || evs.Events[1].Kind != "job.cancelled" {
		t.Errorf("got events %s, want job.submitted then job.cancelled", mustJSON(t, evs))
	}
}

func testCancelQueued(t *testing.T, f *fixture) {
	f.member.Post(t, "/api/v1/projects", map[string]any{"name": "beta"}).Want(t, http.StatusCreated)
	publish(t, f, "beta")
	run := submitJob(t, f.member, map[string]any{"tags": []string{"a"}})
	startJob(t, f, run.ID)
	f.e.Clock.Advance(time.Second)
	qa := submitJob(t, f.member, map[string]any{"tags": []string{"a"}})
	qb := submitJob(t, f.member, map[string]any{"tags": []string{"b"}})
	f.e.Clock.Advance(time.Second)
	plan := submitJob(t, f.member, map[string]any{"tags": []string{"a"}, "depends_on": []string{run.ID}})
	other := submitJob(t, f.member, map[string]any{"project": "beta", "tags": []string{"a"}})
	f.e.Clock.Advance(time.Second)
	dep := submitJob(t, f.member, map[string]any{"depends_on": []string{qb.ID}})
	if plan.Status != "planning" || dep.Status != "planning" {
		t.Fatalf("got dependent statuses %s %s, want planning", plan.Status, dep.Status)
	}

	var res apiv1.CancelQueuedResult
	r := f.member.Put(t, "/api/v1/projects/alpha/cancel-queued", map[string]any{"tag": "a"})
	wantKeys(t, "cancel-queued", r.Object(t, http.StatusOK), "status", "project", "tag", "queued_before", "cancelled_jobs", "count")
	r.JSON(t, http.StatusOK, &res)
	if res.Status != "cancelled" || !slices.Equal(res.CancelledJobs, []string{qa.ID, plan.ID}) || res.QueuedBefore != 2 ||
		res.Count != 2 || res.Project != "alpha" || res.Tag == nil || *res.Tag != "a" {
		t.Errorf("tag a: got %+v, want 2 queued before and [%s %s] cancelled (oldest first)", res, qa.ID, plan.ID)
	}
	// The query names the tag too; nothing left with tag a.
	res = apiv1.CancelQueuedResult{}
	f.member.Put(t, "/api/v1/projects/alpha/cancel-queued?tag=a", nil).JSON(t, http.StatusOK, &res)
	if res.QueuedBefore != 0 || res.Count != 0 || res.CancelledJobs == nil || len(res.CancelledJobs) != 0 {
		t.Errorf("tag a again: got %+v, want nothing queued before and an empty list", res)
	}
	f.member.Put(t, "/api/v1/projects/alpha/cancel-queued?tag=a", map[string]any{"tag": "b"}).Fail(t, http.StatusUnprocessableEntity)
	f.member.Do(t, apitest.Request{Method: "PUT", Path: "/api/v1/projects/alpha/cancel-queued",
		Body: map[string]any{"reason": strings.Repeat("x", 501)}, Check: apitest.MustViolate}).Fail(t, http.StatusUnprocessableEntity)
	// Without a tag: every planning or queued job of the project, which
	// the answer leaves the tag out for. A dependent of a cancelled job is
	// cancelled with it, and listed.
	res = apiv1.CancelQueuedResult{}
	r = f.member.Put(t, "/api/v1/projects/alpha/cancel-queued", map[string]any{"reason": "new data"})
	if _, ok := r.Object(t, http.StatusOK)["tag"]; ok {
		t.Errorf("no tag: the answer has a tag field: %s", r.Body)
	}
	r.JSON(t, http.StatusOK, &res)
	if !slices.Equal(res.CancelledJobs, []string{qb.ID, dep.ID}) || res.QueuedBefore != 2 || res.Tag != nil {
		t.Errorf("no tag: got %+v, want 2 queued before and [%s %s] cancelled", res, qb.ID, dep.ID)
	}
	if j := getJob(t, f.member, qb.ID); j.Error == nil || *j.Error != "cancelled: new data" {
		t.Errorf("job cancelled with a reason: got error %v, want \"cancelled: new data\"", j.Error)
	}
	want := map[string]string{run.ID: "running", qa.ID: "cancelled", qb.ID: "cancelled", plan.ID: "cancelled",
		dep.ID: "cancelled", other.ID: "queued"}
	for jobID, st := range want {
		if got := getJob(t, f.member, jobID); got.Status != st {
			t.Errorf("job %s: got %s, want %s", jobID, got.Status, st)
		}
	}
	c := getJob(t, f.member, qa.ID)
	if s, _ := summaryOf(t, c); s.TaskOutcomeCounts.Cancelled != 1 || c.Error == nil || !strings.Contains(*c.Error, "cancel-queued") {
		t.Errorf("cancelled job: got summary %s error %v", c.Summary, c.Error)
	}
	f.member.Put(t, "/api/v1/projects/nope/cancel-queued", nil).Fail(t, http.StatusNotFound)
	// Their holds are captured: nothing was used, everything released.
	for _, jobID := range []string{qa.ID, qb.ID, plan.ID, dep.ID} {
		h, err := f.e.Store.HoldGetByJob(t.Context(), jobID)
		if err != nil || h.Status != store.HoldReleased || h.CapturedMicros != 0 {
			t.Errorf("hold of %s: got %+v, %v; want released", jobID, h, err)
		}
	}
	if h, err := f.e.Store.HoldGetByJob(t.Context(), run.ID); err != nil || h.Status != store.HoldActive {
		t.Errorf("hold of the running job: got %+v, %v; want active", h, err)
	}
}

// startJob claims the first task of the job (the only queued work when the
// job is the oldest) and moves the job to running, as the dispatcher would.
func startJob(t *testing.T, f *fixture, jobID string) (*store.Task, *store.Attempt) {
	t.Helper()
	task, a := claimTask(t, f, "wkr_one", `{"cpu_count":8}`)
	if task.JobID != jobID {
		t.Fatalf("claimed a task of job %s, want %s", task.JobID, jobID)
	}
	if _, err := f.e.Store.JobSetStatus(t.Context(), &store.JobSetStatusParams{ID: jobID, To: store.JobRunning,
		Now: f.e.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	return task, a
}

func claimTask(t *testing.T, f *fixture, host, profile string) (*store.Task, *store.Attempt) {
	t.Helper()
	task, a, err := f.e.Store.TaskClaim(t.Context(), &store.TaskClaimParams{HostID: host, AttemptID: id.New(id.Attempt),
		ResourceProfile: json.RawMessage(profile), FreeCPU: 64, FreeMemoryMB: 1 << 20, FreeGPUs: 8, Now: f.e.Clock.Now()})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	return task, a
}

func testEditRequirements(t *testing.T, f *fixture) {
	j := submitJob(t, f.member, map[string]any{"fan_out": map[string]any{"items": []any{map[string]any{}, map[string]any{}, map[string]any{}}},
		"requirements": map[string]any{"cpu": 2, "memory_mb": 4096}})
	// Task 0 ends, task 1 runs, task 2 waits.
	t0, a0 := startJob(t, f, j.ID)
	if _, err := f.e.Store.AttemptFinish(t.Context(), &store.AttemptFinishParams{AttemptID: a0.ID, Status: store.AttemptSucceeded,
		TerminalKind: "exit", RetryDecision: "none", TaskStatus: store.TaskSucceeded, Now: f.e.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	t1, _ := claimTask(t, f, "wkr_one", `{}`)

	patch := func(body any, check apitest.Check) *apitest.Response {
		t.Helper()
		return f.member.Do(t, apitest.Request{Method: "PATCH", Path: jobPath(j.ID, "/requirements"), Body: body, Check: check})
	}
	// At the default rates a core costs as much as 8 GiB: 2 cores and
	// 4096 MB are priced as 1 core and 12288 MB, so the job keeps its rate.
	var got apiv1.Job
	r := patch(map[string]any{"cpu": 1, "memory_mb": 12288}, apitest.MustMatch)
	wantKeys(t, "edited job", r.Object(t, http.StatusOK), jobObjectKeys...)
	r.JSON(t, http.StatusOK, &got)
	if *got.Requirements.CPU != 1 || *got.Requirements.MemoryMB != 12288 || *got.Requirements.StorageGB != 10 {
		t.Errorf("replace: got %s, want cpu 1, memory 12288, the rest as it was", mustJSON(t, got.Requirements))
	}
	reqOf := func(taskID string) (apiv1.JobRequirements, *store.Task) {
		task, err := f.e.Store.TaskGet(t.Context(), taskID)
		if err != nil {
			t.Fatal(err)
		}
		var rq apiv1.JobRequirements
		_ = json.Unmarshal(task.Requirements, &rq)
		return rq, task
	}
	var tl apiv1.TaskList
	f.member.Get(t, jobPath(j.ID, "/tasks")).JSON(t, http.StatusOK, &tl)
	for _, task := range tl.Tasks {
		var rq apiv1.JobRequirements
		_ = json.Unmarshal(task.Requirements, &rq)
		wantCPU := 1.0
		if task.ID == t0.ID {
			wantCPU = 2 // ended: keeps what it ran with
		}
		if *rq.CPU != wantCPU {
			t.Errorf("task %d (%s): got cpu %v, want %v", task.Index, task.Status, *rq.CPU, wantCPU)
		}
	}
	if _, row := reqOf(t1.ID); row.CPU != 1 || row.MemoryMB != 12288 || row.Status != store.TaskRunning {
		t.Errorf("running task row: got cpu %v memory %d %s, want 1 12288 running (its next attempt uses them)", row.CPU, row.MemoryMB, row.Status)
	}

	// Fields that do not price the job change freely; the wrapped shape
	// works too, and null removes a field: it falls back to the default.
	patch(map[string]any{"requirements": map[string]any{"storage_gb": 50, "min_single_core_score": 1.5}}, apitest.MustMatch).
		JSON(t, http.StatusOK, &got)
	if *got.Requirements.StorageGB != 50 || *got.Requirements.MinSingleCoreScore != 1.5 || *got.Requirements.CPU != 1 {
		t.Errorf("storage and score: got %s, want storage 50, score 1.5", mustJSON(t, got.Requirements))
	}
	got = apiv1.Job{} // decoding into the old value would keep fields the answer leaves out
	patch(map[string]any{"storage_gb": nil, "min_single_core_score": nil, "cpu": nil}, apitest.MustMatch).JSON(t, http.StatusOK, &got)
	if *got.Requirements.StorageGB != 10 || got.Requirements.MinSingleCoreScore != nil || *got.Requirements.CPU != 1 ||
		*got.Requirements.MemoryMB != 12288 {
		t.Errorf("nulls: got %s, want the default storage, no score, cpu 1, memory kept", mustJSON(t, got.Requirements))
	}
	if rq, _ := reqOf(tl.Tasks[2].ID); *rq.StorageGB != 10 || rq.MinSingleCoreScore != nil {
		t.Errorf("queued task: got %s", mustJSON(t, rq))
	}

	// Capacity priced the same keeps the job's rate and its hold: the
	// estimate is still the admitted one (re-pricing is billing_test.go's).
	if b := billingOf(t, getJob(t, f.member, j.ID).Summary); b.Estimate.RateUSDPerHour != 67_500 ||
		b.Hold == nil || b.Hold.AmountUSD != 3*67_500 {
		t.Errorf("after edits that keep the price: got estimate %+v hold %+v, want 0.0675 USD per hour, 3 attempts held", b.Estimate, b.Hold)
	}

	const v, m = apitest.MustViolate, apitest.MustMatch
	before := mustJSON(t, getJob(t, f.member, j.ID).Requirements)
	for _, tc := range []struct {
		name  string
		body  any
		check apitest.Check
		field string
	}{
		{"negative cpu", map[string]any{"cpu": -1}, v, "requirements.cpu"},
		{"zero memory", map[string]any{"memory_mb": 0}, v, "requirements.memory_mb"},
		{"score above 3", map[string]any{"min_single_core_score": 3.5}, v, "requirements.min_single_core_score"},
		{"unknown profile", map[string]any{"profile": "tpu"}, v, "requirements.profile"},
		{"mistyped cpu", map[string]any{"cpu": "four"}, v, "requirements.cpu"},
		{"unknown field", map[string]any{"cores": 4}, v, "requirements.cores"},
		{"contradiction", map[string]any{"profile": "cpu", "gpu_count": 1}, m, "requirements.profile"},
		{"empty", map[string]any{}, v, ""},
		{"wrapped not an object", map[string]any{"requirements": 4}, v, "requirements"},
	} {
		env := patch(tc.body, tc.check).Fail(t, http.StatusUnprocessableEntity)
		fields, _ := env.Details["fields"].(map[string]any)
		if _, ok := fields[tc.field]; tc.field != "" && !ok && env.Details["field"] != tc.field {
			t.Errorf("%s: got %s %v, want %s named", tc.name, env.Code, env.Details, tc.field)
		}
	}
	patch(`{"cpu":`, apitest.Unchecked).Fail(t, http.StatusBadRequest)
	if after := mustJSON(t, getJob(t, f.member, j.ID).Requirements); string(after) != string(before) {
		t.Errorf("refused patches changed requirements: %s -> %s", before, after)
	}
	var evs apiv1.JobEventList
	f.member.Get(t, jobPath(j.ID, "/events")).JSON(t, http.StatusOK, &evs)
	n := 0
	for _, e := range evs.Events {
		if e.Kind == "job.requirements_updated" {
			n++
		}
	}
	if n != 3 {
		t.Errorf("got %d job.requirements_updated events, want 3", n)
	}

	// An ended job: 409, and unknown ones 404.
	f.member.Put(t, jobPath(j.ID, "/cancel"), nil).Want(t, http.StatusOK)
	if env := patch(map[string]any{"cpu": 2}, m).Fail(t, http.StatusConflict); env.Code != "job_terminal" {
		t.Errorf("ended job: got code %q, want job_terminal", env.Code)
	}
	f.member.Do(t, apitest.Request{Method: "PATCH", Path: jobPath("job_nope", "/requirements"), Body: map[string]any{"cpu": 2}}).
		Fail(t, http.StatusNotFound)
}
