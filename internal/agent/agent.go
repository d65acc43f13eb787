// Package agent is the host side of the controller protocol
// (internal/agentproto): it registers, long-polls the controller for
// attempts, runs each in a sandbox driver and reports what happened. It
// only ever dials out.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/diskfree"
	"github.com/skiffhq/skiff/internal/gpu"
	"github.com/skiffhq/skiff/internal/ociimage"
	"github.com/skiffhq/skiff/internal/sandbox"
)

// Controller is the agent's view of the controller. agenthttp.Client
// implements it over agentproto's endpoints; tests may fake it.
type Controller interface {
	Register(ctx context.Context, req *agentproto.RegisterRequest) (*agentproto.RegisterResponse, error)
	// Poll long-polls for work; it is also the heartbeat.
	Poll(ctx context.Context, req *agentproto.PollRequest) (*agentproto.PollResponse, error)
	// Report delivers one event; nil means the controller acknowledged
	// it, ErrAttemptEnded (wrapped) that it had already ended the attempt.
	Report(ctx context.Context, ev *agentproto.AttemptEvent) error
}

// ErrUnknownHost is returned (wrapped) by a Controller when the controller
// does not know the host id; the agent registers again.
var ErrUnknownHost = errors.New("controller does not know this host")

// ErrAttemptEnded is what Controller.Report returns (wrapped) when the
// controller had already recorded the attempt's end, or no longer counts
// it as this host's: a repeat of a report whose answer was lost, or the
// end of an attempt it declared lost while the host was out of reach. The
// report is delivered as far as the host is concerned; it changes nothing.
var ErrAttemptEnded = errors.New("the controller had already ended this attempt")

// Defaults filled in by New.
const (
	DefaultPollWait         = 30 * time.Second
	DefaultPollSlack        = 15 * time.Second
	DefaultCallTimeout      = 15 * time.Second
	DefaultMinBackoff       = 500 * time.Millisecond
	DefaultMaxBackoff       = 30 * time.Second
	DefaultProgressInterval = time.Second
	DefaultShutdownGrace    = 30 * time.Second
	// DefaultPidsLimit bounds an attempt's processes and threads: enough
	// for thread pools and build tools, few enough that a fork bomb ends
	// as a failed attempt.
	DefaultPidsLimit = 1024
	// DefaultStorageGB is requirements.storage_gb's default, used for an
	// assignment that names none.
	DefaultStorageGB = 10
)

