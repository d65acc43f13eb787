package fleet_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/agent"
	"github.com/skiffhq/skiff/internal/agent/agenthttp"
	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/fleet"
	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/store/storetest"
	"github.com/skiffhq/skiff/internal/wake"
)

// TestLostHostSweepSynctest: a host that takes an attempt and then stops
// calling is kept for LostAfter and declared lost by the first sweep after
// that; its attempt is recorded lost and the task requeued free. It runs
// in a synctest bubble, so the sweep's ticker and the controller's clock
// (clock.System reads the bubble's fake time) move only as the test says,
// and the host is a real agentproto client called in memory.
func TestLostHostSweepSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		st := storetest.OpenSQLite(t)
		hostWake := wake.New()
		jobs := job.New(job.Config{Store: st, Clock: clock.System{}, Logger: slog.New(slog.DiscardHandler), Wake: hostWake})
		const heartbeat, lostAfter, sweep = 10 * time.Second, 30 * time.Second, 5 * time.Second
		ctrl := fleet.NewController(fleet.ControllerConfig{Store: st, Jobs: jobs, Wake: hostWake, ImagesDir: t.TempDir(),
			HeartbeatInterval: heartbeat, LostAfter: lostAfter, SweepInterval: sweep})
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = ctrl.Run(runCtx) }()
		defer func() { stop(); <-done }()

		j := submitPublished(t, st, jobs)
		hostID := id.New(id.Worker)
		ctrl.AllowHost("tok", hostID)
		h := &agenthttp.Client{BaseURL: "http://controller.test", Token: "tok",
			Client: &http.Client{Transport: handlerTransport{httpapi.AgentHandler(ctrl, nil)}}}
		if _, err := h.Register(ctx, &agentproto.RegisterRequest{ProtocolVersion: agentproto.ProtocolVersion,
			Driver: "gvisor", Capacity: agentCapacity(1)}); err != nil {
			t.Fatal(err)
		}
		lease, err := h.Poll(ctx, &agentproto.PollRequest{HostID: hostID, Free: agentCapacity(1), Running: []string{}})
		if err != nil || len(lease.Assignments) != 1 {
			t.Fatalf("lease: got %+v, %v; want the job's one assignment", lease, err)
		}
		assigned := time.Now()

		// The host falls silent. Up to LostAfter it is kept...
		time.Sleep(lostAfter - sweep)
		synctest.Wait()
		if atts := attempts(t, st, j); len(atts) != 1 || atts[0].Status != store.AttemptRunning && atts[0].Status != store.AttemptAssigned {
			t.Fatalf("%s after the last lease: attempts %s; want the one still open", time.Since(assigned), attemptsString(atts))
		}
		// ...and the first sweep after it declares the host lost.
		time.Sleep(2 * sweep)
		synctest.Wait()
		atts := attempts(t, st, j)
		if len(atts) != 1 || atts[0].Status != store.AttemptLost {
			t.Fatalf("%s after the last lease: attempts %s; want the one lost", time.Since(assigned), attemptsString(atts))
		}
		tasks, err := st.TaskList(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if tasks[0].Status != store.TaskQueued || tasks[0].RetriesUsed != 0 || tasks[0].InfraRequeues != 1 {
			t.Errorf("task: %s, retries_used %d, infra_requeues %d; want queued again for free (0 retries, 1 requeue)",
				tasks[0].Status, tasks[0].RetriesUsed, tasks[0].InfraRequeues)
		}
		// The lost host is forgotten: its next lease is told to register again.
		if _, err := h.Poll(ctx, &agentproto.PollRequest{HostID: hostID, Running: []string{}}); !errors.Is(err, agent.ErrUnknownHost) {
			t.Errorf("lease from the lost host: got %v, want unknown_host", err)
		}
	})
}

func attempts(t *testing.T, st store.Store, j *store.Job) []*store.Attempt {
	t.Helper()
	atts, err := st.AttemptList(t.Context(), j.ID)
	if err != nil {
		t.Fatal(err)
	}
	return atts
}

// submitPublished makes a funded account with a published project and
// submits one single-task job to it.
func submitPublished(t *testing.T, st store.Store, jobs *job.Service) *store.Job {
	t.Helper()
	accountID := fundedProject(t, st, clock.System{}, "sha256:"+strings.Repeat("1", 64))
	return submitRunner(t, jobs, accountID, apiv1.JobSubmit{})
}

// handlerTransport hands each request straight to h: no network, so it
// works inside a synctest bubble.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}
