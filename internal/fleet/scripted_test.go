package fleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/agent/agenthttp"
	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/fleet"
	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/store/storetest"
	"github.com/skiffhq/skiff/internal/testenv"
	"github.com/skiffhq/skiff/internal/testlog"
	"github.com/skiffhq/skiff/internal/wake"
)

// The scripted harness is the controller for real (its store, job service
// and HTTP handler, on SQLite and PostgreSQL) under a fake clock, driven by
// hosts that a test scripts call by call over the real protocol client
// (agenthttp.Client): register, lease with a free capacity and a
// running list, events. It needs neither root nor gVisor, so dispatch,
// reconciliation, lost hosts and the attempt state machine are tested on
// any machine; the gVisor harness (harness_test.go) stays the end-to-end
// layer above it.
type scripted struct {
	t         *testing.T
	st        store.Store
	clk       *clock.Fake
	jobs      *job.Service
	ctrl      *fleet.Controller
	url       string
	accountID string
}

const scriptedHeartbeat = 10 * time.Second

// engines runs run once per store engine (storetest.Engines), each on a
// fresh store; an engine that cannot run here is skipped, which fails
// under SKIFF_TEST_REQUIRE_ALL=1.
func engines(t *testing.T, run func(t *testing.T, st store.Store)) {
	for _, eng := range storetest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			if eng.Skip != "" {
				testenv.Skip(t, eng.Skip)
			}
			run(t, eng.Open(t))
		})
	}
}

func newScripted(t *testing.T, st store.Store) *scripted {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	logs := &testlog.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", logs.String())
		}
	})
	s := &scripted{t: t, st: st, clk: clk}
	hostWake := wake.New()
	s.jobs = job.New(job.Config{Store: st, Clock: clk, Logger: log, Wake: hostWake})
	s.ctrl = fleet.NewController(fleet.ControllerConfig{Store: st, Jobs: s.jobs, Wake: hostWake, Clock: clk, Log: log,
		ImagesDir: "/nonexistent/images", HeartbeatInterval: scriptedHeartbeat, RetryAvoidWindow: time.Minute})
	srv := httptest.NewServer(httpapi.AgentHandler(s.ctrl, log))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	s.accountID = fundedProject(t, st, clk, "sha256:"+strings.Repeat("ab", 32))
	return s
}

func (s *scripted) submit(js apiv1.JobSubmit) *store.Job {
	s.t.Helper()
	if js.Payload == nil {
		js.Payload = json.RawMessage(`{}`)
	}
	return submitRunner(s.t, s.jobs, s.accountID, js)
}

func (s *scripted) job(j *store.Job) *store.Job {
	s.t.Helper()
	got, err := s.st.JobGetByID(context.Background(), j.ID)
	if err != nil {
		s.t.Fatal(err)
	}
	return got
}

func (s *scripted) attempts(j *store.Job) []*store.Attempt {
	s.t.Helper()
	atts, err := s.st.AttemptList(context.Background(), j.ID)
	if err != nil {
		s.t.Fatal(err)
	}
	return atts
}

// scriptedHost is a host whose every call the test makes. It keeps the
// attempts it was given and has not reported finished as its running list,
// as the real agent does.
type scriptedHost struct {
	s        *scripted
	id       string
	ctl      *agenthttp.Client
	capacity agentproto.Capacity
	// profile is what it registers with; the zero value says only its
	// cpu count and memory.
	profile agentproto.ResourceProfile
	running []string
	seq     map[string]int64
	version int
}

func (s *scripted) host(slots int, cpu float64) *scriptedHost {
	s.t.Helper()
	return s.hostV(slots, cpu, agentproto.ProtocolVersion)
}

// hostV is a host speaking protocol version v.
func (s *scripted) hostV(slots int, cpu float64, v int) *scriptedHost {
	s.t.Helper()
	hid := id.New(id.Worker)
	token := "tok-" + hid
	s.ctrl.AllowHost(token, hid)
	h := &scriptedHost{s: s, id: hid, ctl: &agenthttp.Client{BaseURL: s.url, Token: token},
		capacity: agentproto.Capacity{CPU: cpu, MemoryMB: 8192, Slots: slots}, seq: map[string]int64{}, version: v}
	h.register()
	return h
}

func (h *scriptedHost) register() {
	h.s.t.Helper()
	prof := h.profile
	if prof == (agentproto.ResourceProfile{}) {
		prof = agentproto.ResourceProfile{CPUCount: int(h.capacity.CPU), MemoryTotalMB: h.capacity.MemoryMB}
	}
	resp, err := h.ctl.Register(context.Background(), &agentproto.RegisterRequest{ProtocolVersion: h.version,
		Driver: "scripted", Profile: prof, Capacity: h.capacity, Running: h.running})
	if err != nil || resp.HostID != h.id || resp.ProtocolVersion != h.version {
		h.s.t.Fatalf("register at version %d: %+v, %v", h.version, resp, err)
	}
}

