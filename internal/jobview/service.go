// Package jobview is the read side of jobs: the job, task, result, output,
// metrics and price views the API and the streams show, read from the store
// and built from its rows.
//
// It lives apart from package job, the write side (admission, lifecycle,
// execution), so that the service that changes jobs stays small and a view
// can change without touching a transaction. The rule: jobview reads
// (store.Store, job's exported types), job never imports jobview.
package jobview

import (
	"context"
	"fmt"

	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/job/submit"
	"github.com/skiffhq/skiff/internal/store"
)

// Service reads jobs and shows them.
type Service struct {
	store   store.Store
	billing *billing.Service
	clock   clock.Clock
	limits  submit.Limits
	hosts   HostShapes // nil: no placement advice
	shapes  shapeCache
}

// Config wires a Service.
type Config struct {
	Store store.Store
	// Billing gives the rates the price list shows; nil means one at the
	// default rates over Store.
	Billing *billing.Service
	// Clock dates runtimes and staleness.
	Clock clock.Clock
	// Limits are the operator's presets and limits the price list shows
	// (the job service's own, job.Service.Limits).
	Limits submit.Limits
	// Hosts tells a queued job no host could take (PlacementAdvice); nil
	// gives no such advice.
	Hosts HostShapes
}

// New returns a Service.
func New(cfg Config) *Service {
	b := cfg.Billing
	if b == nil {
		b = billing.New(cfg.Store, cfg.Clock, nil)
	}
	return &Service{store: cfg.Store, billing: b, clock: cfg.Clock, limits: cfg.Limits, hosts: cfg.Hosts}
}

// List pages the account's jobs.
func (s *Service) List(ctx context.Context, p *store.JobListParams) ([]*store.Job, int, error) {
	jobs, total, err := s.store.JobList(ctx, p)
	if err != nil {
		return nil, 0, fmt.Errorf("list jobs: %w", err)
	}
	return jobs, total, nil
}

// Groups groups every job p selects by one field.
func (s *Service) Groups(ctx context.Context, p *store.JobListParams, by store.JobGroupKey) ([]store.JobGroup, error) {
	groups, err := s.store.JobGroups(ctx, p, by)
	if err != nil {
		return nil, fmt.Errorf("group jobs: %w", err)
	}
	return groups, nil
}

// Tasks lists a job's tasks with their attempts.
func (s *Service) Tasks(ctx context.Context, j *store.Job) ([]*store.Task, map[string][]*store.Attempt, error) {
	tasks, err := s.store.TaskList(ctx, j.ID)
	if err != nil {
		return nil, nil, fmt.Errorf("list tasks: %w", err)
	}
	attempts, err := s.store.AttemptList(ctx, j.ID)
	if err != nil {
		return nil, nil, fmt.Errorf("list attempts: %w", err)
	}
	byTask := map[string][]*store.Attempt{}
	for _, a := range attempts {
		byTask[a.TaskID] = append(byTask[a.TaskID], a)
	}
	return tasks, byTask, nil
}

// EventPage is one page of a job's lifecycle events and the cursor of the
// next (0: this page is the last).
type EventPage struct {
	Events []*store.JobEvent
	Next   int64
}

// Events lists one page of a job's committed lifecycle events by position:
// oldest first after p.After, or newest first before p.Before. One row
// past the limit says whether another page follows.
func (s *Service) Events(ctx context.Context, j *store.Job, p store.JobEventPageParams) (EventPage, error) {
	p.JobID = j.ID
	limit := p.Limit
	p.Limit++
	evs, err := s.store.JobEventPage(ctx, &p)
	if err != nil {
		return EventPage{}, fmt.Errorf("list events: %w", err)
	}
	var next int64
	if len(evs) > limit {
		evs = evs[:limit]
		next = evs[limit-1].Position
	}
	return EventPage{Events: evs, Next: next}, nil
}

// Artifacts lists the visible artifacts a job produced, oldest first.
func (s *Service) Artifacts(ctx context.Context, jobID string) ([]*store.Artifact, error) {
	return s.store.ArtifactListByJob(ctx, jobID)
}
