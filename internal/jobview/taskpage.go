package jobview

import (
	"context"
	"fmt"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/store"
)

// TaskPage lists at most limit of a job's tasks in index order, from the
// offset-th, with their attempts: two indexed queries however many tasks
// the job has.
func (s *Service) TaskPage(ctx context.Context, j *store.Job, offset, limit int) ([]*store.Task, map[string][]*store.Attempt, error) {
	tasks, err := s.TaskRowsPage(ctx, j, offset, limit)
	if err != nil {
		return nil, nil, err
	}
	byTask := map[string][]*store.Attempt{}
	if len(tasks) == 0 {
		return tasks, byTask, nil
	}
	attempts, err := s.store.AttemptListForTasks(ctx, j.ID, tasks[0].Index, tasks[len(tasks)-1].Index)
	if err != nil {
		return nil, nil, fmt.Errorf("list attempts: %w", err)
	}
	for _, a := range attempts {
		byTask[a.TaskID] = append(byTask[a.TaskID], a)
	}
	return tasks, byTask, nil
}

// TaskRowsPage is TaskPage without the attempts.
func (s *Service) TaskRowsPage(ctx context.Context, j *store.Job, offset, limit int) ([]*store.Task, error) {
	tasks, err := s.store.TaskListPage(ctx, j.ID, offset, limit)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return tasks, nil
}

// ResultCounts counts the job's tasks with a result (HasResult) and with
// stdout, in the store.
func (s *Service) ResultCounts(ctx context.Context, j *store.Job) (results, outputs int, err error) {
	r, o, err := s.store.TaskResultCounts(ctx, j.ID)
	if err != nil {
		return 0, 0, fmt.Errorf("count results: %w", err)
	}
	return int(r), int(o), nil
}

// outputPage is how many tasks Output reads at a time.
const outputPage = 500

// Output is GET /jobs/:id/output read a page of tasks at a time, so that a
// 10,000-task job never has all its outputs in memory: stdout from the
// first tasks until MaxJobOutputBytes is passed, and the error of the last
// task that has one, looked for from the end.
func (s *Service) Output(ctx context.Context, j *store.Job) (apiv1.JobOutput, error) {
	var head []*store.Task
	size := 0
	for off := 0; off < int(j.TaskCount) && size <= MaxJobOutputBytes; off += outputPage {
		page, err := s.store.TaskListPage(ctx, j.ID, off, outputPage)
		if err != nil {
			return apiv1.JobOutput{}, fmt.Errorf("list tasks: %w", err)
		}
		for _, t := range page {
			if t.Output != "" && size <= MaxJobOutputBytes {
				head = append(head, t)
				size += len(t.Output) + 1
			}
		}
	}
	out := OutputView(head)
	out.Error = nil
	for end := int(j.TaskCount); end > 0 && out.Error == nil; end -= outputPage {
		off := max(0, end-outputPage)
		page, err := s.store.TaskListPage(ctx, j.ID, off, end-off)
		if err != nil {
			return apiv1.JobOutput{}, fmt.Errorf("list tasks: %w", err)
		}
		for i := len(page) - 1; i >= 0; i-- {
			if e := taskError(page[i]); e != nil {
				out.Error = e
				break
			}
		}
	}
	return out, nil
}
