package project

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/project/manifest"
	"github.com/skiffhq/skiff/internal/store"
)

// ImageBuilder builds a project's image from its extracted context. The
// build package implements it (through a small adapter in the composition
// root); tests may use a fake.
type ImageBuilder interface {
	Build(ctx context.Context, req BuildRequest) (*BuildResult, error)
}

// BuildRequest is one build of one push.
type BuildRequest struct {
	PushID              string
	ContextDir          string // the build context (the tarball root or its build.context)
	Dockerfile          string // absolute path of the Dockerfile
	BuildArgs           map[string]string
	Target              string
	Tag                 string
	Timeout             time.Duration
	ValidateExecutables []string
	ValidateFiles       []string
	Log                 io.Writer // the build's output, streamed
}

// BuildResult is a published image.
type BuildResult struct {
	ImageRef    string
	ImageDigest string
}

// UserBuildError is a build that failed because of the project (a failing
// RUN step, a timeout, a validation miss), as opposed to the platform.
type UserBuildError struct {
	Message    string
	NextAction string
}

func (e *UserBuildError) Error() string { return e.Message }

// MaxBuildStarts bounds how often one push is started: a build that keeps
// crashing the server is failed instead of retried forever.
const MaxBuildStarts = 3

// LogTailBytes bounds the stored log tail of a build.
const LogTailBytes = 16 << 10

// builds runs queued pushes through the builder on a few workers, fairly
// across accounts (fairQueue), and resumes what a previous run left
// unfinished.
type builds struct {
	svc     *Service
	builder ImageBuilder
	wakeCh  chan struct{}

	mu    sync.Mutex
	queue *fairQueue
	busy  int // workers building now
	wg    sync.WaitGroup
}

func (b *builds) wake() {
	select {
	case b.wakeCh <- struct{}{}:
	default:
	}
}

// WakeBuilds tells the build queue, when it runs in this process, to look
// for queued pushes now: after a push here, or the notification of a push
// on another controller.
func (s *Service) WakeBuilds() {
	s.mu.Lock()
	b := s.builds
	s.mu.Unlock()
	if b != nil {
		b.wake()
	}
}

// RunBuilds serves the build queue until ctx ends, then waits for the
// builds it started (they stop with ctx and resume at the next start). Call
// it once, in its own goroutine; pushes made before it runs wait in the
// store. With several controllers it runs under the "builds" duty, on one
// of them at a time; PushStart is the claim either way.
func (s *Service) RunBuilds(ctx context.Context, builder ImageBuilder) error {
	b := &builds{svc: s, builder: builder, wakeCh: make(chan struct{}, 1), queue: newFairQueue(s.buildsPerAccount)}
	s.mu.Lock()
	s.builds = b
	s.mu.Unlock()
	defer b.wg.Wait()
	if err := b.recover(ctx); err != nil {
		return err
	}
	s.log.Info("build queue running", "workers", s.buildWorkers, "builds_per_account", s.buildsPerAccount,
		"max_build_time", s.maxBuildTime.String())
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		if err := b.dispatch(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("build queue", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-b.wakeCh:
		case <-tick.C:
		}
	}
}

// recover handles builds a crash or restart interrupted: each is queued
// again, unless it was already started MaxBuildStarts times.
func (b *builds) recover(ctx context.Context) error {
	pushes, err := b.svc.store.PushListUnfinished(ctx)
	if err != nil {
		return fmt.Errorf("list unfinished pushes: %w", err)
	}
	now := b.svc.clock.Now()
	for _, pu := range pushes {
		if pu.Status != store.PushBuilding {
			continue
		}
		if pu.Attempts >= MaxBuildStarts {
			b.finishFailed(ctx, pu, fmt.Sprintf("the build was interrupted by a server restart %d times", pu.Attempts),
				"Push again; if builds keep being interrupted, check the server's memory and logs.", pu.LogTail)
			continue
		}
		if err := b.svc.store.PushRequeue(ctx, pu.ID, now); err != nil && !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("requeue push %s: %w", pu.ID, err)
		}
		b.svc.log.Info("build resumed after restart", "push", pu.ID, "starts", pu.Attempts)
	}
	return nil
}