// Config configures an Agent.
type Config struct {
	// Controller is where the agent registers and gets work.
	Controller Controller
	// Driver runs attempts.
	Driver sandbox.Driver
	// Images unpacks assignment images, once per digest. Its MountPoints
	// should be sandbox.MountPoints().
	Images *ociimage.Cache
	// WorkRoot holds one directory per running attempt, removed when the
	// attempt is reported.
	WorkRoot string
	// CacheRoot holds one cache directory per project
	// (SKIFF_TASK_CACHE_DIR), shared by its attempts on this host.
	CacheRoot string
	// InputRoot caches artifact inputs by account and sha256, shared by
	// the account's attempts on this host; empty means <WorkRoot>-inputs.
	// On the same filesystem as WorkRoot, inputs are hard-linked into
	// attempts, not copied.
	InputRoot string
	// SeedRoot is the only place cache-mount seeds are copied from: a
	// seed path elsewhere (or reaching elsewhere through a link) is
	// refused. Empty: no seeds at all. The controller's own host sets it
	// to the controller's seeds directory; an enrolled host to its own.
	SeedRoot string
	// LayoutsInPlace lets an assignment name its image by a directory on
	// this machine (Assignment.ImageLayoutDir): only the controller's own
	// host, which shares the controller's filesystem. An enrolled host
	// fetches images by URL and refuses a path, which would name whatever
	// the controller says on the host's disk.
	LayoutsInPlace bool
	// DataSources fetches and holds the revisions' data sources; nil
	// fails the attempts of revisions that declare any (a host error).
	DataSources DataSources
	// CacheMountRoot holds the projects' cache mounts, one directory per
	// project and cache name; empty means <CacheRoot>-mounts.
	CacheMountRoot string
	// CacheMountMaxBytes caps CacheMountRoot: whole caches no attempt
	// holds are removed, least recently used first, past it. 0: no cap.
	CacheMountMaxBytes int64
	// CacheMountBytes, with StorageQuota, bounds each project's cache
	// mounts on this host: <CacheMountRoot>/<project id> is a filesystem
	// of its own of this size, kept between attempts, holding all its
	// epochs and caches; writes past it fail with ENOSPC. 0: unbounded.
	CacheMountBytes int64
	// Slots is how many attempts run at once; 0 means runtime.NumCPU().
	Slots int

	// PidsLimit caps the processes and threads of each attempt; 0 means
	// DefaultPidsLimit, a negative value no limit.
	PidsLimit int64
	// StorageQuota gives each attempt a filesystem of its own of
	// requirements.storage_gb (the assignment's StorageGB, or
	// DefaultStorageGB when it has none) for its scratch, outputs and
	// result: writes past it fail with ENOSPC. It needs root and loop
	// devices (the gvisor driver's hosts).
	StorageQuota bool
	// ImageCacheBytes bounds the image cache (Images) and the input cache
	// (InputRoot) together: past it, the least recently used images and
	// inputs that no attempt uses are removed (cachetrim.go). 0: unbounded.
	ImageCacheBytes int64
	// CacheBytes, with StorageQuota, bounds each project's cache directory
	// (SKIFF_TASK_CACHE_DIR) on this host: a filesystem of its own of this
	// size, kept between attempts. 0: unbounded.
	CacheBytes int64
	// MaxOutputFiles and MaxOutputBytes cap the artifact directory an
	// attempt leaves; past either its outputs are refused and the task
	// fails. 0 means the sandbox package's defaults.
	MaxOutputFiles int
	MaxOutputBytes int64
	// DiskFree is WorkRoot's free-disk watermark: under it the host takes
	// no new work and says why in its polls. Nil checks nothing.
	DiskFree *diskfree.Checker
	// Profile describes the host; the zero value means DetectProfile().
	Profile agentproto.ResourceProfile
	// Capacity is what the host offers tasks; zero fields default to the
	// profile's cpu_count, memory_total_mb, and Slots. Its GPUs are those
	// of GPU, whatever it says (gpu.go).
	Capacity agentproto.Capacity
	// GPU is what gpu.Discover found, trimmed to the GPUs lent to tasks;
	// nil: this host attaches no GPU and offers none.
	GPU *gpu.Host

	// PollWait is the long-poll wait asked of the controller, capped by
	// the heartbeat interval it returns at registration.
	PollWait time.Duration
	// PollSlack is added to PollWait for the poll's deadline.
	PollSlack time.Duration
	// CallTimeout bounds each registration and each attempt report. A
	// request sent as the network is cut may otherwise wait for TCP to
	// give up (about 15 minutes), holding back what finished meanwhile
	// long after the network is back; cut short, it is retried.
	CallTimeout time.Duration
	// MinBackoff and MaxBackoff bound the retry delay of failed controller
	// calls (exponential with jitter).
	MinBackoff, MaxBackoff time.Duration
	// ProgressInterval is the least time between two progress events of
	// an attempt.
	ProgressInterval time.Duration
	// ShutdownGrace bounds how long Run, once ctx is done, waits for
	// killed attempts to stop and their finished reports to be delivered.
	ShutdownGrace time.Duration

	// Clock stamps events and outcomes' surroundings; nil means the system
	// clock. Waits use real timers.
	Clock  clock.Clock
	Logger *slog.Logger
}

