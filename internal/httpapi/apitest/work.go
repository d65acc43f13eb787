package apitest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/project"
	"github.com/skiffhq/skiff/internal/store"
)

// Publish gives the account's project a published revision without a
// build, so that jobs can be submitted to it.
func (e *Env) Publish(tb testing.TB, accountID, name string) {
	tb.Helper()
	e.PublishHash(tb, accountID, name, "sha256:"+strings.Repeat("a", 64))
}

// PublishHash is Publish with the revision's content hash.
func (e *Env) PublishHash(tb testing.TB, accountID, name, contentHash string) {
	tb.Helper()
	ctx, db, now := tb.Context(), e.Store, e.Clock.Now()
	p, err := db.ProjectGetByName(ctx, accountID, name)
	if err != nil {
		tb.Fatalf("project %s: %v", name, err)
	}
	pu, err := db.PushCreate(ctx, &store.PushCreateParams{ID: id.New(id.Push), ProjectID: p.ID, AccountID: accountID,
		ContentHash: contentHash, SizeBytes: 1, Now: now})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := db.PushStart(ctx, pu.ID, now); err != nil {
		tb.Fatal(err)
	}
	if _, err := db.PushFinish(ctx, &store.PushFinishParams{ID: pu.ID, Status: store.PushPublished,
		ImageDigest: "sha256:" + strings.Repeat("d", 64), Now: now}); err != nil {
		tb.Fatal(err)
	}
}

// Grant credits the account micros of micro-USD.
func (e *Env) Grant(tb testing.TB, accountID string, micros int64) {
	tb.Helper()
	if _, err := e.Billing.GrantCredit(tb.Context(), accountID, micros, "test credit"); err != nil {
		tb.Fatal(err)
	}
}

// Worker plays a host for tests where no sandbox runs: it claims queued
// tasks and reports their attempts through the job service, as the agent
// protocol would. It is a stand-in for a host, named as such.
type Worker struct {
	e *Env
	// Attempt is the attempt claimed last.
	Attempt *store.Attempt
}

// Worker returns a stand-in host.
func (e *Env) Worker() *Worker { return &Worker{e: e} }

// Claim takes the next queued task and starts its attempt; false when none
// is queued.
func (w *Worker) Claim(tb testing.TB) bool {
	tb.Helper()
	ctx := tb.Context()
	_, a, err := w.e.Jobs.Claim(ctx, &store.TaskClaimParams{HostID: "wkr_test", AttemptID: id.New(id.Attempt),
		ResourceProfile: json.RawMessage(`{}`), FreeCPU: 64, FreeMemoryMB: 1 << 20, FreeGPUs: 8, Now: w.e.Clock.Now()})
	if errors.Is(err, store.ErrNotFound) {
		return false
	}
	if err != nil {
		tb.Fatalf("claim: %v", err)
	}
	if err := w.e.Jobs.AttemptStarted(ctx, a, w.e.Clock.Now()); err != nil {
		tb.Fatal(err)
	}
	w.Attempt = a
	return true
}

// Progress reports a SKIFF_PROGRESS object and the output tail.
func (w *Worker) Progress(tb testing.TB, progress, tail string) {
	tb.Helper()
	if err := w.e.Jobs.AttemptProgress(tb.Context(), w.Attempt, json.RawMessage(progress), tail); err != nil {
		tb.Fatal(err)
	}
}

// Finish ends the attempt after d with exit code, result (JSON, "" none)
// and output.
func (w *Worker) Finish(tb testing.TB, d time.Duration, exit int, result, stdout, stderr string) {
	tb.Helper()
	start := w.e.Clock.Now()
	w.e.Clock.Advance(d)
	o := job.Outcome{ExitCode: exit, Stdout: stdout, Stderr: stderr, StartedAt: start, EndedAt: w.e.Clock.Now()}
	if result != "" {
		o.Result = json.RawMessage(result)
	}
	if err := w.e.Jobs.AttemptFinished(tb.Context(), w.Attempt, &o, nil, stdout); err != nil {
		tb.Fatal(err)
	}
}

// RunAll claims and finishes every queued task with exit code exit.
func (w *Worker) RunAll(tb testing.TB, exit int, result string) int {
	tb.Helper()
	n := 0
	for w.Claim(tb) {
		w.Finish(tb, time.Second, exit, result, "ran\n", "")
		n++
	}
	return n
}

// Serve runs every task queued until ctx ends, polling every interval: each
// attempt succeeds after a second with the result {"echo": payload} and
// prints "ran <index>". For tests whose client (another process) waits for
// jobs to end.
func (w *Worker) Serve(ctx context.Context, interval time.Duration) error {
	for {
		for {
			task, a, err := w.e.Jobs.Claim(ctx, &store.TaskClaimParams{HostID: "wkr_test", AttemptID: id.New(id.Attempt),
				ResourceProfile: json.RawMessage(`{}`), FreeCPU: 64, FreeMemoryMB: 1 << 20, FreeGPUs: 8, Now: w.e.Clock.Now()})
			if errors.Is(err, store.ErrNotFound) {
				break
			}
			if err != nil {
				return err
			}
			start := w.e.Clock.Now()
			if err := w.e.Jobs.AttemptStarted(ctx, a, start); err != nil {
				return err
			}
			res, _ := json.Marshal(map[string]json.RawMessage{"echo": task.Payload})
			out := fmt.Sprintf("ran %d\n", task.Index)
			o := job.Outcome{Result: res, Stdout: out, StartedAt: start, EndedAt: start.Add(time.Second)}
			if err := w.e.Jobs.AttemptFinished(ctx, a, &o, nil, out); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// ReadyBuilder stands in for buildah where builds cannot run or are not
// under test: pushes go through the real push path and it publishes what
// they pushed, refusing a context without a Dockerfile as buildah would.
// Start it with env.Projects.RunBuilds(ctx, apitest.ReadyBuilder{}).
type ReadyBuilder struct{}

// Build publishes the pushed context under a made-up digest.
func (ReadyBuilder) Build(_ context.Context, req project.BuildRequest) (*project.BuildResult, error) {
	if _, err := os.Stat(filepath.Join(req.ContextDir, "Dockerfile")); err != nil {
		return nil, &project.UserBuildError{Message: "no Dockerfile in the build context"}
	}
	return &project.BuildResult{ImageRef: "skiff.local/" + req.Tag, ImageDigest: "sha256:" + strings.Repeat("b", 64)}, nil
}

// RunnerManifest is a project manifest whose entrypoint is /runner.
const RunnerManifest = `{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"}, "entrypoint": {"command": ["/runner"]}}`

// FundedAccount creates an account named name owning project (with
// RunnerManifest as its manifest and a published revision) and grants it
// micros of micro-USD.
func (e *Env) FundedAccount(tb testing.TB, name, project string, micros int64) *Account {
	tb.Helper()
	a := e.NewAccount(tb, name)
	e.Client(a.Member).Post(tb, "/api/v1/projects", map[string]any{"name": project,
		"manifest": json.RawMessage(RunnerManifest)}).Want(tb, http.StatusCreated)
	e.Publish(tb, a.ID, project)
	if micros > 0 {
		e.Grant(tb, a.ID, micros)
	}
	return a
}
