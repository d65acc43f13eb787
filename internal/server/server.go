package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/auth"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/diskfree"
	"github.com/skiffhq/skiff/internal/event"
	"github.com/skiffhq/skiff/internal/fleet"
	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/job/submit"
	"github.com/skiffhq/skiff/internal/metrics"
	"github.com/skiffhq/skiff/internal/ociimage"
	"github.com/skiffhq/skiff/internal/payment"
	"github.com/skiffhq/skiff/internal/project"
	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/store/postgres"
	"github.com/skiffhq/skiff/internal/wake"
)

// Server is one assembled controller: made by New, serving from Run until
// its context ends or Shutdown is called.
type Server struct {
	cfg     Config
	log     *slog.Logger
	clk     clock.Clock
	start   time.Time
	dataDir string // absolute

	db        store.Store
	auth      *auth.Service
	billing   *billing.Service
	payments  *payment.Service
	broker    *event.Broker
	metrics   *metrics.Set
	jobs      *job.Service
	projects  *project.Service
	artifacts *artifact.Service
	blob      artifact.Blob
	ctrl      *fleet.Controller
	api       *httpapi.Server
	duties    *duties
	shared    sharedBytes
	local     localHost

	ln   net.Listener
	http *http.Server
	url  string

	// bg is the life of the background work New starts (broker,
	// notifications, duties); stopBG ends it at shutdown.
	bg     context.Context
	stopBG context.CancelFunc
	bgWG   sync.WaitGroup // the goroutines that run under bg
	// closers release what New opened, last first.
	closers []func()

	runOnce  sync.Once
	stopOnce sync.Once
	ready    chan struct{} // closed once Run has started everything
	stop     chan struct{} // closed by Shutdown
	done     chan struct{} // closed when Run has stopped everything
	released sync.Once
}

