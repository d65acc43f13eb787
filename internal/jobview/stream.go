package jobview

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/store"
)

// This file reads what the live streams show (docs/streams.md): events
// after a position, and the task a task event is about.

// TerminalEvent reports whether an event kind ends its job (spec 3.1).
func TerminalEvent(kind string) bool {
	switch kind {
	case "job.completed", "job.partial", "job.failed", "job.cancelled":
		return true
	}
	return false
}

// EventsAfter lists committed events after a position (store.JobEventFeed).
func (s *Service) EventsAfter(ctx context.Context, p *store.JobEventFeedParams) ([]*store.JobEvent, error) {
	evs, err := s.store.JobEventFeed(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	return evs, nil
}

// LastEventPosition is the position of the newest committed event.
func (s *Service) LastEventPosition(ctx context.Context) (int64, error) {
	return s.store.JobEventLastPosition(ctx)
}

// TaskCounts counts a job's tasks per status.
func (s *Service) TaskCounts(ctx context.Context, j *store.Job) (map[string]int64, error) {
	c, err := s.store.TaskCountByStatus(ctx, j.ID)
	if err != nil {
		return nil, fmt.Errorf("count tasks: %w", err)
	}
	out := map[string]int64{}
	for st, n := range c {
		out[string(st)] = n
	}
	return out, nil
}

// EventTask is the task an event is about, as the store has it now; a
// task.progress event's progress and output tail replace the task's, so
// that its frame shows what the runner printed then.
func (s *Service) EventTask(ctx context.Context, e *store.JobEvent) (apiv1.Task, error) {
	t, err := s.store.TaskGet(ctx, e.TaskID)
	if err != nil {
		return apiv1.Task{}, fmt.Errorf("task of event %s: %w", e.ID, err)
	}
	atts, err := s.store.AttemptListForTasks(ctx, t.JobID, t.Index, t.Index)
	if err != nil {
		return apiv1.Task{}, fmt.Errorf("attempts of task %s: %w", t.ID, err)
	}
	v := TaskView(t, atts, s.clock.Now())
	if t.Status.IsTerminal() {
		// An ended task's files were uploaded before its end was
		// recorded: its frame lists them as GET /jobs/{id}/tasks does.
		arts, err := s.store.ArtifactListByJob(ctx, t.JobID)
		if err != nil {
			return apiv1.Task{}, fmt.Errorf("artifacts of task %s: %w", t.ID, err)
		}
		WithArtifacts(&v, arts)
	}
	if e.Kind == "task.progress" {
		var d struct {
			Progress   json.RawMessage `json:"progress"`
			OutputTail *string         `json:"output_tail"`
		}
		if json.Unmarshal(e.Data, &d) == nil {
			if len(d.Progress) > 0 {
				v.LatestProgress = d.Progress
			}
			if d.OutputTail != nil {
				v.LiveFeedback = &apiv1.LiveFeedback{OutputTail: *d.OutputTail}
			}
		}
	}
	return v, nil
}