// lease asks for work, claiming free capacity free (the test says what the
// host believes), waiting up to wait; the host takes what it is given.
func (h *scriptedHost) poll(free agentproto.Capacity, wait time.Duration) *agentproto.PollResponse {
	h.s.t.Helper()
	resp, err := h.pollErr(free, wait)
	if err != nil {
		h.s.t.Fatalf("lease: %v", err)
	}
	return resp
}

func (h *scriptedHost) pollErr(free agentproto.Capacity, wait time.Duration) (*agentproto.PollResponse, error) {
	resp, err := h.ctl.Poll(context.Background(), &agentproto.PollRequest{HostID: h.id, Free: free,
		Running: slices.Clone(h.running), WaitS: int(wait / time.Second)})
	if err != nil {
		return nil, err
	}
	for _, a := range resp.Assignments {
		h.running = append(h.running, a.AttemptID)
	}
	return resp, nil
}

func (h *scriptedHost) report(attemptID string, kind agentproto.EventKind, o *agentproto.Outcome) {
	h.s.t.Helper()
	h.seq[attemptID]++
	ev := &agentproto.AttemptEvent{AttemptID: attemptID, HostID: h.id, Seq: h.seq[attemptID], Kind: kind,
		At: h.s.clk.Now(), Outcome: o}
	if err := h.ctl.Report(context.Background(), ev); err != nil {
		h.s.t.Fatalf("report %s of %s: %v", kind, attemptID, err)
	}
	if kind == agentproto.EventFinished {
		h.running = slices.DeleteFunc(h.running, func(id string) bool { return id == attemptID })
	}
}

// run reports attempt started, then finished after d of runner time with
// exit code exit and a JSON result.
func (h *scriptedHost) run(attemptID string, d time.Duration, exit int) {
	h.s.t.Helper()
	h.report(attemptID, agentproto.EventStarted, nil)
	start := h.s.clk.Now()
	h.s.clk.Advance(d)
	o := &agentproto.Outcome{ExitCode: exit, StartedAt: start, EndedAt: h.s.clk.Now()}
	if exit == 0 {
		o.Result = json.RawMessage(`{"ok":true}`)
	}
	h.report(attemptID, agentproto.EventFinished, o)
}

func ids(asg []agentproto.Assignment) []string {
	var out []string
	for _, a := range asg {
		out = append(out, a.AttemptID)
	}
	return out
}

// A host whose long poll was sent when it had no free slot gets the next
// task in that same poll as soon as one of its attempts ends: the
// controller sizes work by its own record of the host, not by the request's
// stale free capacity (issue 7's stall: a wave per lease interval).
func TestScriptedRefillWithinLongPoll(t *testing.T) {
	engines(t, func(t *testing.T, st store.Store) {
		s := newScripted(t, st)
		h := s.host(2, 2)
		items := make([]json.RawMessage, 5)
		for i := range items {
			items[i] = json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))
		}
		j := s.submit(apiv1.JobSubmit{FanOut: &apiv1.JobFanOut{Items: items}})
		first := h.poll(h.capacity, 0)
		if len(first.Assignments) != 2 {
			t.Fatalf("first lease: %d assignments, want 2 (the host's slots)", len(first.Assignments))
		}
		// The host long-polls with nothing free; a scripted host waits the
		// whole poll only if no slot is refilled, which is the failure.
		type leased struct {
			resp *agentproto.PollResponse
			err  error
		}
		got := make(chan leased, 1)
		running := slices.Clone(h.running)
		go func() {
			resp, err := h.ctl.Poll(context.Background(), &agentproto.PollRequest{HostID: h.id,
				Running: running, WaitS: int(scriptedHeartbeat / time.Second)})
			got <- leased{resp, err}
		}()
		h.run(first.Assignments[0].AttemptID, 3*time.Second, 0)
		r := <-got
		if r.err != nil {
			t.Fatal(r.err)
		}
		if len(r.resp.Assignments) != 1 {
			t.Fatalf("the long poll answered %d assignments, want 1 (the slot freed while it waited)", len(r.resp.Assignments))
		}
		// The slot count holds: with both slots busy again, a lease that
		// claims two free slots gets nothing.
		h.running = append(h.running, r.resp.Assignments[0].AttemptID)
		if more := h.poll(agentproto.Capacity{CPU: 2, MemoryMB: 8192, Slots: 2}, 0); len(more.Assignments) != 0 {
			t.Fatalf("a full host was given %v", ids(more.Assignments))
		}
		// Run everything out: every task once, the job completed.
		for len(h.running) > 0 {
			h.run(h.running[0], time.Second, 0)
			h.poll(h.capacity, 0)
		}
		if got := s.job(j); got.Status != store.JobCompleted {
			t.Fatalf("job %s, want completed", got.Status)
		}
		if n := len(s.attempts(j)); n != 5 {
			t.Fatalf("%d attempts for 5 tasks", n)
		}
	})
}