// Validate checks a configuration after defaults are applied.
func (c *Config) Validate() error {
	var errs []error
	if c.Controller == nil {
		errs = append(errs, errors.New("controller is required"))
	}
	if c.Driver == nil {
		errs = append(errs, errors.New("driver is required"))
	}
	if c.Images == nil {
		errs = append(errs, errors.New("image cache is required"))
	}
	if !filepath.IsAbs(c.WorkRoot) {
		errs = append(errs, fmt.Errorf("work root %q: must be absolute", c.WorkRoot))
	}
	if !filepath.IsAbs(c.CacheRoot) {
		errs = append(errs, fmt.Errorf("cache root %q: must be absolute", c.CacheRoot))
	}
	if c.Slots < 0 || c.PollWait < 0 || c.MinBackoff < 0 || c.MaxBackoff < c.MinBackoff || c.ProgressInterval < 0 {
		errs = append(errs, errors.New("slots and durations must not be negative, max backoff not below min"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid agent config: %w", err)
	}
	return nil
}

// Agent runs a host. Create it with New and call Run once.
type Agent struct {
	cfg Config
	log *slog.Logger
	clk clock.Clock

	inputs       *inputCache
	images       *imageFetches
	cacheMounts  *cacheMounts
	inputFetches atomic.Int64 // input fetches that went to the controller
	trimMu       sync.Mutex   // one cache trim at a time (cachetrim.go)
	gpus         *gpu.Allocator

	mu       sync.Mutex
	hostID   string
	running  map[string]*attempt
	paused   string         // why the last poll asked for no work, "" when it did
	wg       sync.WaitGroup // attempt goroutines (run and report)
	shutdown bool
}

// New returns an agent for cfg, with defaults filled in.
func New(cfg Config) (*Agent, error) {
	if cfg.Slots == 0 {
		cfg.Slots = runtime.NumCPU()
	}
	if cfg.Profile == (agentproto.ResourceProfile{}) {
		p, err := DetectProfile()
		if err != nil {
			return nil, err
		}
		cfg.Profile = p
	}
	if cfg.Capacity.CPU == 0 {
		cfg.Capacity.CPU = float64(cfg.Profile.CPUCount)
	}
	if cfg.Capacity.MemoryMB == 0 {
		cfg.Capacity.MemoryMB = cfg.Profile.MemoryTotalMB
	}
	cfg.Capacity.GPUs = attachableGPUs(cfg.GPU)
	if cfg.Capacity.Slots == 0 {
		cfg.Capacity.Slots = cfg.Slots
	}
	if cfg.PollWait == 0 {
		cfg.PollWait = DefaultPollWait
	}
	if cfg.PollSlack == 0 {
		cfg.PollSlack = DefaultPollSlack
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = max(DefaultMaxBackoff, cfg.MinBackoff)
	}
	if cfg.ProgressInterval == 0 {
		cfg.ProgressInterval = DefaultProgressInterval
	}
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
	}
	if cfg.PidsLimit == 0 {
		cfg.PidsLimit = DefaultPidsLimit
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.CacheMountRoot == "" {
		cfg.CacheMountRoot = strings.TrimRight(cfg.CacheRoot, "/") + "-mounts"
	}
	if cfg.InputRoot == "" {
		cfg.InputRoot = strings.TrimRight(cfg.WorkRoot, "/") + "-inputs"
	}
	// The host's caches hold every tenant's inputs and files: readable by
	// the host alone (tasks see theirs through their sandbox's mounts).
	// MkdirAll leaves an existing directory's mode, hence the chmod.
	for _, dir := range []string{cfg.InputRoot, cfg.CacheRoot, cfg.CacheMountRoot} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create host cache: %w", err)
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			return nil, fmt.Errorf("host cache: %w", err)
		}
	}
	return &Agent{cfg: cfg, log: cfg.Logger, clk: cfg.Clock, running: make(map[string]*attempt),
		inputs:      &inputCache{dir: cfg.InputRoot, now: cfg.Clock.Now},
		images:      &imageFetches{root: strings.TrimRight(cfg.WorkRoot, "/") + "-images", log: cfg.Logger},
		cacheMounts: &cacheMounts{root: cfg.CacheMountRoot, maxBytes: cfg.CacheMountMaxBytes, volumeBytes: cacheMountBytes(&cfg), log: cfg.Logger, inUse: map[string]int{}},
		gpus:        gpu.NewAllocator(cfg.Capacity.GPUs)}, nil
}

// InputFetches counts artifact inputs this host fetched from the
// controller (not found in its cache).
func (a *Agent) InputFetches() int64 {
	return a.inputFetches.Load()
}

// HostID is the id the controller gave this host, "" before registration.
func (a *Agent) HostID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hostID
}

