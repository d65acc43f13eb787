// Package server is Skiff's one composition root: it builds a controller
// (the store, the domain services, the HTTP API and the host protocol, the
// builder, the duties shared with other controllers, the local host) from a
// Config, runs it, and shuts it down in order. `skiff server` parses its
// flags into a Config and calls it; tests start the same assembly, with
// their own parts only at the seams Config names.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
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
	"github.com/skiffhq/skiff/internal/project"
	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/store/postgres"
	"github.com/skiffhq/skiff/internal/store/sqldb"
	"github.com/skiffhq/skiff/internal/wake"
)

// Server is an assembled controller. New builds it; Start listens and
// starts its background work; Shutdown stops it in order; Run does both
// around a context.
type Server struct {
	cfg     Config
	log     *slog.Logger
	dataDir string

	db       *sqldb.DB
	duties   *duties
	broker   *event.Broker
	projects *project.Service
	jobs     *job.Service
	api      *httpapi.Server
	ctrl     *fleet.Controller
	shared   sharedBytes
	local    localHost
	handler  http.Handler
	proxies  []netip.Prefix

	// bg is the background work's context (duties, sweeps, payments, the
	// price feed, the builder); brokerBG the event broker's and the
	// database notifications', which outlive bg until the drain.
	bg, brokerBG         context.Context
	stopBG, stopBrokerBG context.CancelFunc

	ln    net.Listener
	http  *http.Server
	serve chan error
	core  *core

	shutdownOnce sync.Once
	shutdownErr  error
}

// New validates cfg, opens and migrates the store and assembles the
// controller. Nothing listens until Start; a failure closes what was opened.
func New(ctx context.Context, cfg Config) (_ *Server, err error) {
	proxies, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.System{}
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: log, dataDir: dataDir, proxies: proxies}
	s.bg, s.stopBG = context.WithCancel(context.WithoutCancel(ctx))
	s.brokerBG, s.stopBrokerBG = context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	f := &s.cfg
	payCfg, walletPolicy, err := f.Payments.config(f.Listen)
	if err != nil {
		return nil, err
	}
	if s.db, err = f.StoreConfig.Open(ctx); err != nil {
		return nil, err
	}
	db := s.db
	s.duties = newDuties(db, f.DatabaseURL != "", f.DutyLease, clk, log.With("component", "duties"))
	authSvc := auth.New(db, clk, auth.WalletConfig{PublicURL: payCfg.PublicURL, Policy: walletPolicy})
	payments := startPayments(s.bg, log, payCfg, db, clk, s.duties)
	prices, err := f.Rates.source(s.bg, log.With("component", "billing"), s.duties, db)
	if err != nil {
		return nil, err
	}
	bill := billing.New(db, clk, prices)
	// Metrics count the lifecycle events the broker reads; its gauges are
	// read when scraped, once everything below exists.
	set := metrics.New(metrics.Gauges{OpenStreams: func() int { return s.broker.Count() },
		QueueDepth: func() (int64, error) { return db.TaskQueuedCount(context.Background()) },
		Hosts:      func() map[string]int { return s.ctrl.HostCounts() }})
	// The broker wakes the streams: after each local commit (the jobs
	// service writes through NotifyingStore) and, on PostgreSQL, on the
	// notification of a commit on any controller.
	s.broker = event.New(event.Config{Feed: db, Log: log.With("component", "events"), OnEvent: set.ObserveEvent})
	if err := s.broker.Start(s.brokerBG); err != nil {
		return nil, fmt.Errorf("start event broker: %w", err)
	}
	// The job service wakes what the controller's long-polling hosts wait
	// on; neither needs the other to exist first.
	hostWake := wake.New()
	if f.DatabaseURL != "" {
		// A job event committed on any controller may be new work or a
		// cancel for the hosts polling this one.
		go postgres.Listen(s.brokerBG, f.DatabaseURL, postgres.EventChannel, func() { s.broker.Wake(); hostWake.Wake() },
			log.With("component", "events"))
	}
	limits := submit.Limits{Presets: submit.DefaultPresets()}
	if err := submit.ValidatePresets(limits); err != nil {
		return nil, err
	}
	imagesDir := filepath.Join(dataDir, "images")
	s.jobs = job.New(job.Config{Store: event.NotifyingStore(db, s.broker), Clock: clk, Logger: log.With("component", "jobs"),
		Billing: bill, Limits: limits, Wake: hostWake})
	hostImages := &ociimage.Cache{
		Root: filepath.Join(dataDir, "host", "images"), MountPoints: sandbox.MountPoints(), Logger: log.With("component", "host"),
	}
	local, err := fleet.NewLocal(filepath.Join(dataDir, "host"), imagesDir, hostImages)
	if err != nil {
		return nil, err
	}
	if s.shared, err = openShared(ctx, f, imagesDir, log); err != nil {
		return nil, err
	}
	var images fleet.ImageSource
	if s.shared.Images != nil {
		images = s.shared.Images
		local.SetImages(s.shared.Images)
	}
	// One data-source cache for the local host: init fills it, tasks read it.
	dataSources, err := f.Data.Cache(filepath.Join(localWorkBase(f, dataDir), "data"), log.With("component", "host"))
	if err != nil {
		return nil, err
	}
	local.DataSources, local.ProjectEnv = dataSources, projectEnv(db)
	s.local = localHost{local: local, images: hostImages, data: dataSources}
	s.projects = project.New(project.Config{Store: db, Clock: clk, Logger: log, DataDir: f.DataDir,
		Jobs: s.jobs, Preparer: local, Floor: bill, OnBuild: set.ObserveBuild, Contexts: s.shared.Contexts,
		BuildWorkers: f.Fair.BuildWorkers, BuildsPerAccount: f.Fair.BuildsPerAccount, MaxBuildTime: f.Fair.BuildTimeout,
		Quotas: f.Fair.quotas()})
	if f.DatabaseURL != "" {
		go postgres.Listen(s.brokerBG, f.DatabaseURL, postgres.PushChannel, s.projects.WakeBuilds, log.With("component", "builds"))
	}
	arts, err := f.Artifacts.service(ctx, db, clk, log.With("component", "artifacts"), dataDir)
	if err != nil {
		return nil, err
	}
	dataDisk := &diskfree.Checker{Dir: dataDir, Min: f.MinFreeDisk}
	s.api = httpapi.New(httpapi.Config{
		Logger: log, Clock: clk, Store: db, Auth: authSvc, Billing: bill,
		Projects: s.projects, Jobs: s.jobs, Artifacts: arts, Version: f.Version, Payments: payments,
		AuthRatePerAddress: f.Payments.RatePerAddress, AuthRatePerIP: f.Payments.RatePerIP,
		Streams: httpapi.StreamConfig{Broker: s.broker, Timeout: f.Streams.Timeout, PingInterval: f.Streams.PingInterval,
			PerAccount: f.Streams.PerAccount},
		Metrics: set, MetricsToken: f.MetricsToken, TrustedProxies: proxies,
		Limits: &httpapi.Limits{WaitlistPerMinute: f.Front.WaitlistRate, FeedbackPerMinute: f.Front.FeedbackRate,
			RedeemPerMinute: httpapi.DefaultLimits.RedeemPerMinute},
		HostBinary: f.HostBinary, RunscBinary: f.Build.Runsc,
		DiskFree: dataDisk,
	})
	sweeper := &artifact.Sweeper{Tasks: append(f.Artifacts.sweepTasks(arts, s.jobs, clk), expirySweepTasks(authSvc, db, clk)...),
		Logger: log.With("component", "sweeper")}
	s.duties.run(s.bg, dutySweeps, sweeper.Run)
	s.ctrl = fleet.NewController(fleet.ControllerConfig{Store: db, Jobs: s.jobs, Wake: hostWake, Clock: clk, Artifacts: arts,
		Log: log.With("component", "controller"), ImagesDir: imagesDir, Images: images, Presence: s.duties.presence,
		HeartbeatInterval: f.Heartbeat, SeedsDir: filepath.Join(dataDir, "seeds")})
	mux := http.NewServeMux()
	mux.Handle("/agent/v1/", httpapi.AgentHandler(s.ctrl, log.With("component", "agentapi"), dataDisk))
	mux.Handle("/", s.api)
	s.handler = mux
	return s, nil
}

