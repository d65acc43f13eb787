package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

// testAttemptTransitions walks the attempt transition table pair by pair:
// an attempt is brought to each status, then each move is tried with the
// store method that makes it (AttemptStart to running, AttemptFinish to an
// end); the store makes exactly the moves the table allows, and a refused
// move changes nothing. Assigned is a birth status (TaskClaim) that no move
// reaches.
func testAttemptTransitions(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	now := t0
	for _, from := range store.AttemptStatuses {
		for _, to := range store.AttemptStatuses[1:] {
			now = now.Add(time.Minute)
			j := tf.Job(t, s, &tf.JobOpts{Project: f, SubmittedAt: now})
			_, a := tf.Attempt(t, s, &tf.AttemptOpts{HostID: "wkr_walk", Now: now})
			if a.JobID != j.ID {
				t.Fatalf("claimed a task of %s, want %s", a.JobID, j.ID)
			}
			if from != store.AttemptAssigned {
				if err := s.AttemptStart(ctx(t), a.ID, now); err != nil {
					t.Fatal(err)
				}
			}
			if !from.IsOpen() {
				mustFinish(t, s, &store.AttemptFinishParams{AttemptID: a.ID, Status: from, TaskStatus: store.TaskQueued, Now: now})
			}
			before, err := s.AttemptGet(ctx(t), a.ID)
			if err != nil || before.Status != from {
				t.Fatalf("reached %v (%v), want %s", before, err, from)
			}
			later := now.Add(time.Second)
			if to == store.AttemptRunning {
				err = s.AttemptStart(ctx(t), a.ID, later)
			} else {
				_, err = s.AttemptFinish(ctx(t), &store.AttemptFinishParams{AttemptID: a.ID, Status: to, TaskStatus: store.TaskQueued, Now: later})
			}
			after, gerr := s.AttemptGet(ctx(t), a.ID)
			if gerr != nil {
				t.Fatal(gerr)
			}
			if from.CanTransition(to) {
				if err != nil || after.Status != to {
					t.Errorf("attempt %s -> %s: got %s, %v; want it allowed", from, to, after.Status, err)
				}
			} else {
				if !errors.Is(err, store.ErrConflict) {
					t.Errorf("attempt %s -> %s: got error %v, want ErrConflict", from, to, err)
				}
				if after.Status != from || !after.UpdatedAt.Equal(before.UpdatedAt) {
					t.Errorf("attempt %s -> %s refused but the attempt changed: %+v", from, to, after)
				}
			}
			// Leave nothing queued for the next claim.
			if _, err := s.TaskCancelOpen(ctx(t), j.ID, later); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// testTaskTransitions walks the task transition table pair by pair with
// the store methods that move tasks: TaskClaim (to running), AttemptFinish
// of the task's open attempt (to queued, succeeded or failed; a task that
// is not running has none) and TaskCancelOpen (to cancelled).
func testTaskTransitions(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	now := t0
	for _, from := range store.TaskStatuses {
		for _, to := range store.TaskStatuses {
			now = now.Add(time.Minute)
			j := tf.Job(t, s, &tf.JobOpts{Project: f, SubmittedAt: now})
			tasks, err := s.TaskList(ctx(t), j.ID)
			if err != nil {
				t.Fatal(err)
			}
			taskID := tasks[0].ID
			var open string // the task's open attempt, if any
			switch from {
			case store.TaskQueued:
			case store.TaskCancelled:
				if _, err := s.TaskCancelOpen(ctx(t), j.ID, now); err != nil {
					t.Fatal(err)
				}
			default:
				_, a := tf.Attempt(t, s, &tf.AttemptOpts{HostID: "wkr_walk", Now: now})
				open = a.ID
				if from != store.TaskRunning {
					mustFinish(t, s, &store.AttemptFinishParams{AttemptID: a.ID, Status: store.AttemptSucceeded, TaskStatus: from, Now: now})
					open = ""
				}
			}
			before := mustTask(t, s, taskID)
			if before.Status != from {
				t.Fatalf("reached %s, want %s", before.Status, from)
			}
			later := now.Add(time.Second)
			switch to {
			case store.TaskRunning:
				var claimed *store.Task
				claimed, _, err = s.TaskClaim(ctx(t), &store.TaskClaimParams{HostID: "wkr_walk", AttemptID: "att_walk" + later.Format("150405"), Now: later})
				if err == nil && claimed.ID != taskID {
					t.Fatalf("claimed %s, want %s", claimed.ID, taskID)
				}
				if errors.Is(err, store.ErrNotFound) {
					err = store.ErrConflict // nothing to claim: the move is refused
				}
			case store.TaskCancelled:
				// A bulk cancel of the job's open tasks: a task it did not
				// touch was refused the move.
				_, err = s.TaskCancelOpen(ctx(t), j.ID, later)
				if err == nil && mustTask(t, s, taskID).UpdatedAt.Equal(before.UpdatedAt) {
					err = store.ErrConflict
				}
			default:
				status := store.AttemptSucceeded
				if to != store.TaskSucceeded {
					status = store.AttemptFailed
				}
				attempt := open
				if attempt == "" {
					attempt = "att_none" // the task has no open attempt to end
				}
				_, err = s.AttemptFinish(ctx(t), &store.AttemptFinishParams{AttemptID: attempt, Status: status, TaskStatus: to, Now: later})
				if errors.Is(err, store.ErrNotFound) {
					err = store.ErrConflict
				}
			}
			after := mustTask(t, s, taskID)
			if from.CanTransition(to) {
				if err != nil || after.Status != to {
					t.Errorf("task %s -> %s: got %s, %v; want it allowed", from, to, after.Status, err)
				}
			} else {
				if !errors.Is(err, store.ErrConflict) {
					t.Errorf("task %s -> %s: got error %v, want a refusal", from, to, err)
				}
				if after.Status != from || !after.UpdatedAt.Equal(before.UpdatedAt) {
					t.Errorf("task %s -> %s refused but the task changed: %s at %s", from, to, after.Status, after.UpdatedAt)
				}
			}
			if _, err := s.TaskCancelOpen(ctx(t), j.ID, later); err != nil {
				t.Fatal(err)
			}
		}
	}
}
