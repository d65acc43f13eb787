package fleet

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/enroll"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/wake"
)

// Controller is the controller's side of agentproto: it knows the hosts
// that dialled in, hands them attempts as they have room, hears what the
// attempts did, and declares lost what a host no longer runs or a host that
// stopped calling. Every decision about a task or a job is the job
// service's; the controller only decides who runs what.
type Controller struct {
	cfg  ControllerConfig
	jobs *job.Service
	st   store.Store
	clk  clock.Clock
	log  *slog.Logger

	started time.Time

	mu     sync.Mutex
	tokens map[[32]byte]string // sha256 of a host token -> the host id it names
	hosts  map[string]*host    // registered hosts, by id
	wake   *wake.Signal
}

// ControllerConfig configures a Controller.
type ControllerConfig struct {
	Store store.Store
	Jobs  *job.Service
	// Wake is what long-polling hosts wait on: the signal the job service
	// was given (job.Config.Wake), so that new tasks and cancellations
	// reach hosts at once. Nil means a private one, which only the
	// controller wakes: hosts then hear of new work at their next poll.
	Wake  *wake.Signal
	Clock clock.Clock
	Log   *slog.Logger
	// Artifacts serves task inputs to hosts and stores what attempts
	// upload; nil refuses both.
	Artifacts *artifact.Service
	// ImagesDir is the controller's OCI image store (<dir>/<hex>); a host
	// on this machine reads image layouts from it directly.
	ImagesDir string
	// Images opens an image's layout by digest; nil: <ImagesDir>/<hex>.
	// With several controllers it fetches the layouts this controller did
	// not build from the shared blob store (imagestore.Shared).
	Images ImageSource
	// SeedsDir holds the cache mounts' seeds kept at publish
	// (project.SeedDir); hosts sharing this filesystem seed from it.
	SeedsDir string
	// HeartbeatInterval is the longest a host may go without a poll
	// request; hosts long-poll at most this long. Default 10 s.
	HeartbeatInterval time.Duration
	// LostAfter is how long a silent host is kept before it is declared
	// lost and its attempts requeued; it is also how long, after the
	// controller starts, attempts left open by an earlier run wait for
	// their host to report them. Default 3 heartbeat intervals.
	LostAfter time.Duration
	// RetryAvoidWindow is how long a retried task is kept from the host
	// that ran it while another host is registered. Default 30 s.
	RetryAvoidWindow time.Duration
	// SweepInterval is how often lost hosts and orphaned attempts are
	// looked for. Default HeartbeatInterval.
	SweepInterval time.Duration
	// Presence shares with the other controllers on the same store which
	// hosts are alive, so that the one controller sweeping orphaned
	// attempts spares those of hosts that talk to another. Nil: this is
	// the only controller.
	Presence Presence
}

// ImageSource opens an image's OCI layout on this machine by its manifest
// digest (imagestore.Source).
type ImageSource interface {
	Layout(ctx context.Context, digest string) (string, error)
}

// Presence records which hosts are alive across controllers
// (docs/scaling.md). Each controller marks the hosts that call it.
type Presence interface {
	// Mark records hostID alive from now until until.
	Mark(ctx context.Context, hostID string, now, until time.Time) error
	// Drop records hostID gone, when this controller marked it last.
	Drop(ctx context.Context, hostID string) error
	// Alive lists the hosts alive at now, on any controller.
	Alive(ctx context.Context, now time.Time) (map[string]bool, error)
}

// host is a registered host.
type host struct {
	id       string
	protocol int // the agentproto version it registered with
	driver   string
	profile  agentproto.ResourceProfile
	profJSON []byte
	capacity agentproto.Capacity
	lastSeen time.Time
	// marked is when Presence last recorded the host alive (guarded by
	// Controller.mu).
	marked time.Time
	// pollMu serialises a host's pollMu requests: one decides at a time, so
	// that reconciling its running list and assigning never interleave.
	pollMu sync.Mutex
	// cancelSent is when each attempt the host must stop was last sent to
	// it (guarded by poll). The host keeps listing a stopped attempt until
	// its end is reported; it is sent again only after a heartbeat
	// interval, not on every poll.
	cancelSent map[string]time.Time
	// enrolled is the host's stored record (declared share, state) as of
	// its last request; nil for a host allowed in memory (the local host).
	enrolled *store.Host
	// storedSeen is when lastSeen was last written to the store.
	storedSeen time.Time
}

// NewController returns a controller with defaults filled in.
func NewController(cfg ControllerConfig) *Controller {
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 10 * time.Second
	}
	if cfg.LostAfter <= 0 {
		cfg.LostAfter = 3 * cfg.HeartbeatInterval
	}
	if cfg.RetryAvoidWindow <= 0 {
		cfg.RetryAvoidWindow = 30 * time.Second
	}
	if cfg.SweepInterval <= 0 {
		cfg.SweepInterval = cfg.HeartbeatInterval
	}
	if cfg.Wake == nil {
		cfg.Wake = wake.New()
	}
	return &Controller{cfg: cfg, jobs: cfg.Jobs, st: cfg.Store, clk: cfg.Clock, log: cfg.Log,
		started: cfg.Clock.Now(), tokens: map[[32]byte]string{}, hosts: map[string]*host{}, wake: cfg.Wake}
}

// AllowHost lets the holder of token register as hostID. The token is kept
// only as a hash.
func (c *Controller) AllowHost(token, hostID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tokens[sha256.Sum256([]byte(token))] = hostID
}