// dispatch starts queued pushes, the fair queue's pick each, while a
// worker is free. A worker that ends wakes the queue again.
func (b *builds) dispatch(ctx context.Context) error {
	for ctx.Err() == nil {
		b.mu.Lock()
		free := b.busy < b.svc.buildWorkers
		b.mu.Unlock()
		if !free {
			return nil
		}
		pushes, err := b.svc.store.PushListUnfinished(ctx)
		if err != nil {
			return err
		}
		b.mu.Lock()
		next := b.queue.next(pushes)
		b.mu.Unlock()
		if next == nil {
			return nil
		}
		pu, err := b.svc.store.PushStart(ctx, next.ID, b.svc.clock.Now())
		if errors.Is(err, store.ErrConflict) {
			continue // it ended meanwhile (its project was deleted, or another controller took it)
		}
		if err != nil {
			return fmt.Errorf("start push %s: %w", next.ID, err)
		}
		b.mu.Lock()
		b.queue.started(pu.AccountID)
		b.busy++
		b.mu.Unlock()
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer func() {
				b.mu.Lock()
				b.queue.ended(pu.AccountID)
				b.busy--
				b.mu.Unlock()
				b.wake()
			}()
			b.run(ctx, pu)
		}()
	}
	return nil
}

// run builds one push that dispatch started.
func (b *builds) run(ctx context.Context, pu *store.Push) {
	s := b.svc
	p, err := s.store.ProjectGetByID(ctx, pu.ProjectID)
	if err != nil {
		b.finishFailed(ctx, pu, "the project was deleted during the build", "", "")
		return
	}
	var m manifest.Manifest
	if err := json.Unmarshal(pu.Manifest, &m); err != nil {
		b.finishFailed(ctx, pu, "stored manifest unreadable: "+err.Error(), "Push again.", "")
		return
	}
	ctxDir, err := s.localContext(ctx, pu)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("build context unavailable", "push", pu.ID, "err", err)
			b.finishFailed(ctx, pu, "the build failed on the platform side: its context could not be read; this was not caused by your project",
				"Push again; if it keeps failing, report it with push_ref "+pu.ID+".", "")
		}
		return
	}
	tail := newTailWriter(LogTailBytes)
	timeout, capped := s.buildTimeout(p)
	if capped {
		fmt.Fprintf(tail, "skiff: this server stops builds after %s, less than the project's setup_timeout_s of %ds\n",
			timeout, p.SetupTimeoutS)
	}
	stopFlush := b.flushTail(ctx, pu.ID, tail)
	start := time.Now()
	res, err := b.builder.Build(ctx, BuildRequest{
		PushID: pu.ID, ContextDir: filepath.Join(ctxDir, m.Build.Context),
		Dockerfile: filepath.Join(ctxDir, m.Build.Dockerfile), BuildArgs: m.Build.Args, Target: m.Build.Target,
		Tag: p.ID + "-" + pu.ID, Timeout: timeout,
		ValidateExecutables: m.Validation.Executables, ValidateFiles: m.Validation.Files, Log: tail,
	})
	stopFlush()
	log := s.log.With("push", pu.ID, "project", p.ID, "account", pu.AccountID, "duration_ms", time.Since(start).Milliseconds())
	switch {
	case err == nil:
		if err := s.keepSeeds(pu, &m); err != nil {
			log.Error("keep cache mount seeds", "err", err)
			b.finishFailed(ctx, pu, "the build failed on the platform side; this was not caused by your project",
				"Push again in a few minutes; if it keeps failing, report it with push_ref "+pu.ID+".", tail.String())
			return
		}
		now := s.clock.Now()
		err = s.store.InTx(ctx, func(q store.Querier) error {
			if _, err := q.PushFinish(ctx, &store.PushFinishParams{ID: pu.ID, Status: store.PushPublished,
				ImageRef: res.ImageRef, ImageDigest: res.ImageDigest, LogTail: tail.String(), Now: now}); err != nil {
				return err
			}
			return q.ProjectSetContentHash(ctx, p.ID, pu.ContentHash, now)
		})
		if err != nil {
			log.Error("record published build", "err", err)
			return
		}
		log.Info("build published", "image_digest", res.ImageDigest)
		s.onBuild("published", time.Since(start))
		s.removeContext(pu)
	case ctx.Err() != nil:
		// Shutdown: leave it building; the next start requeues it.
		log.Info("build interrupted by shutdown; it resumes at the next start")
	default:
		var ue *UserBuildError
		if errors.As(err, &ue) {
			msg, next := ue.Message, ue.NextAction
			if capped && time.Since(start) >= timeout {
				// The server's cap, not setup_timeout_s, ended it: raising
				// setup_timeout_s would not help.
				next = fmt.Sprintf("Make the build faster (keep slow installs in early layers, fetch large data at run time with data_sources), then push again: this server stops every build after %s, whatever setup_timeout_s says.", timeout)
			}
			log.Info("build failed", "reason", msg)
			s.onBuild("failed", time.Since(start))
			b.finishFailed(ctx, pu, msg, next, tail.String())
			return
		}
		log.Error("build failed on the platform side", "err", err)
		s.onBuild("platform_error", time.Since(start))
		b.finishFailed(ctx, pu, "the build failed on the platform side; this was not caused by your project",
			"Push again in a few minutes; if it keeps failing, report it with push_ref "+pu.ID+".", tail.String())
	}
}

