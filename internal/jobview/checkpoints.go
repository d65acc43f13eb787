package jobview

import (
	"context"
	"fmt"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/store"
)

// JobObject is the job object of GET /api/v1/jobs/:id: the job with its
// summary and, when it checkpoints, its checkpoint summary.
func (s *Service) JobObject(ctx context.Context, j *store.Job) (*apiv1.Job, error) {
	summary, err := s.SummaryOf(ctx, j)
	if err != nil {
		return nil, err
	}
	v := JobView(j, summary)
	if err := s.AddCheckpointSummary(ctx, j, v); err != nil {
		return nil, err
	}
	return v, nil
}

// AddCheckpointSummary sets v's checkpoint_summary (spec 2.4: "checkpoint
// summary (when enabled)") for a job with checkpointing enabled, counted
// in the store without reading the tasks out.
func (s *Service) AddCheckpointSummary(ctx context.Context, j *store.Job, v *apiv1.Job) error {
	if !submissionOf(j).Checkpointing.Enabled {
		return nil
	}
	c, err := s.store.TaskCheckpointCounts(ctx, j.ID)
	if err != nil {
		return fmt.Errorf("count checkpoints of job %s: %w", j.ID, err)
	}
	v.CheckpointSummary = CheckpointSummaryView(j, c)
	return nil
}

// CheckpointSummaryView is a job's checkpoint summary from its counts; nil
// when the job does not checkpoint.
func CheckpointSummaryView(j *store.Job, c store.CheckpointCounts) *apiv1.JobCheckpointSummary {
	if !submissionOf(j).Checkpointing.Enabled {
		return nil
	}
	return &apiv1.JobCheckpointSummary{TaskCount: j.TaskCount, TasksCheckpointed: c.Checkpointed, TasksResumed: c.Resumed,
		ArtifactsPending: c.Pending, ArtifactsPublished: c.Published, ArtifactsFailed: c.Failed}
}
