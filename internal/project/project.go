// Package project owns projects: their metadata, shared state, readiness and
// (in push.go) the uploads of their code.
package project

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
)

// ActiveJobCounter tells how many queued or running jobs a project has;
// the job service implements it. Nil means no jobs exist yet.
type ActiveJobCounter interface {
	ProjectActiveJobCount(ctx context.Context, projectID string) (int, error)
}

// Service manages projects.
type Service struct {
	store   store.Store
	clock   clock.Clock
	log     *slog.Logger
	dataDir string
	jobs    ActiveJobCounter
	onBuild func(outcome string, d time.Duration)

	preparer Preparer
	floor    FloorChecker
	contexts ContextStore

	mu     sync.Mutex
	builds *builds // set once RunBuilds runs

	// The build queue's shape and the per-account caps (quota.go).
	buildWorkers     int
	buildsPerAccount int
	maxBuildTime     time.Duration
	quotas           Quotas
	quotaLocks       quotaLocks
	uploads          uploads

	// Background work (runtime preparation) lives until Close.
	bgCtx    context.Context
	bgCancel context.CancelFunc
	wg       sync.WaitGroup
}

// Config wires a Service.
type Config struct {
	Store  store.Store
	Clock  clock.Clock
	Logger *slog.Logger
	// Jobs is the job service; nil means no jobs exist (Delete never
	// finds one running).
	Jobs ActiveJobCounter
	// Preparer is the fleet Init prepares revisions on; nil means no hosts.
	Preparer Preparer
	// Floor is the balance check Init makes first (billing); nil means none.
	Floor FloorChecker
	// DataDir holds push uploads and build contexts (under pushes/).
	DataDir string
	// Contexts, when set, keeps each push's tarball until its build ends,
	// where every controller reads it: the build then runs on whichever
	// controller holds the build duty. Nil keeps build contexts under
	// DataDir, for the one controller.
	Contexts ContextStore
	// OnBuild, when set, is told how each build ended (published, failed,
	// platform_error) and how long it took (metrics).
	OnBuild func(outcome string, d time.Duration)
	// BuildWorkers is how many builds the queue runs at once (default
	// DefaultBuildWorkers); it hands them out round-robin by account.
	BuildWorkers int
	// BuildsPerAccount is the most builds of one account the queue runs at
	// once; default one less than BuildWorkers (at least 1), so that a
	// worker is left for the other accounts.
	BuildsPerAccount int
	// MaxBuildTime bounds every build whatever its project's
	// setup_timeout_s says (default DefaultMaxBuildTime).
	MaxBuildTime time.Duration
	// Quotas are the per-account caps; zero fields take their defaults.
	Quotas Quotas
}

// The defaults of the build queue (and of the server's flags).
const (
	DefaultBuildWorkers = 2
	DefaultMaxBuildTime = 30 * time.Minute
)

func New(cfg Config) *Service {
	bg, cancel := context.WithCancel(context.Background())
	onBuild := cfg.OnBuild
	if onBuild == nil {
		onBuild = func(string, time.Duration) {}
	}
	workers := cfg.BuildWorkers
	if workers <= 0 {
		workers = DefaultBuildWorkers
	}
	perAccount := cfg.BuildsPerAccount
	if perAccount <= 0 {
		perAccount = max(1, workers-1)
	}
	maxBuild := cfg.MaxBuildTime
	if maxBuild <= 0 {
		maxBuild = DefaultMaxBuildTime
	}
	return &Service{store: cfg.Store, clock: cfg.Clock, log: cfg.Logger, jobs: cfg.Jobs, dataDir: cfg.DataDir,
		preparer: cfg.Preparer, floor: cfg.Floor, contexts: cfg.Contexts, bgCtx: bg, bgCancel: cancel, onBuild: onBuild,
		buildWorkers: workers, buildsPerAccount: perAccount, maxBuildTime: maxBuild, quotas: cfg.Quotas.withDefaults()}
}

// Get finds a project of the account; another account's project is not found.
func (s *Service) Get(ctx context.Context, accountID, name string) (*store.Project, error) {
	if !ValidName(name) {
		return nil, fault.NotFound("project", name)
	}
	p, err := s.store.ProjectGetByName(ctx, accountID, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.NotFound("project", name)
	}
	if err != nil {
		return nil, fmt.Errorf("get project: %w", err)
	}
	return p, nil
}

