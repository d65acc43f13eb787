package storetest

// JobSetStatus: the job transition table and the fields a move sets.

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

// reach creates a job and walks it to status st along allowed transitions.
func reach(t *testing.T, s store.Store, f *store.Project, st store.JobStatus) *store.Job {
	t.Helper()
	p := tf.JobParams(t, s, &tf.JobOpts{Project: f})
	if st == store.JobPlanning {
		p.Job.Status = store.JobPlanning
	}
	j := tf.JobFrom(t, s, p)
	var path []store.JobStatus
	switch st {
	case store.JobRunning:
		path = []store.JobStatus{store.JobRunning}
	case store.JobCompleted, store.JobPartial, store.JobFailed:
		path = []store.JobStatus{store.JobRunning, st}
	case store.JobCancelled:
		path = []store.JobStatus{store.JobCancelled}
	}
	for _, to := range path {
		j = mustSetStatus(t, s, j.ID, to, t0.Add(time.Minute))
	}
	if j.Status != st {
		t.Fatalf("reached %s, want %s", j.Status, st)
	}
	return j
}

// testJobTransitions walks the transition table pair by pair: the store
// makes exactly the moves the table allows.
func testJobTransitions(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	for _, from := range store.JobStatuses {
		for _, to := range store.JobStatuses {
			j := reach(t, s, f, from)
			got, err := s.JobSetStatus(ctx(t), &store.JobSetStatusParams{ID: j.ID, From: []store.JobStatus{from}, To: to,
				Now: t0.Add(time.Hour)})
			if from.CanTransition(to) {
				if err != nil || got.Status != to {
					t.Errorf("%s -> %s: got %v, %v; want it allowed", from, to, got, err)
				}
				continue
			}
			if !errors.Is(err, store.ErrConflict) {
				t.Errorf("%s -> %s: got error %v, want ErrConflict", from, to, err)
			}
			if now, _ := s.JobGetByID(ctx(t), j.ID); now.Status != from || !now.UpdatedAt.Equal(j.UpdatedAt) {
				t.Errorf("%s -> %s refused but the job changed: %+v", from, to, now)
			}
		}
	}

	// From must name the status the job is in.
	j := reach(t, s, f, store.JobQueued)
	_, err := s.JobSetStatus(ctx(t), &store.JobSetStatusParams{ID: j.ID, From: []store.JobStatus{store.JobPlanning},
		To: store.JobCancelled, Now: t0})
	wantErr(t, err, store.ErrConflict)
	// From may list several; nil means any status the table allows.
	got, err := s.JobSetStatus(ctx(t), &store.JobSetStatusParams{ID: j.ID,
		From: []store.JobStatus{store.JobPlanning, store.JobQueued}, To: store.JobCancelled, Now: t0})
	if err != nil || got.Status != store.JobCancelled {
		t.Errorf("cancel from [planning queued] = %v, %v", got, err)
	}
	j = reach(t, s, f, store.JobRunning)
	if got := mustSetStatus(t, s, j.ID, store.JobPartial, t0); got.Status != store.JobPartial {
		t.Errorf("running -> partial with nil From = %s", got.Status)
	}
	_, err = s.JobSetStatus(ctx(t), &store.JobSetStatusParams{ID: j.ID, To: store.JobCancelled, Now: t0})
	wantErr(t, err, store.ErrConflict)

	// A job that does not exist is not found, allowed move or not.
	_, err = s.JobSetStatus(ctx(t), &store.JobSetStatusParams{ID: "job_nope", To: store.JobCancelled, Now: t0})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.JobSetStatus(ctx(t), &store.JobSetStatusParams{ID: "job_nope", From: []store.JobStatus{store.JobCompleted},
		To: store.JobRunning, Now: t0})
	wantErr(t, err, store.ErrNotFound)
}

func testJobSetStatusFields(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	p := tf.JobParams(t, s, &tf.JobOpts{Project: f})
	p.Job.Summary = json.RawMessage(`{"billing_estimate":1}`)
	j := tf.JobFrom(t, s, p)
	t1, t2, t3 := t0.Add(time.Second), t0.Add(2*time.Second), t0.Add(3*time.Second)
	j = mustSetStatus(t, s, j.ID, store.JobRunning, t1)
	if !j.StartedAt.Equal(t1) || !j.UpdatedAt.Equal(t1) || j.FinishedAt != nil || string(j.Summary) != `{"billing_estimate":1}` {
		t.Errorf("running job = %+v", j)
	}
	j, err := s.JobSetStatus(ctx(t), &store.JobSetStatusParams{ID: j.ID, From: []store.JobStatus{store.JobRunning},
		To: store.JobFailed, Error: "task 0 exited 1", RecommendedAction: "read the task output",
		Summary: json.RawMessage(`{"failed":1}`), Now: t2})
	if err != nil {
		t.Fatal(err)
	}
	if !j.StartedAt.Equal(t1) || !j.FinishedAt.Equal(t2) || !j.UpdatedAt.Equal(t2) || j.Error != "task 0 exited 1" ||
		j.RecommendedAction != "read the task output" || string(j.Summary) != `{"failed":1}` {
		t.Errorf("failed job = %+v", j)
	}

	// A job cancelled before it ran never started.
	p = tf.JobParams(t, s, &tf.JobOpts{Project: f})
	p.Job.Status = store.JobPlanning
	c := tf.JobFrom(t, s, p)
	c = mustSetStatus(t, s, c.ID, store.JobCancelled, t3)
	if c.StartedAt != nil || !c.FinishedAt.Equal(t3) || c.Error != "" {
		t.Errorf("cancelled job = %+v", c)
	}
	if got, _ := s.JobGet(ctx(t), f.AccountID, c.ID); !reflect.DeepEqual(got, c) {
		t.Errorf("JobGet after the move = %+v, want %+v", got, c)
	}
}