// Placement: a task goes only to a host with room for its requirements,
// and one host's slots and CPUs bound what it is given.
func TestScriptedPlacement(t *testing.T) {
	engines(t, func(t *testing.T, st store.Store) {
		s := newScripted(t, st)
		small := s.host(4, 1)
		big := s.host(4, 4)
		cpu3, mem := 3.0, int64(512)
		heavy := s.submit(apiv1.JobSubmit{Requirements: &apiv1.JobRequirements{CPU: &cpu3, MemoryMB: &mem}})
		if got := small.poll(small.capacity, 0); len(got.Assignments) != 0 {
			t.Fatalf("a 1-CPU host was given a 3-CPU task: %v", ids(got.Assignments))
		}
		got := big.poll(big.capacity, 0)
		if len(got.Assignments) != 1 || got.Assignments[0].JobID != heavy.ID || got.Assignments[0].CPU != 3 {
			t.Fatalf("the 4-CPU host got %+v, want the 3-CPU task", got.Assignments)
		}
		// Three 1-CPU tasks: the big host has one CPU left, so it takes one
		// and the small host the next; the third waits.
		for range 3 {
			s.submit(apiv1.JobSubmit{})
		}
		if got := big.poll(big.capacity, 0); len(got.Assignments) != 1 {
			t.Fatalf("the big host with 1 CPU left got %d tasks, want 1", len(got.Assignments))
		}
		if got := small.poll(small.capacity, 0); len(got.Assignments) != 1 {
			t.Fatalf("the small host got %d tasks, want 1", len(got.Assignments))
		}
		if got := small.poll(small.capacity, 0); len(got.Assignments) != 0 {
			t.Fatalf("the full small host got %v", ids(got.Assignments))
		}
		// The heavy task ends: its 3 CPUs are free again for the third.
		big.run(big.running[0], time.Second, 0)
		if got := big.poll(big.capacity, 0); len(got.Assignments) != 1 {
			t.Fatalf("after the heavy task ended the big host got %d tasks, want 1", len(got.Assignments))
		}
	})
}

// A host that stops calling is lost once LostAfter passes on the
// controller's clock: its attempts are requeued free (not billed) and run
// on the other host; a finished report from the lost host is refused, and
// it re-registers when told it is unknown.
func TestScriptedLostHostRequeues(t *testing.T) {
	engines(t, func(t *testing.T, st store.Store) {
		s := newScripted(t, st)
		lost := s.host(1, 1)
		other := s.host(1, 1)
		j := s.submit(apiv1.JobSubmit{})
		got := lost.poll(lost.capacity, 0)
		if len(got.Assignments) != 1 {
			t.Fatalf("lease: %d assignments", len(got.Assignments))
		}
		first := got.Assignments[0].AttemptID
		lost.report(first, agentproto.EventStarted, nil)
		// Only the other host keeps calling while the clock moves past
		// LostAfter (3 heartbeats).
		for range 4 {
			s.clk.Advance(scriptedHeartbeat)
			other.poll(other.capacity, 0)
		}
		if err := s.ctrl.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
		got = other.poll(other.capacity, 0)
		if len(got.Assignments) != 1 || got.Assignments[0].TaskID == "" {
			t.Fatalf("the other host got %+v, want the requeued task", got.Assignments)
		}
		other.run(got.Assignments[0].AttemptID, 70*time.Second, 0)
		atts := s.attempts(j)
		if len(atts) != 2 || atts[0].Status != store.AttemptLost || atts[0].CostMicros != 0 || atts[0].BilledSeconds != 0 {
			t.Fatalf("attempts: first %+v; want lost and not billed", atts[0])
		}
		if atts[1].Status != store.AttemptSucceeded || atts[1].BilledSeconds != 70 || atts[1].CostMicros == 0 {
			t.Fatalf("second attempt %+v, want succeeded and billed 70 s", atts[1])
		}
		if got := s.job(j); got.Status != store.JobCompleted {
			t.Fatalf("job %s, want completed", got.Status)
		}
		// The lost host comes back: unknown, it registers again and is told
		// to stop the attempt it still lists.
		if _, err := lost.pollErr(lost.capacity, 0); err == nil || !strings.Contains(err.Error(), "unknown") {
			t.Fatalf("lease of a lost host: %v, want unknown host", err)
		}
		lost.register()
		resp := lost.poll(lost.capacity, 0)
		if !slices.Contains(resp.Cancel, first) {
			t.Fatalf("re-registered host was not told to stop %s: %+v", first, resp)
		}
	})
}

