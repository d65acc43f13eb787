package fleet_test

import (
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/agent/agenthttp"
	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/duty"
	"github.com/skiffhq/skiff/internal/fleet"
	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/wake"
)

// TestOrphanSweepAcrossControllers: a host calls controller A; controller
// B runs the orphan sweep. While A keeps marking the host alive B leaves
// its attempt alone (without presence B, which never heard of the host,
// would requeue it); once the host has been silent past LostAfter, B
// declares the attempt lost.
func TestOrphanSweepAcrossControllers(t *testing.T) {
	engines(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		clk := clock.NewFake(time.Now())
		log := slog.New(slog.DiscardHandler)
		jobs := job.New(job.Config{Store: st, Clock: clk, Logger: log, Wake: wake.New()})
		const lostAfter = 30 * time.Second
		newCtrl := func(holder string) *fleet.Controller {
			return fleet.NewController(fleet.ControllerConfig{Store: st, Jobs: jobs, Clock: clk, Log: log, ImagesDir: t.TempDir(),
				LostAfter: lostAfter, Presence: &duty.Presence{Store: st, Holder: holder, Prefix: "host:"}})
		}
		a, b := newCtrl("ctl-a"), newCtrl("ctl-b")
		j := submitPublished(t, st, jobs)
		hostID := id.New(id.Worker)
		a.AllowHost("tok", hostID)
		h := &agenthttp.Client{BaseURL: "http://controller-a.test", Token: "tok",
			Client: &http.Client{Transport: handlerTransport{httpapi.AgentHandler(a, nil)}}}
		if _, err := h.Register(ctx, &agentproto.RegisterRequest{ProtocolVersion: agentproto.ProtocolVersion,
			Driver: "gvisor", Capacity: agentCapacity(1)}); err != nil {
			t.Fatal(err)
		}
		lease, err := h.Poll(ctx, &agentproto.PollRequest{HostID: hostID, Free: agentCapacity(1), Running: []string{}})
		if err != nil || len(lease.Assignments) != 1 {
			t.Fatalf("lease: %+v, %v; want the job's one assignment", lease, err)
		}
		running := []string{lease.Assignments[0].AttemptID}
		longAgo := clk.Now().Add(-time.Hour) // B's sweep has run long: no start-up grace
		wantOpen := func(when string) {
			t.Helper()
			if err := b.SweepOrphans(ctx, longAgo); err != nil {
				t.Fatal(err)
			}
			if atts := attempts(t, st, j); len(atts) != 1 || atts[0].Status == store.AttemptLost {
				t.Fatalf("%s: attempts %s; want the one still open", when, attemptsString(atts))
			}
		}
		wantOpen("just assigned")
		clk.Advance(20 * time.Second)
		if _, err := h.Poll(ctx, &agentproto.PollRequest{HostID: hostID, Free: agentCapacity(0), Running: running}); err != nil {
			t.Fatal(err)
		}
		clk.Advance(25 * time.Second) // 45 s after the assignment, 25 s after the last call
		wantOpen("25 s after the host's last call to A")
		clk.Advance(10 * time.Second) // 35 s after the last call: silent past LostAfter
		if err := a.SweepHosts(ctx); err != nil {
			t.Fatal(err)
		}
		if err := b.SweepOrphans(ctx, longAgo); err != nil {
			t.Fatal(err)
		}
		if atts := attempts(t, st, j); len(atts) != 1 || atts[0].Status != store.AttemptLost {
			t.Fatalf("after the host fell silent: attempts %s; want the one lost", attemptsString(atts))
		}
	})
}
