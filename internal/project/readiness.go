package project

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/store"
)

// ReadinessInput is everything readiness is derived from; it is never
// stored, so it cannot drift from the facts.
type ReadinessInput struct {
	Name      string
	Latest    *store.Push // newest push, any status
	Published *store.Push // newest published push
	Runtime   RuntimeCounts
	Jobs      JobCounts
	// WarmReady and WarmTarget count the published revision's warm
	// sandboxes (WarmReporter).
	WarmReady, WarmTarget int
}

// RuntimeCounts says how far hosts have prepared the published revision.
type RuntimeCounts struct {
	Ready, Initializing, Failed, Stale, Total int
	// Invalidated counts the stale preparations of the current revision
	// (POST invalidate); Stale also counts those of older revisions.
	Invalidated int
	PendingInit bool
	LastReadyAt *time.Time
	// FailedError is why a host failed to prepare the revision (a data
	// source it could not fetch, an image it could not unpack).
	FailedError string
}

// JobCounts is the project's queue.
type JobCounts struct {
	QueuedTasks, ActiveJobs, ActiveTasks int
}

// Readiness computes the readiness object of spec 2.3 and 3.2:
// not_initialized -> (push) -> initializing | refreshing -> published/ready,
// attention_required when the latest build failed.
func Readiness(in ReadinessInput) *apiv1.Readiness {
	r := &apiv1.Readiness{
		Project: in.Name, AvailabilityStatus: "cold", ProgressPhase: "idle",
		ReadyReplicas: in.Runtime.Ready, InitializingReplicas: in.Runtime.Initializing,
		FailedReplicas: in.Runtime.Failed, StaleReplicas: in.Runtime.Stale, TotalReplicas: in.Runtime.Total,
		QueueDepth: in.Jobs.QueuedTasks, QueuedTasks: in.Jobs.QueuedTasks,
		ActiveJobs: in.Jobs.ActiveJobs, ActiveTasks: in.Jobs.ActiveTasks,
		PendingInit: in.Runtime.PendingInit, LastReadyAt: in.Runtime.LastReadyAt,
		WarmSandboxesReady: in.WarmReady, WarmSandboxesTarget: in.WarmTarget,
	}
	pushURL := "POST /api/v1/projects/" + in.Name + "/push"
	published := in.Published != nil
	if published {
		r.ContentHash = &in.Published.ContentHash
		r.CanAcceptNewJobs, r.ProjectReady = true, true
		// Jobs run on the published revision while a newer build runs or
		// after it failed, so whether that revision is prepared is still
		// what ready_for_jobs says.
		r.ReadyForJobs = in.Runtime.Ready > 0 && in.Runtime.Ready == in.Runtime.Total
	}
	if in.Latest != nil {
		t := in.Latest.UpdatedAt
		r.LatestActivityAt = &t
	}
	switch {
	case in.Latest == nil:
		r.InitState = "not_initialized"
		r.StatusMessage = "No code has been pushed yet."
		r.NextAction = "Push a gzip tarball with a Dockerfile and skiff.project.json: " + pushURL
	case !in.Latest.Status.IsTerminal():
		phase := "queued"
		if in.Latest.Status == store.PushBuilding {
			phase = "running"
		}
		r.ProgressPhase = phase
		if published {
			r.InitState, r.ProgressPhase = "refreshing", "refreshing"
			r.AvailabilityStatus = availability(in.Runtime)
			r.StatusMessage = "A new revision is building; jobs still run on the previous published revision."
		} else {
			r.InitState = "initializing"
			r.AvailabilityStatus = "warming"
			r.StatusMessage = "The first revision is building."
		}
		r.NextAction = "Poll GET /api/v1/projects/" + in.Name + "/pushes/" + in.Latest.ID + " until it is published."
	case in.Latest.Status == store.PushFailed:
		r.InitState, r.ProgressPhase = "attention_required", "failed"
		issue := in.Latest.Error
		r.LatestIssue = &issue
		t := in.Latest.UpdatedAt
		r.LatestFailureAt = &t
		r.StatusMessage = "The latest build failed: " + in.Latest.Error
		if published {
			r.AvailabilityStatus = "degraded"
			r.StatusMessage += " Jobs still run on the previous published revision."
		}
		r.NextAction = in.Latest.NextAction
		if r.NextAction == "" {
			r.NextAction = "Fix the Dockerfile or manifest, then push again: " + pushURL
		}
	default: // latest is published
		r.AvailabilityStatus = availability(in.Runtime)
		switch {
		case in.Runtime.Ready > 0 && in.Runtime.Ready == in.Runtime.Total:
			r.InitState, r.ProgressPhase, r.ReadyForJobs = "ready", "ready", true
			r.StatusMessage = "The latest revision is published and prepared on every host."
			r.NextAction = "Submit jobs: POST /api/v1/jobs"
		case in.Runtime.Failed > 0 && !in.Runtime.PendingInit && in.Runtime.Initializing == 0:
			r.InitState, r.ProgressPhase = "attention_required", "failed"
			issue := "Preparing the revision on a host failed: " + in.Runtime.FailedError
			r.LatestIssue = &issue
			r.StatusMessage = issue
			r.NextAction = "Fix what the issue names (for a data source: its uri, sha256, repo or revision), push again, or retry with POST /api/v1/projects/" + in.Name + "/init"
		case in.Runtime.PendingInit || in.Runtime.Initializing > 0:
			r.InitState, r.ProgressPhase = "refreshing", "refreshing"
			r.StatusMessage = "The latest revision is published; hosts are preparing it."
			r.NextAction = "Submit jobs now (the first may pay a cold start), or wait for init to finish."
		case in.Runtime.Invalidated > 0 && in.Runtime.Ready == 0:
			r.InitState, r.ProgressPhase = "published", "refresh_pending"
			r.StatusMessage = "The latest revision is published; prepared runtimes were invalidated."
			r.NextAction = "Submit jobs (the first pays a cold start) or prepare hosts: POST /api/v1/projects/" + in.Name + "/init"
		default:
			r.InitState, r.ProgressPhase = "refreshing", "refresh_pending"
			r.StatusMessage = "The latest revision is published but not yet prepared on hosts."
			r.NextAction = "Submit jobs (the first pays a cold start) or prepare hosts: POST /api/v1/projects/" + in.Name + "/init"
		}
	}
	return r
}

