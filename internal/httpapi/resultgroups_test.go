package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
)

// groupSummary is a group reduced to what the test compares.
func groupSummary(g apiv1.ResultGroup) string {
	key := "<null>"
	if g.Key != nil {
		key = *g.Key
	}
	last := "-"
	if g.LastCompletedAt != nil {
		last = g.LastCompletedAt.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("%s n=%d %v $%s first=%s last=%s", key, g.Count, g.StatusCounts, g.CostUSD,
		g.FirstSubmittedAt.UTC().Format(time.RFC3339), last)
}

// group_by groups every job the other filters select, whatever the page,
// with counts per status, the metered cost and the first and last times.
func testResultGroups(t *testing.T, f *fixture) {
	c := f.member
	c.Post(t, "/api/v1/projects", map[string]any{"name": "beta"}).Want(t, http.StatusCreated)
	publish(t, f, "beta")
	at := func(j *apiv1.Job) string { return j.SubmittedAt.UTC().Format(time.RFC3339) }
	done := func(id string) string {
		return getJob(t, c, id).CompletedAt.UTC().Format(time.RFC3339)
	}

	a := submitJob(t, c, map[string]any{"client_ref": "r1", "tags": []string{"x", "y"}})
	runJobMetered(t, f, a.ID, false, 1_500_000)
	f.e.Clock.Advance(time.Minute)
	b := submitJob(t, c, map[string]any{"client_ref": "r2", "tags": []string{"x"}})
	runJobMetered(t, f, b.ID, true, 250)
	f.e.Clock.Advance(time.Minute)
	e := submitJob(t, c, map[string]any{"project": "beta"})
	runJob(t, f, e.ID, false)
	f.e.Clock.Advance(time.Minute)
	d := submitJob(t, c, map[string]any{"type": "sweep", "parameters": map[string]any{"lr": []float64{0.1, 0.2}}, "rank_by": "loss"})
	c.Put(t, jobPath(d.ID, "/cancel"), nil).Want(t, http.StatusOK)
	f.e.Clock.Advance(time.Minute)
	q := submitJob(t, c, map[string]any{"client_ref": "r1"})

	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"?group_by=status", []string{
			fmt.Sprintf("cancelled n=1 map[cancelled:1] $0 first=%s last=%s", at(d), done(d.ID)),
			fmt.Sprintf("completed n=2 map[completed:2] $1.5 first=%s last=%s", at(a), done(e.ID)),
			fmt.Sprintf("failed n=1 map[failed:1] $0.00025 first=%s last=%s", at(b), done(b.ID)),
		}},
		// The page is one job; the groups still count all four.
		{"?group_by=project&limit=1", []string{
			fmt.Sprintf("alpha n=3 map[cancelled:1 completed:1 failed:1] $1.50025 first=%s last=%s", at(a), done(d.ID)),
			fmt.Sprintf("beta n=1 map[completed:1] $0 first=%s last=%s", at(e), done(e.ID)),
		}},
		{"?group_by=tag", []string{
			fmt.Sprintf("x n=2 map[completed:1 failed:1] $1.50025 first=%s last=%s", at(a), done(b.ID)),
			fmt.Sprintf("y n=1 map[completed:1] $1.5 first=%s last=%s", at(a), done(a.ID)),
			fmt.Sprintf("<null> n=2 map[cancelled:1 completed:1] $0 first=%s last=%s", at(e), done(d.ID)),
		}},
		{"?group_by=type", []string{
			fmt.Sprintf("structured_runner n=3 map[completed:2 failed:1] $1.50025 first=%s last=%s", at(a), done(e.ID)),
			fmt.Sprintf("sweep n=1 map[cancelled:1] $0 first=%s last=%s", at(d), done(d.ID)),
		}},
		// Other filters narrow the groups; a queued job has no completion.
		{"?group_by=client_ref&status=queued,completed", []string{
			fmt.Sprintf("r1 n=2 map[completed:1 queued:1] $1.5 first=%s last=%s", at(a), done(a.ID)),
			fmt.Sprintf("<null> n=1 map[completed:1] $0 first=%s last=%s", at(e), done(e.ID)),
		}},
		{"?group_by=client_ref&status=queued", []string{
			fmt.Sprintf("r1 n=1 map[queued:1] $0 first=%s last=-", at(q)),
		}},
		{"?group_by=tag&tag=y", []string{
			fmt.Sprintf("x n=1 map[completed:1] $1.5 first=%s last=%s", at(a), done(a.ID)),
			fmt.Sprintf("y n=1 map[completed:1] $1.5 first=%s last=%s", at(a), done(a.ID)),
		}},
		{"?group_by=status&project=nope", []string{}},
	} {
		var l apiv1.ResultList
		c.Get(t, "/api/v1/results"+tc.query).JSON(t, http.StatusOK, &l)
		if l.GroupBy == nil || l.Groups == nil {
			t.Errorf("results%s: got no group_by or groups", tc.query)
			continue
		}
		got := []string{}
		for _, g := range *l.Groups {
			got = append(got, groupSummary(g))
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("results%s:\n got %q\nwant %q", tc.query, got, tc.want)
		}
	}

	// Without group_by the answer has neither field.
	r := c.Get(t, "/api/v1/results")
	var raw map[string]any
	r.JSON(t, http.StatusOK, &raw)
	if _, ok := raw["groups"]; ok {
		t.Errorf("results without group_by: got groups %v", raw["groups"])
	}
}