// Run registers and serves the controller until ctx is done. Then it kills
// the running attempts, waits up to ShutdownGrace for their finished
// reports, and returns ctx's error.
func (a *Agent) Run(ctx context.Context) error {
	a.clearWorkRoot()
	// The cache-mount volumes a crashed run left mounted are unmounted
	// (each is mounted again on its project's next attempt). The project
	// caches under CacheRoot are not: the local host's warm sandboxes,
	// booted before Run, may have theirs mounted already.
	a.unmountVolumes("cache mounts' filesystems left by an earlier run", a.cfg.CacheMountRoot)
	a.cacheMounts.tidy()
	// Reports outlive ctx by the shutdown grace, so that attempts killed
	// by the shutdown are still reported.
	reportCtx, cancelReports := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelReports()
	// Attempts get their own parent so that shutdown can tell its kills
	// apart from the controller's.
	attemptCtx, killAll := context.WithCancel(context.WithoutCancel(ctx))
	defer killAll()

	err := a.loop(ctx, attemptCtx, reportCtx)

	a.mu.Lock()
	a.shutdown = true
	for _, at := range a.running {
		at.kill(true)
	}
	a.mu.Unlock()
	done := make(chan struct{})
	go func() { a.wg.Wait(); close(done) }()
	t := time.NewTimer(a.cfg.ShutdownGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		a.log.Warn("shutdown grace expired with reports undelivered")
		cancelReports()
		<-done
	}
	// The projects' cache and cache-mount filesystems stay mounted while
	// the host runs; their images keep the caches for the next start,
	// which mounts them again on first use.
	a.unmountVolumes("the projects' cache filesystems", a.cfg.CacheRoot, a.cfg.CacheMountRoot)
	return err
}

// unmountVolumes unmounts the filesystems mounted below roots (freeing
// their loop devices) and logs what it did as what.
func (a *Agent) unmountVolumes(what string, roots ...string) {
	for _, root := range roots {
		if n, err := sandbox.ReapDisks(root); err != nil {
			a.log.Warn("unmounting "+what, "root", root, "err", err)
		} else if n > 0 {
			a.log.Info("unmounted "+what, "root", root, "count", n)
		}
	}
}

// cacheMountBytes is the size of each project's cache-mount volume, 0
// when the host bounds none.
func cacheMountBytes(cfg *Config) int64 {
	if !cfg.StorageQuota {
		return 0
	}
	return cfg.CacheMountBytes
}

// clearWorkRoot removes what an earlier run of this host left in the work
// root (it crashed, or was killed, with attempts running): their storage
// filesystems are unmounted, which frees their loop devices, and their
// directories go. Nothing runs yet, so nothing there is in use.
func (a *Agent) clearWorkRoot() {
	if n, err := sandbox.ReapDisks(a.cfg.WorkRoot); err != nil {
		a.log.Warn("unmounting attempts' disks left by an earlier run", "err", err)
	} else if n > 0 {
		a.log.Info("unmounted attempts' disks left by an earlier run", "count", n)
	}
	entries, err := os.ReadDir(a.cfg.WorkRoot)
	if err != nil {
		return // not made yet
	}
	for _, e := range entries {
		if err := sandbox.RemoveWorkDir(filepath.Join(a.cfg.WorkRoot, e.Name())); err != nil {
			a.log.Warn("removing an attempt's directory left by an earlier run", "name", e.Name(), "err", err)
		}
	}
}

func (a *Agent) loop(ctx, attemptCtx, reportCtx context.Context) error {
	var b backoff
	interval := a.cfg.PollWait
	for {
		if a.HostID() == "" {
			rctx, cancel := context.WithTimeout(ctx, a.cfg.CallTimeout)
			resp, err := a.cfg.Controller.Register(rctx, &agentproto.RegisterRequest{
				ProtocolVersion: agentproto.ProtocolVersion,
				Driver:          a.cfg.Driver.Name(),
				Profile:         a.cfg.Profile,
				Capacity:        a.cfg.Capacity,
				Running:         a.runningIDs(),
			})
			cancel()
			if err == nil && resp.HostID == "" {
				err = errors.New("controller returned no host id")
			}
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				d := b.next(a.cfg.MinBackoff, a.cfg.MaxBackoff)
				a.log.Warn("register failed", "err", err, "retry_in", d)
				if !sleep(ctx, d) {
					return ctx.Err()
				}
				continue
			}
			b.reset()
			a.mu.Lock()
			a.hostID = resp.HostID
			a.mu.Unlock()
			interval = a.cfg.PollWait
			if hb := time.Duration(resp.HeartbeatIntervalS) * time.Second; hb > 0 && hb < interval {
				interval = hb
			}
			a.log.Info("registered", "host_id", resp.HostID, "protocol_version", resp.ProtocolVersion)
		}

		req := a.pollRequest(interval)
		lctx, cancel := context.WithTimeout(ctx, interval+a.cfg.PollSlack)
		resp, err := a.cfg.Controller.Poll(lctx, req)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, ErrUnknownHost) {
				a.log.Warn("controller forgot this host; registering again", "host_id", req.HostID)
				a.mu.Lock()
				a.hostID = ""
				a.mu.Unlock()
				continue
			}
			d := b.next(a.cfg.MinBackoff, a.cfg.MaxBackoff)
			a.log.Warn("poll failed", "err", err, "retry_in", d)
			if !sleep(ctx, d) {
				return ctx.Err()
			}
			continue
		}
		b.reset()
		for _, id := range resp.Cancel {
			a.cancel(id)
		}
		for _, asg := range resp.Assignments {
			a.start(attemptCtx, reportCtx, asg)
		}
	}
}