// New assembles a controller: it opens (and migrates) the store, makes
// every service, starts the event broker and the duties that need no
// listener (payments, price feed, sweeps), and listens. Serving, the
// build queue, the fleet's sweeps and the local host start with Run.
func New(ctx context.Context, cfg Config) (_ *Server, err error) {
	s := &Server{cfg: cfg, log: cfg.Logger, clk: cfg.Clock, start: time.Now(),
		ready: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.clk == nil {
		s.clk = clock.System{}
	}
	defer func() {
		if err != nil {
			s.release()
		}
	}()
	log := s.log
	if cfg.DataDir == "" {
		return nil, errors.New("server: Config.DataDir is required")
	}
	if s.dataDir, err = filepath.Abs(cfg.DataDir); err != nil {
		return nil, err
	}
	if err := s.openStore(ctx); err != nil {
		return nil, err
	}
	db, clk := s.db, s.clk
	s.bg, s.stopBG = context.WithCancel(context.WithoutCancel(ctx))
	s.closers = append(s.closers, func() {
		s.stopBG()
		s.bgWG.Wait() // before the store closes under them
	})
	s.duties = newDuties(db, cfg.DatabaseURL != "", cmp.Or(cfg.DutyLease, 10*time.Second), clk, log.With("component", "duties"))

	// The listener comes first among the parts that face out: wallet
	// messages and payment resources name its URL.
	if err := s.listen(); err != nil {
		return nil, err
	}
	pay := cfg.Payments.Config
	if pay.PublicURL == "" {
		pay.PublicURL = s.url
	}
	s.auth = auth.New(db, clk, auth.WalletConfig{PublicURL: pay.PublicURL, Policy: cfg.Payments.WalletPolicy})
	s.payments = s.startPayments(pay)
	prices, err := s.priceSource()
	if err != nil {
		return nil, err
	}
	s.billing = billing.New(db, clk, prices)
	if s.payments.Enabled() {
		s.billing = s.billing.WithQuoteAttrs(s.payments.Attrs)
	}

	// Metrics count the lifecycle events the broker reads; its gauges are
	// read when scraped, once everything below exists.
	s.metrics = metrics.New(metrics.Gauges{OpenStreams: func() int { return s.broker.Count() },
		QueueDepth: func() (int64, error) { return db.TaskQueuedCount(context.Background()) },
		Hosts:      func() map[string]int { return s.ctrl.HostCounts() }})
	// The broker wakes the streams: after each local commit (the jobs
	// service writes through NotifyingStore) and, on PostgreSQL, on the
	// notification of a commit on any controller.
	s.broker = event.New(event.Config{Feed: db, Log: log.With("component", "events"), OnEvent: s.metrics.ObserveEvent,
		PollInterval: cfg.Streams.BrokerPoll, Buffer: cfg.Streams.BrokerBuffer})
	if err := s.broker.Start(s.bg); err != nil {
		return nil, fmt.Errorf("start event broker: %w", err)
	}
	// The job service wakes what the controller's long-polling hosts wait
	// on; neither needs the other to exist first.
	hostWake := wake.New()
	if cfg.DatabaseURL != "" {
		// A job event committed on any controller may be new work or a
		// cancel for the hosts polling this one.
		s.goBG(func(ctx context.Context) {
			postgres.Listen(ctx, cfg.DatabaseURL, postgres.EventChannel, func() { s.broker.Wake(); hostWake.Wake() },
				log.With("component", "events"))
		})
	}
	limits := submit.Limits{Presets: submit.DefaultPresets()}
	if err := submit.ValidatePresets(limits); err != nil {
		return nil, err
	}
	imagesDir := filepath.Join(s.dataDir, "images")
	s.jobs = job.New(job.Config{Store: event.NotifyingStore(db, s.broker), Clock: clk, Logger: log.With("component", "jobs"),
		Billing: s.billing, Limits: limits, Wake: hostWake})
	if err := s.prepareLocalHost(imagesDir); err != nil {
		return nil, err
	}
	if s.shared, err = s.openShared(ctx, imagesDir); err != nil {
		return nil, err
	}
	var images fleet.ImageSource
	if s.shared.images != nil {
		images = s.shared.images
		s.local.local.SetImages(s.shared.images)
	}
	s.projects = project.New(project.Config{Store: db, Clock: clk, Logger: log, DataDir: s.dataDir,
		Jobs: s.jobs, Preparer: s.local.local, Floor: s.billing, OnBuild: s.metrics.ObserveBuild, Contexts: s.shared.contexts,
		BuildWorkers: cfg.Fair.BuildWorkers, BuildsPerAccount: cfg.Fair.BuildsPerAccount, MaxBuildTime: cfg.Fair.BuildTimeout,
		Quotas: cfg.Fair.Quotas})
	s.closers = append(s.closers, s.projects.Close)
	if cfg.DatabaseURL != "" {
		s.goBG(func(ctx context.Context) {
			postgres.Listen(ctx, cfg.DatabaseURL, postgres.PushChannel, s.projects.WakeBuilds, log.With("component", "builds"))
		})
	}
	if s.artifacts, err = s.artifactService(ctx); err != nil {
		return nil, err
	}
	dataDisk := &diskfree.Checker{Dir: s.dataDir, Min: cfg.MinFreeDisk, Stat: cfg.DiskStat}
	s.ctrl = fleet.NewController(fleet.ControllerConfig{Store: db, Jobs: s.jobs, Wake: hostWake, Clock: clk, Artifacts: s.artifacts,
		Log: log.With("component", "controller"), ImagesDir: imagesDir, Images: images, Presence: s.duties.presence,
		HeartbeatInterval: cmp.Or(cfg.Heartbeat, 10*time.Second), SeedsDir: filepath.Join(s.dataDir, "seeds")})
	s.api = httpapi.New(httpapi.Config{
		Logger: log, Clock: clk, Store: db, Auth: s.auth, Billing: s.billing,
		Projects: s.projects, Jobs: s.jobs, Artifacts: s.artifacts, Version: cfg.Version, Payments: s.payments,
		AuthRatePerAddress: cfg.Payments.AuthRatePerAddress, AuthRatePerIP: cfg.Payments.AuthRatePerIP,
		Streams: httpapi.StreamConfig{Broker: s.broker, Timeout: cfg.Streams.Timeout, PingInterval: cfg.Streams.PingInterval,
			PerAccount: cfg.Streams.PerAccount},
		Metrics: s.metrics, MetricsToken: cfg.MetricsToken, TrustedProxies: cfg.Front.TrustedProxies,
		Limits:     cfg.Front.Limits,
		HostBinary: cfg.HostBinary, RunscBinary: s.runsc(),
		DiskFree: dataDisk, Hosts: s.ctrl,
	})
	sweeper := &artifact.Sweeper{Tasks: append(s.artifactSweepTasks(), s.expirySweepTasks()...),
		Logger: log.With("component", "sweeper")}
	s.runDuty(dutySweeps, sweeper.Run)
	mux := http.NewServeMux()
	mux.Handle("/agent/v1/", httpapi.AgentHandler(s.ctrl, log.With("component", "agentapi"), dataDisk))
	mux.Handle("/", s.api)
	s.http = s.httpServer(mux)
	return s, nil
}

// Run serves the API, starts the build queue, the fleet's sweeps and the
// local host, and blocks until ctx ends or Shutdown is called; it then
// stops everything in order and returns nil, or the error that stopped
// serving. Run may be called once.
func (s *Server) Run(ctx context.Context) error {
	err := errors.New("server: Run after Shutdown, or a second Run")
	s.runOnce.Do(func() { err = s.run(ctx) })
	return err
}

func (s *Server) run(ctx context.Context) error {
	defer close(s.done)
	defer s.release()
	log := s.log
	serveErr := make(chan error, 1)
	go func() { serveErr <- s.http.Serve(s.ln) }()
	c, err := s.startCore(ctx)
	if err != nil {
		_ = s.http.Close()
		return err
	}
	defer c.stop() // on early returns; the shutdown below stops it first

	s.api.SetCoreStarted(true)
	close(s.ready)
	log.Info("skiff server started", "listen", s.ln.Addr().String(), "store", s.db.Engine(), "data_dir", s.cfg.DataDir,
		"version", s.cfg.Version, "startup_ms", time.Since(s.start).Milliseconds())

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	case <-s.stop:
	}
	drain := cmp.Or(s.cfg.DrainTimeout, 20*time.Second)
	log.Info("shutting down", "drain_timeout", drain.String())
	s.api.SetDraining(true)
	// The local host stops first, while the API still answers it: it kills
	// its attempts and reports them (they are requeued free) before the
	// listener closes.
	c.stop()
	// Open streams end now (their subscriptions close), so that draining
	// does not wait for them; their clients reconnect with Last-Event-ID.
	s.stopBG()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := s.http.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("drain incomplete; closing remaining connections", "err", err)
		_ = s.http.Close()
	}
	log.Info("stopped")
	return nil
}