// Billing through the protocol: each attempt is metered from the host's
// start and end times at the job's rate (a minute at least), a retried
// failure is charged, and
// the holds' capture leaves the ledger equal to the balance with no hold open.
func TestScriptedBilling(t *testing.T) {
	engines(t, func(t *testing.T, st store.Store) {
		s := newScripted(t, st)
		h := s.host(1, 1)
		j := s.submit(apiv1.JobSubmit{MaxRetries: ptr[int64](1)})
		got := h.poll(h.capacity, 0)
		h.run(got.Assignments[0].AttemptID, 90*time.Second, 3)
		got = h.poll(h.capacity, 0)
		if len(got.Assignments) != 1 {
			t.Fatalf("retry not dispatched: %+v", got)
		}
		h.run(got.Assignments[0].AttemptID, 20*time.Second, 0)
		j = s.job(j)
		if j.Status != store.JobCompleted {
			t.Fatalf("job %s", j.Status)
		}
		var metered int64
		for i, a := range s.attempts(j) {
			want := []int64{90, billing.MinBilledSeconds}[i]
			if a.BilledSeconds != want || a.CostMicros != (j.RateMicrosPerHour*want+3599)/3600 {
				t.Errorf("attempt %d: billed %d s, %d micros; want %d s at %d/h", a.Number, a.BilledSeconds, a.CostMicros, want, j.RateMicrosPerHour)
			}
			metered += a.CostMicros
		}
		ctx := context.Background()
		bal, err := st.BalanceGet(ctx, s.accountID, s.clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		if bal.LedgerMicros != 100_000_000-metered || bal.HeldMicros != 0 || bal.ActiveHoldCount != 0 {
			t.Fatalf("balance %+v after %d micros metered; want the grant less that and no hold", bal, metered)
		}
	})
}

// The controller speaks a range of protocol versions, so hosts upgrade one
// at a time: a version-2 host says typed that its runner could not start
// (a failure of the project's, not charged), a version-1 host's outcome is
// read by its words as before, and a version from the future is refused
// with 426.
func TestScriptedProtocolVersions(t *testing.T) {
	engines(t, func(t *testing.T, st store.Store) {
		s := newScripted(t, st)
		finish := func(h *scriptedHost, o *agentproto.Outcome) *store.Attempt {
			t.Helper()
			s.submit(apiv1.JobSubmit{})
			got := h.poll(h.capacity, 0)
			if len(got.Assignments) != 1 {
				t.Fatalf("lease: %+v", got)
			}
			at := got.Assignments[0].AttemptID
			h.report(at, agentproto.EventStarted, nil)
			o.StartedAt, o.EndedAt = s.clk.Now(), s.clk.Now()
			h.report(at, agentproto.EventFinished, o)
			a, err := s.st.AttemptGet(context.Background(), at)
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		v2 := s.hostV(1, 1, 2)
		if a := finish(v2, &agentproto.Outcome{ExitCode: 127, SandboxError: "command not found", StartFailed: true}); a.TerminalKind != "start_failed" || a.CostMicros != 0 {
			t.Errorf("v2 typed start failure: attempt %s/%s cost %d, want start_failed, free", a.Status, a.TerminalKind, a.CostMicros)
		}
		if a := finish(v2, &agentproto.Outcome{ExitCode: 128, SandboxError: "creating process: failed to load /x"}); a.TerminalKind == "start_failed" {
			t.Errorf("v2 host's untyped sandbox error read by its words: %s", a.TerminalKind)
		}
		v1 := s.hostV(1, 1, 1)
		if a := finish(v1, &agentproto.Outcome{ExitCode: 128, SandboxError: "creating process: failed to load /x: no such file or directory"}); a.TerminalKind != "start_failed" {
			t.Errorf("v1 start failure by its words: attempt %s/%s, want start_failed", a.Status, a.TerminalKind)
		}
		future := &agenthttp.Client{BaseURL: s.url, Token: "tok-future"}
		s.ctrl.AllowHost("tok-future", id.New(id.Worker))
		_, err := future.Register(context.Background(), &agentproto.RegisterRequest{ProtocolVersion: agentproto.ProtocolVersion + 1})
		var se *agenthttp.StatusError
		if !errors.As(err, &se) || se.StatusCode != 426 || se.Code != agentproto.CodeUnsupportedVersion {
			t.Fatalf("register at version %d: %v, want 426 %s", agentproto.ProtocolVersion+1, err, agentproto.CodeUnsupportedVersion)
		}
	})
}