// Start listens on Config.Listen, serves the API and the host protocol, and
// starts the builder, the fleet's sweeps and the local host, which reaches
// this controller over loopback like a remote host.
func (s *Server) Start(ctx context.Context) error {
	f := &s.cfg
	ln, err := net.Listen("tcp", f.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	s.ln = f.Edges.listener(ln, s.proxies, s.log.With("component", "http"))
	s.http = f.Edges.server(httpapi.MinBodyRate(f.Edges.bodyRate(), s.log.With("component", "http"), s.handler),
		slog.NewLogLogger(s.log.Handler(), slog.LevelWarn))
	s.serve = make(chan error, 1)
	go func() { s.serve <- s.http.Serve(s.ln) }()
	c, err := startCore(s.bg, s.log, f, s.duties, s.shared.Images, s.dataDir, s.projects, s.local, s.ctrl, "http://"+s.Addr())
	if err != nil {
		_ = s.http.Close()
		return err
	}
	s.core = c
	s.api.SetCoreStarted(true)
	return nil
}

// Addr is the address the API listens on, once Start has returned.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Store is the server's store, for tests and operator commands that look
// at what it wrote.
func (s *Server) Store() store.Store { return s.db }

// Run starts the server, serves until ctx ends (SIGTERM, in `skiff
// server`) or serving fails, and shuts it down.
func (s *Server) Run(ctx context.Context) error {
	start := time.Now()
	if err := s.Start(ctx); err != nil {
		s.close()
		return err
	}
	s.log.Info("skiff server started", "listen", s.Addr(), "store", s.db.Engine(), "data_dir", s.cfg.DataDir,
		"version", s.cfg.Version, "startup_ms", time.Since(start).Milliseconds())
	var serveErr error
	select {
	case err := <-s.serve:
		serveErr = fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.DrainTimeout)
	defer cancel()
	if err := s.Shutdown(drainCtx); err != nil && serveErr == nil {
		return err
	}
	return serveErr
}

// Shutdown stops the server in order: it stops taking work, stops the
// local host (which kills its attempts and reports them, requeued free,
// while the API still answers it), ends the open streams (their clients
// reconnect with Last-Event-ID), drains requests in flight until ctx ends,
// then closes the store.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() {
		s.log.Info("shutting down", "drain_timeout", s.cfg.DrainTimeout.String())
		s.api.SetDraining(true)
		s.stopBG()
		if s.core != nil {
			s.core.stop()
		}
		s.stopBrokerBG()
		if s.http != nil {
			if err := s.http.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Warn("drain incomplete; closing remaining connections", "err", err)
				_ = s.http.Close()
			}
		}
		s.close()
		s.log.Info("stopped")
	})
	return s.shutdownErr
}

// close releases what New opened, in reverse order.
func (s *Server) close() {
	s.stopBG()
	s.stopBrokerBG()
	if s.projects != nil {
		s.projects.Close()
	}
	if s.db != nil {
		if err := s.db.Close(); err != nil {
			s.log.Error("close store", "err", err)
			s.shutdownErr = err
		}
		s.db = nil
	}
}
