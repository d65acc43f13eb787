// Package httpapi is the HTTP adapter: one route table, decode -> call a
// domain service -> encode. Status codes are chosen in one place (statusOf).
package httpapi

import (
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/auth"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/project"
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
	// Artifacts keeps uploaded and produced files (spec 4.7).
	Artifacts *artifact.Service
	Version   string
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
	artifacts *artifact.Service
	version   string

	// coreStarted is set once the controller's background loops run;
	// draining once shutdown began. /ready reports both.
	coreStarted atomic.Bool
	draining    atomic.Bool

	handler http.Handler
}

// New builds the server and its route table.
func New(cfg Config) *Server {
	s := &Server{log: cfg.Logger, clock: cfg.Clock, store: cfg.Store, auth: cfg.Auth, billing: cfg.Billing,
		projects: cfg.Projects, jobs: cfg.Jobs, artifacts: cfg.Artifacts, version: cfg.Version}
	s.handler = s.middleware(s.mux())
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// SetCoreStarted marks the controller core as running.
func (s *Server) SetCoreStarted(v bool) { s.coreStarted.Store(v) }

// SetDraining marks the server as shutting down, so /ready answers 503 and
// load balancers stop sending work.
func (s *Server) SetDraining(v bool) { s.draining.Store(v) }