// hostForToken is the host a token names: a token allowed in memory (the
// local host), else an enrolled host's credential, looked up in the store
// on every request so that a removal refuses the very next one and a drain
// is heard at the next poll, on every controller. enrolled is nil for a
// host allowed in memory. Tokens are kept and looked up only by their
// sha256, so the lookup reveals nothing of them. An unknown token is
// errUnauthorized.
func (c *Controller) hostForToken(ctx context.Context, token string) (hostID string, enrolled *store.Host, err error) {
	if token == "" {
		return "", nil, errUnauthorized
	}
	c.mu.Lock()
	hostID = c.tokens[sha256.Sum256([]byte(token))]
	c.mu.Unlock()
	if hostID != "" {
		return hostID, nil, nil
	}
	h, ok, err := enroll.Authenticate(ctx, c.st, token)
	if err != nil {
		return "", nil, err
	}
	if !ok {
		return "", nil, errUnauthorized
	}
	return h.ID, h, nil
}

// Wake tells long-polling hosts that there may be work or cancellations.
func (c *Controller) Wake() { c.wake.Wake() }

func (c *Controller) host(id string) *host {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hosts[id]
}

// HostCounts counts hosts by state, for metrics: registered (answering
// within LostAfter) and enrolled (a credential allowed, whether or not
// registered).
func (c *Controller) HostCounts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return map[string]int{"registered": len(c.hosts), "enrolled": len(c.tokens)}
}

// hostCount is how many hosts are registered.
func (c *Controller) hostCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.hosts)
}

// Run looks for lost hosts and orphaned attempts until ctx is done: the
// whole sweep, for the only controller on a store.
func (c *Controller) Run(ctx context.Context) error {
	return c.every(ctx, func(ctx context.Context) error { return c.Sweep(ctx) })
}

// RunHosts looks for this controller's lost hosts until ctx is done. With
// several controllers each runs it, and one at a time runs RunOrphans.
func (c *Controller) RunHosts(ctx context.Context) error {
	return c.every(ctx, c.SweepHosts)
}

// RunOrphans looks for orphaned attempts until ctx is done: the singleton
// duty of several controllers. Attempts left open before it started get
// LostAfter for their host to call some controller.
func (c *Controller) RunOrphans(ctx context.Context) error {
	since := c.clk.Now()
	return c.every(ctx, func(ctx context.Context) error { return c.SweepOrphans(ctx, since) })
}

func (c *Controller) every(ctx context.Context, sweep func(context.Context) error) error {
	t := time.NewTicker(c.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if err := sweep(ctx); err != nil && ctx.Err() == nil {
				c.log.Error("sweep", "err", err)
			}
		}
	}
}

// Sweep declares lost the hosts silent for LostAfter, and requeues the open
// attempts of hosts that are not registered: those of lost hosts, and, once
// the controller has run for LostAfter, those an earlier run left open and
// no host has claimed since.
func (c *Controller) Sweep(ctx context.Context) error {
	return errors.Join(c.SweepHosts(ctx), c.SweepOrphans(ctx, c.started))
}

// SweepHosts forgets the hosts silent for LostAfter; their attempts are
// then orphans.
func (c *Controller) SweepHosts(ctx context.Context) error {
	now := c.clk.Now()
	var gone []string
	c.mu.Lock()
	for id, h := range c.hosts {
		if now.Sub(h.lastSeen) > c.cfg.LostAfter {
			c.log.Warn("host lost: no poll", "host_id", id, "silent_for", now.Sub(h.lastSeen).String())
			delete(c.hosts, id)
			gone = append(gone, id)
		}
	}
	c.mu.Unlock()
	var errs []error
	if c.cfg.Presence != nil {
		for _, id := range gone {
			if err := c.cfg.Presence.Drop(ctx, id); err != nil {
				errs = append(errs, fmt.Errorf("drop presence of %s: %w", id, err))
			}
		}
	}
	return errors.Join(errs...)
}

// SweepOrphans requeues the open attempts of hosts that are registered
// nowhere; attempts assigned before since, while the sweeper was not
// running, get LostAfter from since for their host to come back.
func (c *Controller) SweepOrphans(ctx context.Context, since time.Time) error {
	now := c.clk.Now()
	c.mu.Lock()
	registered := make(map[string]bool, len(c.hosts))
	for id := range c.hosts {
		registered[id] = true
	}
	c.mu.Unlock()
	if c.cfg.Presence != nil {
		alive, err := c.cfg.Presence.Alive(ctx, now)
		if err != nil {
			return fmt.Errorf("hosts alive: %w", err)
		}
		for id := range alive {
			registered[id] = true
		}
	}
	open, err := c.st.AttemptListOpen(ctx, "")
	if err != nil {
		return fmt.Errorf("open attempts: %w", err)
	}
	var errs []error
	for _, a := range open {
		if registered[a.HostID] {
			continue
		}
		if now.Sub(since) < c.cfg.LostAfter && now.Sub(a.AssignedAt) < c.cfg.LostAfter {
			continue // the host may still come back after our restart
		}
		if err := c.lose(ctx, a, "its host stopped reporting"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// lose records an open attempt as lost; an attempt that ended meanwhile is
// left as it is.
func (c *Controller) lose(ctx context.Context, a *store.Attempt, reason string) error {
	err := c.jobs.AttemptLost(ctx, a, reason)
	if errors.Is(err, store.ErrConflict) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("attempt %s lost: %w", a.ID, err)
	}
	c.log.Warn("attempt lost", "attempt_id", a.ID, "task_id", a.TaskID, "job_id", a.JobID, "host_id", a.HostID, "reason", reason)
	return nil
}
