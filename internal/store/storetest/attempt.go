package storetest

// Attempts: their lifecycle and the cancel of a job's open tasks.

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

func testAttemptLifecycle(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	p := tf.JobParams(t, s, &tf.JobOpts{Project: f})
	tf.JobFrom(t, s, p)
	taskID := p.Tasks[0].ID
	t1 := t0.Add(time.Second)
	_, a1 := tf.Attempt(t, s, &tf.AttemptOpts{HostID: "wkr_a", Now: t1})

	open, err := s.AttemptListOpen(ctx(t), "")
	if err != nil || len(open) != 1 || open[0].ID != a1.ID {
		t.Fatalf("AttemptListOpen = %v, %v", open, err)
	}
	if open, _ := s.AttemptListOpen(ctx(t), "wkr_a"); len(open) != 1 {
		t.Errorf("open on wkr_a = %v", open)
	}
	if open, _ := s.AttemptListOpen(ctx(t), "wkr_b"); len(open) != 0 {
		t.Errorf("open on wkr_b = %v", open)
	}

	// Progress is taken only while the task runs.
	wantErr(t, s.TaskSetProgress(ctx(t), &store.TaskSetProgressParams{TaskID: "tsk_nope", Now: t1}), store.ErrNotFound)
	t2 := t0.Add(2 * time.Second)
	if err := s.AttemptStart(ctx(t), a1.ID, t2); err != nil {
		t.Fatal(err)
	}
	wantErr(t, s.AttemptStart(ctx(t), a1.ID, t2), store.ErrConflict)
	wantErr(t, s.AttemptStart(ctx(t), "att_nope", t2), store.ErrNotFound)
	if err := s.TaskSetProgress(ctx(t), &store.TaskSetProgressParams{TaskID: taskID,
		Progress: json.RawMessage(`{"pct":50}`), Output: ptr("line 1\n"), Now: t2}); err != nil {
		t.Fatal(err)
	}
	if err := s.TaskSetProgress(ctx(t), &store.TaskSetProgressParams{TaskID: taskID, Now: t2}); err != nil {
		t.Fatal(err)
	}
	if task := mustTask(t, s, taskID); string(task.LatestProgress) != `{"pct":50}` || task.Output != "line 1\n" {
		t.Errorf("task after progress = %+v", task)
	}

	// A failed run requeues the task and keeps its output for the next.
	t3 := t0.Add(3 * time.Second)
	fin := mustFinish(t, s, &store.AttemptFinishParams{AttemptID: a1.ID, Status: store.AttemptFailed, TerminalKind: "exit",
		RetryDecision: "retry", ExitCode: ptr(int64(1)), TaskStatus: store.TaskQueued, RetriesUsed: 1,
		Output: ptr("out 1"), ErrorText: ptr("err 1"), Now: t3})
	if fin.Status != store.AttemptFailed || !fin.EndedAt.Equal(t3) || !fin.StartedAt.Equal(t2) || *fin.ExitCode != 1 ||
		fin.TerminalKind != "exit" || fin.RetryDecision != "retry" || !fin.UpdatedAt.Equal(t3) {
		t.Errorf("finished attempt = %+v", fin)
	}
	task := mustTask(t, s, taskID)
	if task.Status != store.TaskQueued || task.RetriesUsed != 1 || task.Output != "out 1" || task.ErrorText != "err 1" ||
		*task.ExitCode != 1 || task.CompletedAt != nil || !task.StartedAt.Equal(t1) || task.Attempts != 1 {
		t.Errorf("requeued task = %+v", task)
	}
	_, err = s.AttemptFinish(ctx(t), &store.AttemptFinishParams{AttemptID: a1.ID, Status: store.AttemptSucceeded,
		TaskStatus: store.TaskSucceeded, Now: t3})
	wantErr(t, err, store.ErrConflict)
	_, err = s.AttemptFinish(ctx(t), &store.AttemptFinishParams{AttemptID: "att_nope", Status: store.AttemptSucceeded,
		TaskStatus: store.TaskSucceeded, Now: t3})
	wantErr(t, err, store.ErrNotFound)
	if again := mustTask(t, s, taskID); !reflect.DeepEqual(again, task) {
		t.Errorf("refused finish changed the task: %+v", again)
	}
	wantErr(t, s.TaskSetProgress(ctx(t), &store.TaskSetProgressParams{TaskID: taskID, Output: ptr("late"), Now: t3}), store.ErrConflict)
	wantErr(t, s.AttemptStart(ctx(t), a1.ID, t3), store.ErrConflict)

	// The second attempt is lost before it starts: a free requeue that keeps
	// the last exit code.
	t4 := t0.Add(4 * time.Second)
	task, a2 := tf.Attempt(t, s, &tf.AttemptOpts{HostID: "wkr_b", Now: t4})
	if a2.Number != 2 || task.Attempts != 2 || task.LastHostID != "wkr_b" || !task.StartedAt.Equal(t1) {
		t.Errorf("second claim: task %+v attempt %+v", task, a2)
	}
	mustFinish(t, s, &store.AttemptFinishParams{AttemptID: a2.ID, Status: store.AttemptLost, TerminalKind: "lost",
		RetryDecision: "requeue_free", TaskStatus: store.TaskQueued, RetriesUsed: 1, InfraRequeues: 1, Now: t4})
	task = mustTask(t, s, taskID)
	if task.Status != store.TaskQueued || task.InfraRequeues != 1 || *task.ExitCode != 1 || task.Output != "out 1" {
		t.Errorf("task after a lost attempt = %+v", task)
	}

	// The third succeeds.
	t5 := t0.Add(5 * time.Second)
	_, a3 := tf.Attempt(t, s, &tf.AttemptOpts{HostID: "wkr_c", Now: t5})
	if err := s.AttemptStart(ctx(t), a3.ID, t5); err != nil {
		t.Fatal(err)
	}
	mustFinish(t, s, &store.AttemptFinishParams{AttemptID: a3.ID, Status: store.AttemptSucceeded, TerminalKind: "exit",
		RetryDecision: "none", ExitCode: ptr(int64(0)), TaskStatus: store.TaskSucceeded, Result: json.RawMessage(`{"v":1}`),
		Output: ptr("final"), RetriesUsed: 1, InfraRequeues: 1, DeclaredInfra: 0, Now: t5})
	task = mustTask(t, s, taskID)
	if task.Status != store.TaskSucceeded || !task.CompletedAt.Equal(t5) || string(task.Result) != `{"v":1}` ||
		*task.ExitCode != 0 || task.Output != "final" || task.ErrorText != "err 1" || task.Attempts != 3 {
		t.Errorf("succeeded task = %+v", task)
	}
	atts, err := s.AttemptList(ctx(t), p.Job.ID)
	if err != nil || len(atts) != 3 || atts[0].ID != a1.ID || atts[1].ID != a2.ID || atts[2].ID != a3.ID {
		t.Fatalf("AttemptList = %v, %v", atts, err)
	}
	if atts[1].Status != store.AttemptLost || atts[1].StartedAt != nil || !atts[1].EndedAt.Equal(t4) {
		t.Errorf("lost attempt = %+v", atts[1])
	}
	if open, _ := s.AttemptListOpen(ctx(t), ""); len(open) != 0 {
		t.Errorf("open attempts after the end = %v", open)
	}
	if counts, _ := s.TaskCountByStatus(ctx(t), p.Job.ID); !reflect.DeepEqual(counts, map[store.TaskStatus]int64{store.TaskSucceeded: 1}) {
		t.Errorf("counts = %v", counts)
	}

	// Malformed finishes are refused before they touch anything.
	for _, bad := range []*store.AttemptFinishParams{
		{AttemptID: a3.ID, Status: store.AttemptRunning, TaskStatus: store.TaskSucceeded, Now: t5},
		{AttemptID: a3.ID, Status: store.AttemptSucceeded, TaskStatus: store.TaskRunning, Now: t5},
	} {
		if _, err := s.AttemptFinish(ctx(t), bad); err == nil {
			t.Errorf("AttemptFinish(%s, task %s) succeeded", bad.Status, bad.TaskStatus)
		}
	}
}

