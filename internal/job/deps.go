package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

// Dependencies (spec 3.1): a job with depends_on stays planning until every
// job it depends on has ended. All completed or partial: it is queued. Any
// failed or cancelled: it is cancelled, and so, in turn, are the jobs
// waiting on it.

// resolveDependents decides, in q's transaction, the planning jobs that wait
// on jobID, which has just ended. It reports whether any job was queued.
func (s *Service) resolveDependents(ctx context.Context, q store.Querier, jobID string, now time.Time) (bool, error) {
	ids, err := q.JobDependents(ctx, jobID)
	if err != nil {
		return false, fmt.Errorf("dependents of %s: %w", jobID, err)
	}
	queued := false
	for _, dep := range ids {
		ok, err := s.resolveWait(ctx, q, dep, now)
		if err != nil {
			return false, err
		}
		queued = queued || ok
	}
	return queued, nil
}

// resolveWait moves the planning job id on if its dependencies allow: queued
// when all ended well, cancelled (with its own dependents) when one ended
// badly, unchanged while one runs. It reports whether the job was queued.
func (s *Service) resolveWait(ctx context.Context, q store.Querier, id string, now time.Time) (bool, error) {
	statuses, err := q.JobDependencyStatuses(ctx, id)
	if err != nil {
		return false, fmt.Errorf("dependencies of %s: %w", id, err)
	}
	deps := make([]string, 0, len(statuses))
	for d := range statuses {
		deps = append(deps, d)
	}
	sort.Strings(deps)
	for _, d := range deps {
		if st := statuses[d]; st == store.JobFailed || st == store.JobCancelled {
			j, err := q.JobGetByID(ctx, id)
			if err != nil {
				return false, err
			}
			_, _, err = s.cancelInTx(ctx, q, j, []store.JobStatus{store.JobPlanning},
				fmt.Sprintf("dependency %s ended %s", d, st),
				"Fix and resubmit the dependency, then resubmit this job with its new id in depends_on.",
				map[string]any{"reason": "dependency " + string(st), "dependency": d}, now)
			if errors.Is(err, store.ErrConflict) {
				return false, nil // no longer planning: decided already
			}
			return false, err
		}
	}
	for _, d := range deps {
		if !statuses[d].IsTerminal() {
			return false, nil
		}
	}
	_, err = q.JobSetStatus(ctx, &store.JobSetStatusParams{ID: id, From: []store.JobStatus{store.JobPlanning},
		To: store.JobQueued, Now: now})
	if errors.Is(err, store.ErrConflict) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	data, _ := json.Marshal(map[string]any{"reason": "dependencies ended", "depends_on": deps})
	return true, s.event(ctx, q, id, "", "", "job.queued", json.RawMessage(data), now)
}