func (a *Agent) pollRequest(wait time.Duration) *agentproto.PollRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	free := a.cfg.Capacity
	ids := make([]string, 0, len(a.running))
	for id, at := range a.running {
		ids = append(ids, id)
		if at.ended {
			continue // only its report is pending; its sandbox is gone
		}
		free.CPU -= at.asg.CPU
		free.MemoryMB -= at.asg.MemoryMB
		free.GPUs -= at.asg.GPUs
		free.Slots--
	}
	free.CPU = max(free.CPU, 0)
	free.MemoryMB = max(free.MemoryMB, 0)
	free.GPUs = max(free.GPUs, 0)
	free.Slots = max(free.Slots, 0)
	return &agentproto.PollRequest{HostID: a.hostID, Free: free, Running: ids, WaitS: int(wait / time.Second),
		Paused: a.pausedLocked()}
}

// pausedLocked checks the work dir's free-disk watermark before each poll
// request: under it the host asks for no work, says why, and logs it once
// per change. The caller holds a.mu.
func (a *Agent) pausedLocked() string {
	low, why := a.cfg.DiskFree.Low()
	if !low {
		if a.paused != "" {
			a.log.Info("work dir back over the free-disk watermark; taking work again")
		}
		a.paused = ""
		return ""
	}
	reason := "taking no work: " + why
	if a.paused == "" {
		a.log.Warn("work dir under the free-disk watermark; taking no work until space is freed", "why", why)
	}
	a.paused = reason
	return reason
}

// liveLocked counts the attempts whose sandboxes have not ended, the ones
// that hold a slot. An attempt whose finished report is still on its way
// does not: the controller may hand its slot out again as soon as it has
// recorded that report, which can reach us before the report's own
// acknowledgement does. The caller holds a.mu.
func (a *Agent) liveLocked() int {
	n := 0
	for _, at := range a.running {
		if !at.ended {
			n++
		}
	}
	return n
}

func (a *Agent) runningIDs() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	ids := make([]string, 0, len(a.running))
	for id := range a.running {
		ids = append(ids, id)
	}
	return ids
}

// cancel stops a running attempt at the controller's request.
func (a *Agent) cancel(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if at, ok := a.running[id]; ok {
		a.log.Info("cancelling attempt", "attempt_id", id)
		at.kill(false)
	}
}

// start runs asg in its own goroutines, unless it already runs. An
// assignment beyond the free slots is reported back at once as a host
// error, so the controller requeues it.
func (a *Agent) start(attemptCtx, reportCtx context.Context, asg agentproto.Assignment) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, dup := a.running[asg.AttemptID]; dup {
		a.log.Warn("assignment already running", "attempt_id", asg.AttemptID)
		return
	}
	ctx, cancel := context.WithCancel(attemptCtx)
	at := &attempt{a: a, asg: asg, cancelCtx: cancel, out: &output{}}
	at.rep = newReporter(a, asg.AttemptID, at.out.tail)
	at.out.progress = at.rep.progress
	a.running[asg.AttemptID] = at
	a.wg.Add(2)
	go func() {
		defer a.wg.Done()
		at.rep.loop(reportCtx)
		// Only once the controller has the finished event does the
		// attempt stop counting as running.
		a.mu.Lock()
		delete(a.running, asg.AttemptID)
		a.mu.Unlock()
	}()
	refuse := ""
	if a.shutdown {
		refuse = "host is shutting down"
	} else if a.liveLocked() > a.cfg.Capacity.Slots {
		refuse = "host has no free slot"
	} else if low, why := a.cfg.DiskFree.Low(); low {
		// A controller that does not know Paused assigned anyway.
		refuse = "host is taking no work: " + why
	}
	go func() {
		defer a.wg.Done()
		defer cancel()
		at.run(ctx, refuse)
	}()
}

// sleep waits d or until ctx is done; it reports whether it slept fully.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
