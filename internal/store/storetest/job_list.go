package storetest

// JobList and the per-project active job count.

import (
	"slices"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

func testJobList(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	p2 := tf.Project(t, s, &tf.ProjectOpts{AccountID: f.AccountID, Name: "p2"})
	bob := tf.Project(t, s, &tf.ProjectOpts{AccountID: tf.Account(t, s, &tf.AccountOpts{Name: "bob"}).ID, Name: "p"})

	// Ten jobs of alice's, one a minute; spec is what varies.
	type spec struct {
		status store.JobStatus
		typ    string
		tags   []string
		other  bool // in project p2
	}
	specs := []spec{
		{store.JobQueued, "structured_runner", []string{"nightly"}, false},
		{store.JobRunning, "sweep", nil, false},
		{store.JobCompleted, "sweep", []string{"nightly", "gpu"}, true},
		{store.JobFailed, "structured_runner", []string{"gpu"}, false},
		{store.JobPlanning, "map_reduce", nil, true},
		{store.JobCancelled, "structured_runner", []string{"nightly"}, false},
		{store.JobRunning, "benchmark", []string{"nightly"}, true},
		{store.JobQueued, "structured_runner", nil, false},
		{store.JobCompleted, "sweep", []string{"gpu"}, false},
		{store.JobQueued, "structured_runner", []string{"nightly"}, true},
	}
	path := map[store.JobStatus][]store.JobStatus{
		store.JobRunning:   {store.JobRunning},
		store.JobCompleted: {store.JobRunning, store.JobCompleted},
		store.JobFailed:    {store.JobRunning, store.JobFailed},
		store.JobCancelled: {store.JobCancelled},
	}
	var all []string // newest first
	for i, sp := range specs {
		p := tf.JobParams(t, s, &tf.JobOpts{Project: f, SubmittedAt: t0.Add(time.Duration(i) * time.Minute)})
		p.Job.Type, p.Job.Tags = sp.typ, sp.tags
		if sp.other {
			p.Job.ProjectID, p.Job.ProjectName = p2.ID, p2.Name
		}
		if sp.status == store.JobPlanning {
			p.Job.Status = store.JobPlanning
		}
		j := tf.JobFrom(t, s, p)
		for _, to := range path[sp.status] {
			mustSetStatus(t, s, j.ID, to, t0.Add(time.Hour))
		}
		all = append([]string{j.ID}, all...)
	}
	// bob's jobs share every attribute and must never show.
	var bobJob string
	for i := range 3 {
		p := tf.JobParams(t, s, &tf.JobOpts{Project: bob, SubmittedAt: t0.Add(time.Duration(i) * time.Minute)})
		p.Job.Tags = []string{"nightly", "gpu"}
		bobJob = tf.JobFrom(t, s, p).ID
	}
	pick := func(idx ...int) []string { // indexes into specs, returned newest first
		var out []string
		for i := len(specs) - 1; i >= 0; i-- {
			if slices.Contains(idx, i) {
				out = append(out, all[len(specs)-1-i])
			}
		}
		return out
	}
	since := t0.Add(6 * time.Minute)
	for _, tc := range []struct {
		name string
		p    store.JobListParams
		want []string
	}{
		{"all", store.JobListParams{}, all},
		{"statuses", store.JobListParams{Statuses: []store.JobStatus{store.JobRunning, store.JobFailed}}, pick(1, 3, 6)},
		{"one status", store.JobListParams{Statuses: []store.JobStatus{store.JobPlanning}}, pick(4)},
		{"project", store.JobListParams{ProjectID: p2.ID}, pick(2, 4, 6, 9)},
		{"type", store.JobListParams{Type: "sweep"}, pick(1, 2, 8)},
		{"tag", store.JobListParams{Tag: "gpu"}, pick(2, 3, 8)},
		{"unknown tag", store.JobListParams{Tag: "nope"}, nil},
		{"since is inclusive", store.JobListParams{Since: &since}, pick(6, 7, 8, 9)},
		{"ids", store.JobListParams{IDs: []string{all[0], all[5], bobJob, "job_nope"}}, []string{all[0], all[5]}},
		{"combined", store.JobListParams{Statuses: []store.JobStatus{store.JobQueued, store.JobRunning}, Tag: "nightly",
			ProjectID: p2.ID, Type: "benchmark"}, pick(6)},
		{"combined with since", store.JobListParams{Tag: "nightly", Since: &since, Statuses: []store.JobStatus{store.JobQueued}}, pick(9)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p
			p.AccountID = f.AccountID
			js, total, err := s.JobList(ctx(t), &p)
			if err != nil {
				t.Fatal(err)
			}
			if got := jobIDs(js); !slices.Equal(got, tc.want) || total != len(tc.want) {
				t.Errorf("got %v (total %d), want %v (total %d)", got, total, tc.want, len(tc.want))
			}
		})
	}
	js, total, _ := s.JobList(ctx(t), &store.JobListParams{AccountID: bob.AccountID})
	if total != 3 || len(js) != 3 || slices.ContainsFunc(js, func(j *store.Job) bool { return j.AccountID != bob.AccountID }) {
		t.Errorf("bob's list = %v, total %d", jobIDs(js), total)
	}

	// Pages cover the list once, in order, with the total on each.
	var paged []string
	for off := 0; off < 12; off += 3 {
		js, total, err := s.JobList(ctx(t), &store.JobListParams{AccountID: f.AccountID, Limit: 3, Offset: off})
		if err != nil || total != 10 {
			t.Fatalf("page at %d: total %d, %v", off, total, err)
		}
		paged = append(paged, jobIDs(js)...)
	}
	if !slices.Equal(paged, all) {
		t.Errorf("pages = %v, want %v", paged, all)
	}
	js, total, _ = s.JobList(ctx(t), &store.JobListParams{AccountID: f.AccountID, Tag: "nightly", Limit: 2, Offset: 1})
	if want := pick(0, 2, 5, 6, 9)[1:3]; !slices.Equal(jobIDs(js), want) || total != 5 {
		t.Errorf("tag page = %v (total %d), want %v (total 5)", jobIDs(js), total, want)
	}

	// Jobs submitted at the same instant are ordered by id, so pages
	// neither repeat nor skip one.
	var ties []string
	for range 5 {
		tp := tf.JobParams(t, s, &tf.JobOpts{Project: f, Tasks: tf.TasksNone, SubmittedAt: t0.Add(time.Hour)})
		tp.Job.ProjectID = "prj_ties"
		ties = append(ties, tf.JobFrom(t, s, tp).ID)
	}
	slices.Sort(ties)
	slices.Reverse(ties)
	var tiePages []string
	for off := 0; off < 5; off += 2 {
		js, _, _ := s.JobList(ctx(t), &store.JobListParams{AccountID: f.AccountID, ProjectID: "prj_ties", Limit: 2, Offset: off})
		tiePages = append(tiePages, jobIDs(js)...)
	}
	if !slices.Equal(tiePages, ties) {
		t.Errorf("pages over equal times = %v, want %v", tiePages, ties)
	}
}

func testProjectActiveJobCount(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	for _, st := range store.JobStatuses {
		reach(t, s, f, st)
	}
	n, err := s.ProjectActiveJobCount(ctx(t), f.ID)
	if err != nil || n != 3 {
		t.Errorf("ProjectActiveJobCount = %d, %v; want 3 (planning, queued, running)", n, err)
	}
	other := tf.Project(t, s, &tf.ProjectOpts{AccountID: f.AccountID, Name: "other"})
	if n, _ := s.ProjectActiveJobCount(ctx(t), other.ID); n != 0 {
		t.Errorf("other project's count = %d, want 0", n)
	}
}
