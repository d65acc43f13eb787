package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

// taskPageTests are the conformance tests of store.TaskPageStore; Run adds
// them to its map.
var taskPageTests = map[string]func(*testing.T, store.Store){
	"TaskListPage":         testTaskListPage,
	"AttemptListForTasks":  testAttemptListForTasks,
	"TaskResultCounts":     testTaskResultCounts,
	"TaskCheckpointCounts": testTaskCheckpointCounts,
}

func pageIndexes(tasks []*store.Task) []int64 {
	out := make([]int64, len(tasks))
	for i, t := range tasks {
		out[i] = t.Index
	}
	return out
}

func testTaskListPage(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	p := tf.JobParams(t, s, &tf.JobOpts{Project: f, Tasks: 25})
	j := tf.JobFrom(t, s, p)
	other := tf.Job(t, s, &tf.JobOpts{Project: f, Tasks: 3, SubmittedAt: t0.Add(time.Second)})

	all, err := s.TaskList(ctx(t), j.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ offset, limit, from, n int }{
		{0, 10, 0, 10},   // first page
		{10, 10, 10, 10}, // a middle page
		{20, 10, 20, 5},  // the last, partial page
		{25, 10, 0, 0},   // offset at the end
		{1000, 10, 0, 0}, // offset past the end
		{3, 1, 3, 1},
		{0, 100, 0, 25},
		{5, 0, 0, 0}, // no limit, no tasks
	} {
		got, err := s.TaskListPage(ctx(t), j.ID, c.offset, c.limit)
		if err != nil {
			t.Fatalf("TaskListPage(%d, %d): %v", c.offset, c.limit, err)
		}
		if len(got) != c.n {
			t.Errorf("TaskListPage(%d, %d) = %v; want %d tasks from %d", c.offset, c.limit, pageIndexes(got), c.n, c.from)
			continue
		}
		for i, task := range got {
			// Every field as TaskList reads it.
			if want := all[c.from+i]; fmt.Sprintf("%+v", *task) != fmt.Sprintf("%+v", *want) {
				t.Errorf("TaskListPage(%d, %d)[%d] = %+v; want %+v", c.offset, c.limit, i, *task, *want)
			}
		}
	}
	if got, err := s.TaskListPage(ctx(t), other.ID, 0, 10); err != nil || len(got) != 3 || got[0].JobID != other.ID {
		t.Errorf("other job's page = %v, %v", pageIndexes(got), err)
	}
	if got, err := s.TaskListPage(ctx(t), "job_nope", 0, 10); err != nil || len(got) != 0 {
		t.Errorf("missing job's page = %v, %v; want empty", got, err)
	}
}

func testAttemptListForTasks(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	j := tf.Job(t, s, &tf.JobOpts{Project: f, Tasks: 4})
	tf.Job(t, s, &tf.JobOpts{Project: f, Tasks: 2, SubmittedAt: t0.Add(time.Second)})
	// Claims take the oldest job's lowest index first: task 0 fails and is
	// claimed again, then tasks 1 and 2 run once; task 3 and the other
	// job's tasks have no attempt.
	now := t0.Add(time.Minute)
	byIdx := map[int64][]string{}
	task, a := tf.Attempt(t, s, &tf.AttemptOpts{HostID: "wkr_a", Now: now})
	byIdx[task.Index] = append(byIdx[task.Index], a.ID)
	mustFinish(t, s, &store.AttemptFinishParams{AttemptID: a.ID, Status: store.AttemptFailed, TerminalKind: "exit",
		RetryDecision: "retry", TaskStatus: store.TaskQueued, RetriesUsed: 1, Now: now})
	for range 3 {
		task, a := tf.Attempt(t, s, &tf.AttemptOpts{HostID: "wkr_a", Now: now.Add(time.Second)})
		byIdx[task.Index] = append(byIdx[task.Index], a.ID)
	}
	if len(byIdx[0]) != 2 || len(byIdx[1]) != 1 || len(byIdx[2]) != 1 {
		t.Fatalf("claims = %v; want task 0 twice, 1 and 2 once", byIdx)
	}
	all, err := s.AttemptList(ctx(t), j.ID)
	if err != nil || len(all) != 4 {
		t.Fatalf("AttemptList = %v, %v", all, err)
	}
	for _, c := range []struct {
		from, to int64
		want     []string
	}{
		{0, 3, []string{byIdx[0][0], byIdx[0][1], byIdx[1][0], byIdx[2][0]}},
		{0, 0, byIdx[0]},
		{1, 2, []string{byIdx[1][0], byIdx[2][0]}},
		{3, 3, nil},
		{2, 1, nil},
		{5, 9, nil},
	} {
		got, err := s.AttemptListForTasks(ctx(t), j.ID, c.from, c.to)
		if err != nil {
			t.Fatalf("AttemptListForTasks(%d, %d): %v", c.from, c.to, err)
		}
		var ids []string
		for _, a := range got {
			ids = append(ids, a.ID)
		}
		if fmt.Sprint(ids) != fmt.Sprint(c.want) {
			t.Errorf("AttemptListForTasks(%d, %d) = %v; want %v", c.from, c.to, ids, c.want)
		}
	}
	// The same rows as AttemptList reads.
	got, _ := s.AttemptListForTasks(ctx(t), j.ID, 0, 3)
	for i := range got {
		if fmt.Sprintf("%+v", *got[i]) != fmt.Sprintf("%+v", *all[i]) {
			t.Errorf("attempt %d = %+v; want %+v", i, *got[i], *all[i])
		}
	}
}

