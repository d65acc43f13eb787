package project

import (
	"context"
	"errors"
	"fmt"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/store"
)

// Preparer prepares a published revision on hosts (unpacks its image so the
// first task starts warm); the fleet implements it.
type Preparer interface {
	// HostIDs lists the hosts that exist now, in a stable order.
	HostIDs(ctx context.Context) ([]string, error)
	// Prepare prepares the push's image on one host; it may take long.
	Prepare(ctx context.Context, hostID string, pu *store.Push) error
}

// Dropper is implemented by preparers that keep something per project on
// hosts (warm sandboxes): Drop releases it when the project is invalidated
// or deleted.
type Dropper interface {
	Drop(ctx context.Context, hostID, projectID string)
}

// WarmReporter is implemented by preparers whose hosts keep sandboxes of a
// prepared revision booted ahead (warm starts): how many of revision pu's
// the hosts keep for the project, and how many are ready now.
type WarmReporter interface {
	WarmCapacity(ctx context.Context, projectID string, pu *store.Push) (ready, target int)
}

// drop releases what the hosts keep for the project, where the preparer
// keeps anything.
func (s *Service) drop(ctx context.Context, projectID string) {
	d, ok := s.preparer.(Dropper)
	if !ok {
		return
	}
	hosts, err := s.preparer.HostIDs(ctx)
	if err != nil {
		s.log.Warn("list hosts to drop warm sandboxes", "project", projectID, "err", err)
		return
	}
	for _, h := range hosts {
		d.Drop(ctx, h, projectID)
	}
}

// FloorChecker answers 402 with a shortfall quote when the account's
// available balance is under the amount; billing implements it.
type FloorChecker interface {
	Shortfall(ctx context.Context, accountID string, neededMicros int64, what string) error
}

// InitFloorMicros is the available balance init needs (spec 1.7: 5 USD).
const InitFloorMicros = 5_000_000

// InitResult answers POST /projects/:name/init and /invalidate.
type InitResult struct {
	Status        string
	StatusMessage string
	NextAction    string
	Readiness     *apiv1.Readiness
}

// Init prepares the published revision on up to maxNodes of the hosts that
// exist now (0: all). It returns at once; preparation runs in the
// background and readiness shows its progress. It provisions nothing new.
func (s *Service) Init(ctx context.Context, accountID, name string, maxNodes int) (*InitResult, error) {
	p, err := s.Get(ctx, accountID, name)
	if err != nil {
		return nil, err
	}
	preparer, floor := s.preparer, s.floor
	if floor != nil {
		if err := floor.Shortfall(ctx, accountID, InitFloorMicros, "project init"); err != nil {
			return nil, err
		}
	}
	if err := s.refuseIfBusy(ctx, p); err != nil {
		return nil, err
	}
	pu, err := s.store.PushLatestPublished(ctx, p.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.Conflict("not_published", "Push the project and wait for its build to publish, then init.",
			"project %q has no published revision to prepare", name)
	}
	if err != nil {
		return nil, fmt.Errorf("published push: %w", err)
	}
	var hosts []string
	if preparer != nil {
		if hosts, err = preparer.HostIDs(ctx); err != nil {
			return nil, fmt.Errorf("list hosts: %w", err)
		}
	}
	if maxNodes > 0 && len(hosts) > maxNodes {
		hosts = hosts[:maxNodes]
	}
	now := s.clock.Now()
	for _, h := range hosts {
		if _, err := s.store.RuntimePrepPut(ctx, &store.RuntimePrepPutParams{ProjectID: p.ID, HostID: h,
			ContentHash: pu.ContentHash, ImageDigest: pu.ImageDigest, Status: store.RuntimePreparing, Now: now}); err != nil {
			return nil, fmt.Errorf("record preparation: %w", err)
		}
	}
	for _, h := range hosts {
		s.background(func(bg context.Context) { s.prepare(bg, preparer, h, p, pu) })
	}
	rd, err := s.Readiness(ctx, p)
	if err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("Preparing revision %s on %d host(s).", pu.ContentHash, len(hosts))
	if len(hosts) == 0 {
		msg = "No host is connected now; the first job prepares the runtime when it starts."
	}
	return &InitResult{Status: "initializing", StatusMessage: msg, Readiness: rd,
		NextAction: "Poll GET /api/v1/projects/" + name + "/status until ready_for_jobs is true, or submit jobs now."}, nil
}