func availability(rc RuntimeCounts) string {
	switch {
	case rc.Total == 0 || (rc.Ready == 0 && rc.Initializing == 0):
		return "cold"
	case rc.Ready == rc.Total:
		return "ready"
	case rc.Ready == 0:
		return "warming"
	case rc.Failed > 0:
		return "degraded"
	}
	return "mixed"
}

// JobCounter reports a project's queue; the job service implements it.
type JobCounter interface {
	ProjectJobCounts(ctx context.Context, projectID string) (JobCounts, error)
}

// Readiness loads the inputs for one project and computes its readiness.
func (s *Service) Readiness(ctx context.Context, p *store.Project) (*apiv1.Readiness, error) {
	in := ReadinessInput{Name: p.Name}
	var err error
	if in.Latest, err = s.store.PushLatest(ctx, p.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("readiness: %w", err)
	}
	if in.Published, err = s.store.PushLatestPublished(ctx, p.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("readiness: %w", err)
	}
	if in.Published != nil {
		if in.Runtime, err = s.runtimeCounts(ctx, p.ID, in.Published.ContentHash); err != nil {
			return nil, fmt.Errorf("readiness: %w", err)
		}
		if wr, ok := s.preparer.(WarmReporter); ok {
			in.WarmReady, in.WarmTarget = wr.WarmCapacity(ctx, p.ID, in.Published)
		}
	}
	if jc, ok := s.jobs.(JobCounter); ok && jc != nil {
		if in.Jobs, err = jc.ProjectJobCounts(ctx, p.ID); err != nil {
			return nil, fmt.Errorf("readiness: %w", err)
		}
	}
	return Readiness(in), nil
}

// Diagnostics lists the project's recent builds for status/details.
func (s *Service) Diagnostics(ctx context.Context, p *store.Project) ([]apiv1.Diagnostic, error) {
	pushes, err := s.store.PushList(ctx, p.ID, 20)
	if err != nil {
		return nil, fmt.Errorf("diagnostics: %w", err)
	}
	out := make([]apiv1.Diagnostic, 0, len(pushes))
	for _, pu := range pushes {
		d := apiv1.Diagnostic{
			ID: pu.ID, Status: string(pu.Status), Phase: "build", LogTail: pu.LogTail, ContentHash: pu.ContentHash,
			InsertedAt: pu.CreatedAt, UpdatedAt: pu.UpdatedAt, RecommendedAction: pu.NextAction,
		}
		switch pu.Status {
		case store.PushPublished:
			d.Message, d.InitializedAt = "image built and published", pu.FinishedAt
		case store.PushFailed:
			d.Message = pu.Error
		case store.PushBuilding:
			d.Message = "building"
		default:
			d.Message = "waiting for the builder"
		}
		out = append(out, d)
	}
	return out, nil
}