// Create validates and stores a new project.
func (s *Service) Create(ctx context.Context, accountID string, w *apiv1.ProjectWrite, sent map[string]json.RawMessage) (*store.Project, error) {
	if err := validate(w, true, sent); err != nil {
		return nil, err
	}
	params := &store.ProjectWriteParams{
		ID: id.New(id.Project), AccountID: accountID, Name: *w.Name,
		SetupTimeoutS: DefaultSetupTimeoutS, RuntimeKind: "oci", RuntimeVersion: 1, Now: s.clock.Now(),
	}
	merge(params, w)
	unlock := s.quotaLocks.lock(accountID)
	defer unlock()
	if err := s.checkProjectQuota(ctx, accountID); err != nil {
		return nil, err
	}
	p, err := s.store.ProjectCreate(ctx, params)
	if errors.Is(err, store.ErrConflict) {
		return nil, fault.Conflict("project_exists", "Choose another name, or update the existing project with PUT.",
			"project %q already exists", *w.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("create project: %w", err)
	}
	return p, nil
}

// Update changes metadata; code only changes through a push.
func (s *Service) Update(ctx context.Context, accountID, name string, w *apiv1.ProjectWrite, sent map[string]json.RawMessage) (*store.Project, error) {
	p, err := s.Get(ctx, accountID, name)
	if err != nil {
		return nil, err
	}
	if err := validate(w, false, sent); err != nil {
		return nil, err
	}
	if w.Name != nil && *w.Name != p.Name {
		return nil, fault.Invalid("rename_unsupported", "Create a new project with the new name and push to it.",
			"a project cannot be renamed")
	}
	params := &store.ProjectWriteParams{
		ID: p.ID, AccountID: accountID, Name: p.Name, RemoteDir: p.RemoteDir, Env: p.Env,
		SetupTimeoutS: p.SetupTimeoutS, RuntimeKind: p.RuntimeKind, ImageRef: p.ImageRef, ImageDigest: p.ImageDigest,
		Manifest: p.Manifest, CachePolicy: p.CachePolicy, RuntimeVersion: p.RuntimeVersion, Now: s.clock.Now(),
	}
	merge(params, w)
	up, err := s.store.ProjectUpdate(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("update project: %w", err)
	}
	return up, nil
}

func merge(dst *store.ProjectWriteParams, w *apiv1.ProjectWrite) {
	if w.RemoteDir != nil {
		dst.RemoteDir = *w.RemoteDir
	}
	if w.Env != nil {
		dst.Env, _ = json.Marshal(w.Env)
	}
	if w.SetupTimeoutS != nil {
		dst.SetupTimeoutS = *w.SetupTimeoutS
	}
	if w.RuntimeKind != nil {
		dst.RuntimeKind = *w.RuntimeKind
	}
	if w.ImageRef != nil {
		dst.ImageRef = *w.ImageRef
	}
	if w.ImageDigest != nil {
		dst.ImageDigest = *w.ImageDigest
	}
	if w.Manifest != nil {
		dst.Manifest = w.Manifest
	}
	if w.CachePolicy != nil {
		// Only an empty policy passes validation: it clears what an
		// older server stored, and shows as null like a project that
		// never had one.
		dst.CachePolicy = nil
	}
	if w.RuntimeVersion != nil {
		dst.RuntimeVersion = *w.RuntimeVersion
	}
}

// List returns the account's projects.
func (s *Service) List(ctx context.Context, accountID string) ([]*store.Project, error) {
	ps, err := s.store.ProjectList(ctx, accountID)
	if err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	return ps, nil
}

// Delete removes a project, its shared state and its uploads, unless jobs
// are still queued or running against it.
func (s *Service) Delete(ctx context.Context, accountID, name string) error {
	p, err := s.Get(ctx, accountID, name)
	if err != nil {
		return err
	}
	if s.jobs != nil {
		n, err := s.jobs.ProjectActiveJobCount(ctx, p.ID)
		if err != nil {
			return fmt.Errorf("count active jobs: %w", err)
		}
		if n > 0 {
			return fault.Conflict("project_has_active_jobs",
				"Wait for the jobs to end, or cancel them with PUT /api/v1/projects/{name}/cancel-queued and PUT /api/v1/jobs/{id}/cancel.",
				"project %q has %d queued or running jobs", name, n).With("active_jobs", n)
		}
	}
	if active, err := s.store.PushActive(ctx, p.ID); err == nil {
		return fault.Conflict("push_in_progress", "Wait for the build to finish, then delete.",
			"project %q has a build in progress", name).With("active_push", active.ID)
	}
	if err := s.store.ProjectDelete(ctx, p.ID); err != nil {
		return fmt.Errorf("delete project: %w", err)
	}
	s.drop(ctx, p.ID)
	return nil
}

// View renders a project for the API.
func View(p *store.Project) *apiv1.Project {
	v := &apiv1.Project{
		Name: p.Name, RemoteDir: p.RemoteDir, SetupTimeoutS: p.SetupTimeoutS, RuntimeKind: p.RuntimeKind,
		Manifest: p.Manifest, CachePolicy: p.CachePolicy, RuntimeVersion: p.RuntimeVersion,
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, Env: map[string]string{},
		ImageRef: optString(p.ImageRef), ImageDigest: optString(p.ImageDigest), ContentHash: optString(p.ContentHash),
	}
	_ = json.Unmarshal(p.Env, &v.Env)
	return v
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
