package job

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/skiffhq/skiff/internal/store"
)

// QueuedCancellation is what CancelQueued did.
type QueuedCancellation struct {
	// QueuedBefore counts the jobs (with the tag, when set) that were
	// planning or queued when the call came.
	QueuedBefore int
	// Cancelled are the ids of the jobs it cancelled, oldest first (ties by
	// id). A job that started meanwhile is not among them.
	Cancelled []string
}

// CancelQueued cancels the project's jobs that have not started: those
// planning or queued, with tag when it is set (spec 3.1). Running jobs are
// left alone. Each job is cancelled in its own transaction, as Cancel
// cancels one (tasks first, hold captured, dependents cancelled too); a job
// that started meanwhile is skipped. reason, when set, is the jobs' error
// text after "cancelled: "; otherwise it names the call, project and tag.
func (s *Service) CancelQueued(ctx context.Context, accountID string, p *store.Project, tag, reason string) (*QueuedCancellation, error) {
	jobs, _, err := s.store.JobList(ctx, &store.JobListParams{AccountID: accountID, ProjectID: p.ID, Tag: tag,
		Statuses: []store.JobStatus{store.JobPlanning, store.JobQueued}})
	if err != nil {
		return nil, fmt.Errorf("list queued jobs: %w", err)
	}
	slices.Reverse(jobs) // the list is newest first
	if reason == "" {
		reason = "cancel-queued on project " + p.Name
		if tag != "" {
			reason += " for tag " + tag
		}
	}
	cancelled := []string{}
	kill := false
	started := s.clock.Now()
	for _, j := range jobs {
		now := s.clock.Now()
		var running []string
		err := s.store.InTx(ctx, func(q store.Querier) error {
			var err error
			_, running, err = s.cancelInTx(ctx, q, j, []store.JobStatus{store.JobPlanning, store.JobQueued}, reason, "",
				map[string]any{"reason": reason, "via": "cancel_queued", "tag": tag}, now)
			return err
		})
		if errors.Is(err, store.ErrConflict) {
			// It moved on meanwhile. A dependent cancelled along with an
			// earlier job of this call still counts as cancelled by it.
			if cur, gerr := s.store.JobGetByID(ctx, j.ID); gerr == nil && cur.Status == store.JobCancelled &&
				cur.FinishedAt != nil && !cur.FinishedAt.Before(started) {
				cancelled = append(cancelled, j.ID)
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cancel job %s: %w", j.ID, err)
		}
		cancelled = append(cancelled, j.ID)
		kill = kill || len(running) > 0
	}
	if len(cancelled) > 0 {
		s.log.InfoContext(ctx, "queued jobs cancelled", "project", p.ID, "tag", tag, "jobs", len(cancelled))
	}
	if kill {
		s.waker.Wake()
	}
	return &QueuedCancellation{QueuedBefore: len(jobs), Cancelled: cancelled}, nil
}
