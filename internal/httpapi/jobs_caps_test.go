package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
)

// The submission bodies hold what the spec's own limits allow: one job of
// 10,000 tasks from a fan_out.items list, a batch of 200 jobs of 100 KB;
// past the caps the answers say what to do, and nothing is admitted.
func testJobBodyCaps(t *testing.T, f *fixture) {
	// 10,000 items of about 1.2 KB: a 12 MB body, past the 1 MiB every
	// other JSON body gets.
	note := strings.Repeat("n", 1200)
	items := make([]map[string]any, 10_000)
	for i := range items {
		items[i] = map[string]any{"i": i, "note": note}
	}
	j := submitJob(t, f.member, map[string]any{"fan_out": map[string]any{"items": items}})
	if j.TaskCount != 10_000 {
		t.Errorf("a 10,000-item fan-out admitted %d tasks", j.TaskCount)
	}

	// 200 jobs of 100 KB each: a 20 MB batch.
	big := strings.Repeat("b", 100<<10)
	jobs := make([]any, 200)
	for i := range jobs {
		jobs[i] = map[string]any{"project": fixtureProject, "runner_command": []string{"/r"}, "payload": map[string]any{"i": i, "blob": big}}
	}
	var batch apiv1.JobBatchResult
	f.member.Post(t, "/api/v1/jobs/batch", map[string]any{"jobs": jobs}).JSON(t, http.StatusCreated, &batch)
	if batch.Submitted != 200 || batch.ErrorCount != 0 {
		t.Errorf("a 20 MB batch of 200 jobs: submitted %d, %d errors", batch.Submitted, batch.ErrorCount)
	}

	before := f.state(t)
	// Over the body caps: 413 before anything is decoded.
	for path, size := range map[string]int{"/api/v1/jobs": 16<<20 + 1, "/api/v1/jobs/batch": 32<<20 + 1} {
		body := `{"project":"` + fixtureProject + `","payload":{"x":"` + strings.Repeat("x", size) + `"}}`
		env := f.member.Do(t, apitest.Request{Method: "POST", Path: path, Body: body, Check: apitest.Unchecked}).
			Fail(t, http.StatusRequestEntityTooLarge)
		if env.Code != "body_too_large" || !strings.Contains(env.RecommendedAction, "MiB") {
			t.Errorf("POST %s of %d bytes: got %q (%s), want body_too_large naming the cap", path, size, env.Code, env.RecommendedAction)
		}
	}
	// A payload over 8 MiB, and a small payload that would expand past
	// 64 MiB: 422 payload_too_large pointing at artifacts.
	for name, c := range map[string]struct {
		body  map[string]any
		field string
	}{
		"9 MiB payload": {map[string]any{"payload": map[string]any{"x": strings.Repeat("x", 9<<20)}}, "payload"},
		"1 MiB x 100 chunks": {map[string]any{"payload": map[string]any{"x": strings.Repeat("x", 1<<20)},
			"fan_out": map[string]any{"chunks": 100, "total": 100}}, "fan_out"},
	} {
		b := map[string]any{"project": fixtureProject, "runner_command": []string{"/r"}}
		for k, v := range c.body {
			b[k] = v
		}
		env := f.member.Post(t, "/api/v1/jobs", b).Fail(t, http.StatusUnprocessableEntity)
		fields, _ := env.Details["fields"].(map[string]any)
		if env.Code != "payload_too_large" || fields[c.field] == nil || !strings.Contains(env.RecommendedAction, "artifact") {
			t.Errorf("%s: got %q fields %v (%s), want payload_too_large on %s pointing at artifacts", name, env.Code, fields, env.RecommendedAction, c.field)
		}
	}
	f.unchanged(t, before, "submissions past the caps")
}