func testTaskCancelOpen(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	p := tf.JobParams(t, s, &tf.JobOpts{Project: f, Tasks: 4})
	tf.JobFrom(t, s, p)
	other := tf.JobParams(t, s, &tf.JobOpts{Project: f, SubmittedAt: t0.Add(time.Hour)})
	tf.JobFrom(t, s, other)
	t1 := t0.Add(time.Second)
	_, a0 := tf.Attempt(t, s, &tf.AttemptOpts{HostID: "wkr_a", Now: t1}) // task 0: assigned
	_, a1 := tf.Attempt(t, s, &tf.AttemptOpts{HostID: "wkr_a", Now: t1}) // task 1: running
	if err := s.AttemptStart(ctx(t), a1.ID, t1); err != nil {
		t.Fatal(err)
	}
	_, a2 := tf.Attempt(t, s, &tf.AttemptOpts{HostID: "wkr_b", Now: t1}) // task 2: succeeded
	mustFinish(t, s, &store.AttemptFinishParams{AttemptID: a2.ID, Status: store.AttemptSucceeded, TerminalKind: "exit",
		ExitCode: ptr(int64(0)), TaskStatus: store.TaskSucceeded, Now: t1})
	_, a3 := tf.Attempt(t, s, &tf.AttemptOpts{HostID: "wkr_b", Now: t1}) // task 3: back in the queue after an out-of-memory kill
	mustFinish(t, s, &store.AttemptFinishParams{AttemptID: a3.ID, Status: store.AttemptInfra, TerminalKind: "oom",
		ExitCode: ptr(int64(137)), TaskStatus: store.TaskQueued, InfraRequeues: 1, Now: t1})

	t2 := t0.Add(2 * time.Second)
	ids, err := s.TaskCancelOpen(ctx(t), p.Job.ID, t2)
	want := []string{a0.ID, a1.ID}
	slices.Sort(want)
	if err != nil || !slices.Equal(ids, want) {
		t.Fatalf("TaskCancelOpen = %v, %v; want %v", ids, err, want)
	}
	tasks, _ := s.TaskList(ctx(t), p.Job.ID)
	for i, task := range tasks {
		if i == 2 {
			if task.Status != store.TaskSucceeded || !task.CompletedAt.Equal(t1) {
				t.Errorf("finished task was touched: %+v", task)
			}
			continue
		}
		if task.Status != store.TaskCancelled || !task.CompletedAt.Equal(t2) {
			t.Errorf("task %d = %+v, want cancelled at %v", i, task, t2)
		}
	}
	atts, _ := s.AttemptList(ctx(t), p.Job.ID)
	// By task index, then number: tasks 0, 1, 2, 3.
	if got := []string{atts[0].ID, atts[1].ID, atts[2].ID, atts[3].ID}; !slices.Equal(got, []string{a0.ID, a1.ID, a2.ID, a3.ID}) {
		t.Errorf("AttemptList order = %v", got)
	}
	for _, a := range atts {
		switch a.ID {
		case a0.ID, a1.ID:
			if a.Status != store.AttemptCancelled || a.TerminalKind != "cancelled" || !a.EndedAt.Equal(t2) {
				t.Errorf("open attempt after cancel = %+v", a)
			}
		case a2.ID:
			if a.Status != store.AttemptSucceeded {
				t.Errorf("ended attempt was touched: %+v", a)
			}
		}
	}
	ids, err = s.TaskCancelOpen(ctx(t), p.Job.ID, t2)
	if err != nil || len(ids) != 0 {
		t.Errorf("second TaskCancelOpen = %v, %v; want nothing", ids, err)
	}
	_, err = s.AttemptFinish(ctx(t), &store.AttemptFinishParams{AttemptID: a1.ID, Status: store.AttemptSucceeded,
		TaskStatus: store.TaskSucceeded, Now: t2})
	wantErr(t, err, store.ErrConflict)
	if task := mustTask(t, s, other.Tasks[0].ID); task.Status != store.TaskQueued {
		t.Errorf("another job's task was cancelled: %+v", task)
	}
	if open, _ := s.AttemptListOpen(ctx(t), ""); len(open) != 0 {
		t.Errorf("open attempts after cancel = %v", open)
	}
}