func (s *Service) prepare(ctx context.Context, preparer Preparer, hostID string, p *store.Project, pu *store.Push) {
	status, msg := store.RuntimeReady, ""
	if err := preparer.Prepare(ctx, hostID, pu); err != nil {
		if ctx.Err() != nil {
			return // shutdown; the row stays "preparing" until the next init
		}
		status, msg = store.RuntimeFailed, err.Error()
		s.log.Warn("runtime preparation failed", "project", p.ID, "host", hostID, "err", err)
	}
	if _, err := s.store.RuntimePrepPut(ctx, &store.RuntimePrepPutParams{ProjectID: p.ID, HostID: hostID,
		ContentHash: pu.ContentHash, ImageDigest: pu.ImageDigest, Status: status, Error: msg, Now: s.clock.Now()}); err != nil {
		s.log.Error("record preparation", "project", p.ID, "host", hostID, "err", err)
	}
}

// Invalidate marks the project's prepared runtimes stale: the next init or
// job prepares them again.
func (s *Service) Invalidate(ctx context.Context, accountID, name string) (*InitResult, error) {
	p, err := s.Get(ctx, accountID, name)
	if err != nil {
		return nil, err
	}
	n, err := s.store.RuntimePrepMarkStale(ctx, p.ID, s.clock.Now())
	if err != nil {
		return nil, fmt.Errorf("invalidate: %w", err)
	}
	// The project's cache mounts start empty (or from their seed) again.
	if _, err := s.store.ProjectBumpCacheEpoch(ctx, p.ID, s.clock.Now()); err != nil {
		return nil, fmt.Errorf("invalidate cache mounts: %w", err)
	}
	s.drop(ctx, p.ID)
	rd, err := s.Readiness(ctx, p)
	if err != nil {
		return nil, err
	}
	return &InitResult{Status: "invalidated", Readiness: rd,
		StatusMessage: fmt.Sprintf("Marked %d prepared runtime(s) stale; the project's cache mounts start over.", n),
		NextAction:    "Prepare hosts again with POST /api/v1/projects/" + name + "/init, or submit jobs (the first pays a cold start)."}, nil
}

// runtimeCounts summarises the hosts' preparations of the current revision;
// preparations of older revisions count as stale.
func (s *Service) runtimeCounts(ctx context.Context, projectID, contentHash string) (RuntimeCounts, error) {
	preps, err := s.store.RuntimePrepList(ctx, projectID)
	if err != nil {
		return RuntimeCounts{}, err
	}
	var rc RuntimeCounts
	for _, r := range preps {
		rc.Total++
		if r.ContentHash != contentHash {
			rc.Stale++
			continue
		}
		switch r.Status {
		case store.RuntimeReady:
			rc.Ready++
			if rc.LastReadyAt == nil || (r.ReadyAt != nil && r.ReadyAt.After(*rc.LastReadyAt)) {
				rc.LastReadyAt = r.ReadyAt
			}
		case store.RuntimePreparing:
			rc.Initializing++
			rc.PendingInit = true
		case store.RuntimeFailed:
			rc.Failed++
			rc.FailedError = r.Error
		case store.RuntimeStale:
			rc.Stale++
			rc.Invalidated++
		}
	}
	return rc, nil
}

// background runs fn in a goroutine bound to the service's lifetime.
func (s *Service) background(fn func(ctx context.Context)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn(s.bgCtx)
	}()
}

// Close stops background work and waits for it.
func (s *Service) Close() {
	s.bgCancel()
	s.wg.Wait()
}