// buildTimeout is how long p's build may run: its setup_timeout_s, cut to
// the server's MaxBuildTime (capped then).
func (s *Service) buildTimeout(p *store.Project) (d time.Duration, capped bool) {
	d = time.Duration(p.SetupTimeoutS) * time.Second
	if d <= 0 {
		d = time.Duration(DefaultSetupTimeoutS) * time.Second
	}
	if d > s.maxBuildTime {
		return s.maxBuildTime, true
	}
	return d, false
}

func (b *builds) finishFailed(ctx context.Context, pu *store.Push, msg, next, logTail string) {
	if next == "" {
		next = "Fix the Dockerfile or " + ManifestFile + ", then push again."
	}
	if _, err := b.svc.store.PushFinish(ctx, &store.PushFinishParams{ID: pu.ID, Status: store.PushFailed,
		Error: msg, NextAction: next, LogTail: logTail, Now: b.svc.clock.Now()}); err != nil && !errors.Is(err, store.ErrConflict) {
		b.svc.log.Error("record failed build", "push", pu.ID, "err", err)
	}
	b.svc.removeContext(pu)
}

// flushTail stores the running build's log tail every two seconds, so the
// push record shows progress.
func (b *builds) flushTail(ctx context.Context, pushID string, tail *tailWriter) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		last := ""
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if cur := tail.String(); cur != last {
					last = cur
					_ = b.svc.store.PushSetLogTail(ctx, pushID, cur, b.svc.clock.Now())
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func (s *Service) removeContext(pu *store.Push) {
	if pu.ContextDir == "" {
		return
	}
	if strings.HasPrefix(pu.ContextDir, sharedContextPrefix) {
		s.dropSharedContext(context.WithoutCancel(s.bgCtx), pu)
		if err := os.RemoveAll(s.pushDir(pu.ID)); err != nil {
			s.log.Warn("remove build context", "push", pu.ID, "err", err)
		}
		return
	}
	// The context dir is <data>/pushes/<id>/context; remove the push dir.
	if err := os.RemoveAll(filepath.Dir(pu.ContextDir)); err != nil {
		s.log.Warn("remove build context", "push", pu.ID, "err", err)
	}
}

// tailWriter keeps the last n bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	n   int
	buf []byte
}

func newTailWriter(n int) *tailWriter { return &tailWriter{n: n} }

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.n; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