// Shutdown stops a running server as a SIGTERM does and waits, until ctx
// ends, for Run to have stopped everything it started. On a server that
// was never run it releases what New opened.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() { close(s.stop) })
	ran := true
	s.runOnce.Do(func() { ran = false })
	if !ran {
		s.release()
		return nil
	}
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("server shutdown: %w", ctx.Err())
	}
}

// goBG runs fn under the server's background context; shutdown waits
// for it to return before the store closes.
func (s *Server) goBG(fn func(ctx context.Context)) {
	s.bgWG.Go(func() { fn(s.bg) })
}

// runDuty runs fn as the singleton duty name in the background.
func (s *Server) runDuty(name string, fn func(ctx context.Context)) {
	s.goBG(func(ctx context.Context) { s.duties.runner.Run(ctx, name, fn) })
}

// release closes what New opened, last first: the listener, the
// background work, the project service and the store.
func (s *Server) release() {
	s.released.Do(func() {
		if s.ln != nil {
			_ = s.ln.Close()
		}
		for i := len(s.closers) - 1; i >= 0; i-- {
			s.closers[i]()
		}
	})
}

// Ready is closed once Run serves and has started the builder, the
// fleet's sweeps and the local host.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Done is closed once Run has stopped everything it started.
func (s *Server) Done() <-chan struct{} { return s.done }

// URL is the API's base URL, http://host:port without a trailing slash.
func (s *Server) URL() string { return s.url }

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Store is the server's store.
func (s *Server) Store() store.Store { return s.db }

// Clock is the server's clock.
func (s *Server) Clock() clock.Clock { return s.clk }

// The services the server assembled, for tests that set up state or look
// behind the API.
func (s *Server) API() *httpapi.Server            { return s.api }
func (s *Server) Auth() *auth.Service             { return s.auth }
func (s *Server) Billing() *billing.Service       { return s.billing }
func (s *Server) Payments() *payment.Service      { return s.payments }
func (s *Server) Jobs() *job.Service              { return s.jobs }
func (s *Server) Projects() *project.Service      { return s.projects }
func (s *Server) Artifacts() *artifact.Service    { return s.artifacts }
func (s *Server) Blob() artifact.Blob             { return s.blob }
func (s *Server) Broker() *event.Broker           { return s.broker }
func (s *Server) Metrics() *metrics.Set           { return s.metrics }
func (s *Server) Controller() *fleet.Controller   { return s.ctrl }
func (s *Server) HostImages() *ociimage.Cache     { return s.local.images }
func (s *Server) LocalHostDriver() sandbox.Driver { return s.local.driver }
func (s *Server) DataDir() string                 { return s.dataDir }
