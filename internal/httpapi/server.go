// Package httpapi is the HTTP adapter: one route table, decode -> call a
// domain service -> encode. Status codes are chosen in one place (statusOf).
package httpapi

import (
	"log/slog"
	"net/http"
	"net/netip"
	"sync/atomic"

	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/auth"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/contact"
	"github.com/skiffhq/skiff/internal/diskfree"
	"github.com/skiffhq/skiff/internal/docsite"
	"github.com/skiffhq/skiff/internal/enroll"
	"github.com/skiffhq/skiff/internal/event"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/jobview"
	"github.com/skiffhq/skiff/internal/metrics"
	"github.com/skiffhq/skiff/internal/payment"
	"github.com/skiffhq/skiff/internal/project"
	"github.com/skiffhq/skiff/internal/ratelimit"
	"github.com/skiffhq/skiff/internal/store"
)

// AppName is reported by /health and /live.
const AppName = "skiff"

// Config wires the HTTP layer to the domain services.
type Config struct {
	Logger   *slog.Logger
	Clock    clock.Clock
	Store    store.Store
	Auth     *auth.Service
	Billing  *billing.Service
	Projects *project.Service
	Jobs     *job.Service
	// Views reads what the API shows of jobs; nil: one over Store with
	// Jobs' billing and limits.
	Views *jobview.Service
	// Hosts gives the views the shapes of the service's hosts, so that a
	// queued job no host could take says so (fleet.Controller); nil: no
	// such advice. Used only when Views is nil.
	Hosts jobview.HostShapes
	// Artifacts keeps uploaded and produced files (spec 4.7).
	Artifacts *artifact.Service
	Version   string
	// Payments settles quotes over x402 and MPP; nil or unconfigured
	// answers 503 on the payment endpoints.
	Payments *payment.Service
	// AuthRatePerAddress and AuthRatePerIP limit wallet challenge and
	// verify requests per minute (0: the defaults, negative: unlimited).
	AuthRatePerAddress, AuthRatePerIP int
	Streams                           StreamConfig
	// Metrics is served at GET /metrics (nil: 503) to admins, to a bearer
	// MetricsToken (when set) and to requests from loopback.
	Metrics      *metrics.Set
	MetricsToken string
	// Contact stores waitlist sign-ups and feedback; nil: one over Store.
	Contact *contact.Service
	// TrustedProxies are the peers whose X-Forwarded-For is believed when
	// finding a client's IP for rate limits (--trusted-proxy).
	TrustedProxies []netip.Prefix
	// Limits are the public endpoints' rate limits; nil: DefaultLimits.
	Limits *Limits
	// Enroll redeems host enrollment codes and shows hosts to admins; nil:
	// one over Store.
	Enroll *enroll.Service
	// HostBinary and RunscBinary are served to the host installer at
	// /skiff-host/bin/ (this server's platform only); "" answers 404.
	HostBinary, RunscBinary string
	// DiskFree is the data dir's free-disk watermark: under it the
	// writes that store more answer 507 (diskfull.go). Nil checks nothing.
	DiskFree *diskfree.Checker
}

// Server serves the API.
type Server struct {
	log       *slog.Logger
	clock     clock.Clock
	store     store.Store
	auth      *auth.Service
	billing   *billing.Service
	projects  *project.Service
	jobs      *job.Service
	views     *jobview.Service
	artifacts *artifact.Service
	version   string
	payments  *payment.Service

	limitAddress, limitIP *ratelimit.Keyed

	streams    StreamConfig
	streamCaps accountSlots // open streams
	// externalFetches are the external-artifact downloads each account
	// has in flight: each spools up to the upload cap on the data disk.
	externalFetches accountSlots
	// largeBodies bounds the large submission bodies held at once.
	largeBodies bodyBudget
	// streamer runs the streams (package event); this package writes
	// their frames as server-sent events.
	streamer *event.Streams

	metrics      *metrics.Set
	metricsToken string
	diskFree     *diskfree.Checker
	contact      *contact.Service
	enroll       *enroll.Service

	hostBinary, runscBinary string
	docs                    *docsite.Site

	trustedProxies []netip.Prefix
	limits         limiters

	// coreStarted is set once the controller's background loops run;
	// draining once shutdown began. /ready reports both.
	coreStarted atomic.Bool
	draining    atomic.Bool

	// mcp serves POST /mcp: the tools of internal/mcp (docs/mcp.md).
	mcp http.Handler

	handler http.Handler
}

// New builds the server and its route table.
func New(cfg Config) *Server {
	s := &Server{log: cfg.Logger, clock: cfg.Clock, store: cfg.Store, auth: cfg.Auth, billing: cfg.Billing,
		projects: cfg.Projects, jobs: cfg.Jobs, views: cfg.Views, artifacts: cfg.Artifacts, version: cfg.Version, payments: cfg.Payments,
		limitAddress: ratelimit.NewKeyed(orDefault(cfg.AuthRatePerAddress, DefaultAuthRatePerAddress)),
		limitIP:      ratelimit.NewKeyed(orDefault(cfg.AuthRatePerIP, DefaultAuthRatePerIP)),
		streams:      cfg.Streams, metrics: cfg.Metrics, metricsToken: cfg.MetricsToken, diskFree: cfg.DiskFree,
		contact: cfg.Contact, trustedProxies: cfg.TrustedProxies, enroll: cfg.Enroll,
		hostBinary: cfg.HostBinary, runscBinary: cfg.RunscBinary}
	s.streams.fill()
	s.docs = newDocSite()
	s.mcp = s.newMCP()
	if s.views == nil && cfg.Jobs != nil {
		s.views = jobview.New(jobview.Config{Store: cfg.Store, Billing: cfg.Jobs.Billing(), Clock: cfg.Clock,
			Limits: cfg.Jobs.Limits(), Hosts: cfg.Hosts})
	}
	s.streamer = event.NewStreams(event.StreamsConfig{Broker: cfg.Streams.Broker, Store: cfg.Store, Views: s.views,
		Clock: cfg.Clock, Timeout: cfg.Streams.Timeout, PingInterval: cfg.Streams.PingInterval,
		ReplayLimit: cfg.Streams.ReplayLimit})
	if s.enroll == nil {
		s.enroll = enroll.New(cfg.Store, cfg.Clock)
	}
	if s.contact == nil {
		s.contact = contact.New(cfg.Store, cfg.Clock)
	}
	limits := DefaultLimits
	if cfg.Limits != nil {
		limits = *cfg.Limits
	}
	s.limits = newLimiters(limits)
	s.handler = s.middleware(s.mux())
	return s
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// SetCoreStarted marks the controller core as running.
func (s *Server) SetCoreStarted(v bool) { s.coreStarted.Store(v) }

// SetDraining marks the server as shutting down, so /ready answers 503 and
// load balancers stop sending work.
func (s *Server) SetDraining(v bool) { s.draining.Store(v) }