func testTaskResultCounts(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	j := tf.Job(t, s, &tf.JobOpts{Project: f, Tasks: 5})
	if r, o, err := s.TaskResultCounts(ctx(t), j.ID); err != nil || r != 0 || o != 0 {
		t.Errorf("fresh job counts = %d, %d, %v; want 0, 0", r, o, err)
	}
	now := t0.Add(time.Minute)
	// Task 0: result and output; 1: a null result; 2: output only; 3: a
	// failure payload; 4 never runs.
	finish := []store.AttemptFinishParams{
		{Status: store.AttemptSucceeded, TaskStatus: store.TaskSucceeded, Result: []byte(`{"x":1}`), Output: ptr("hi\n")},
		{Status: store.AttemptSucceeded, TaskStatus: store.TaskSucceeded, Result: []byte(`null`)},
		{Status: store.AttemptSucceeded, TaskStatus: store.TaskSucceeded, Output: ptr("only out")},
		{Status: store.AttemptFailed, TaskStatus: store.TaskFailed, Result: []byte(`{"failure_kind":"exit"}`)},
	}
	for i := range finish {
		task, a := tf.Attempt(t, s, &tf.AttemptOpts{HostID: "wkr_a", Now: now})
		if task.Index != int64(i) {
			t.Fatalf("claimed task %d; want %d", task.Index, i)
		}
		p := finish[i]
		p.AttemptID, p.TerminalKind, p.RetryDecision, p.Now = a.ID, "exit", "none", now
		mustFinish(t, s, &p)
	}
	if r, o, err := s.TaskResultCounts(ctx(t), j.ID); err != nil || r != 2 || o != 2 {
		t.Errorf("counts = %d results, %d outputs, %v; want 2, 2", r, o, err)
	}
	if r, o, err := s.TaskResultCounts(ctx(t), "job_nope"); err != nil || r != 0 || o != 0 {
		t.Errorf("missing job's counts = %d, %d, %v; want 0, 0", r, o, err)
	}
}

func testTaskCheckpointCounts(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	j := tf.Job(t, s, &tf.JobOpts{Project: f, Tasks: 7})
	if c, err := s.TaskCheckpointCounts(ctx(t), j.ID); err != nil || c != (store.CheckpointCounts{}) {
		t.Errorf("fresh job counts = %+v, %v; want none", c, err)
	}
	now := t0.Add(time.Minute)
	// One checkpoint each: pending, published, failed, an object without
	// an artifact, a number, a publish_status only nested (not counted);
	// task 6 has none.
	cps := []string{`{"artifact_path":"a","publish_status":"pending"}`, `{"artifact_id":"art_x","publish_status":"published"}`,
		`{"publish_status":"failed"}`, `{"step":3}`, `42`, `{"inner":{"publish_status":"published"}}`}
	for i, cp := range cps {
		task, a := tf.Attempt(t, s, &tf.AttemptOpts{HostID: "wkr_a", Now: now})
		if task.Index != int64(i) {
			t.Fatalf("claimed task %d; want %d", task.Index, i)
		}
		if err := s.TaskSetProgress(ctx(t), &store.TaskSetProgressParams{TaskID: task.ID, Checkpoint: []byte(cp), Now: now}); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			if err := s.TaskSetResumeState(ctx(t), task.ID, []byte(`{"attempt_number":2}`)); err != nil {
				t.Fatal(err)
			}
		}
		mustFinish(t, s, &store.AttemptFinishParams{AttemptID: a.ID, Status: store.AttemptSucceeded, TaskStatus: store.TaskSucceeded,
			TerminalKind: "exit", RetryDecision: "none", Now: now})
	}
	want := store.CheckpointCounts{Checkpointed: 6, Resumed: 2, Pending: 1, Published: 1, Failed: 1}
	if c, err := s.TaskCheckpointCounts(ctx(t), j.ID); err != nil || c != want {
		t.Errorf("counts = %+v, %v; want %+v", c, err, want)
	}
	if c, err := s.TaskCheckpointCounts(ctx(t), "job_nope"); err != nil || c != (store.CheckpointCounts{}) {
		t.Errorf("missing job's counts = %+v, %v; want none", c, err)
	}
}
