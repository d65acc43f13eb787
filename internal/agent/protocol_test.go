package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/skiffhq/skiff/internal/agent"
	"github.com/skiffhq/skiff/internal/agent/agenthttp"
	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/ociimage"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
)

// registrations returns the register requests the fake accepted so far.
func (fc *fakeController) registrations() []agentproto.RegisterRequest {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return slices.Clone(fc.registers)
}

// waitFor waits until ok, called with mu held, is true.
func (fc *fakeController) waitFor(what string, ok func() bool) {
	fc.t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		fc.mu.Lock()
		done := ok()
		ch := fc.changed
		fc.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-timeout:
			fc.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// eventKind is the kind of an attempt event body, "" for other bodies.
func eventKind(body []byte) agentproto.EventKind {
	var ev agentproto.AttemptEvent
	_ = json.Unmarshal(body, &ev)
	return ev.Kind
}

// TestHTTPClientAnswers: the status codes agentproto says a host acts
// on map to what the agent loop expects of a Controller.
func TestHTTPClientAnswers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name         string
		status       int
		code         string
		call         string // register, lease or report
		wantErr      bool
		wantUnknown  bool // errors.Is(err, agent.ErrUnknownHost)
		wantStatusOf int  // the StatusError's code, when wantErr
	}{
		// Acknowledged: the attempt had ended there (ErrAttemptEnded).
		{"report 409 is acknowledged", http.StatusConflict, "duplicate", "report", false, false, 0},
		{"report 410 is acknowledged", http.StatusGone, "gone", "report", false, false, 0},
		{"report 503 is an error", http.StatusServiceUnavailable, "", "report", true, false, http.StatusServiceUnavailable},
		{"report 404 unknown_host", http.StatusNotFound, agentproto.CodeUnknownHost, "report", true, true, http.StatusNotFound},
		{"lease 404 unknown_host", http.StatusNotFound, agentproto.CodeUnknownHost, "lease", true, true, http.StatusNotFound},
		{"lease 404 without the code", http.StatusNotFound, "not_found", "lease", true, false, http.StatusNotFound},
		{"lease 426", http.StatusUpgradeRequired, agentproto.CodeUnsupportedVersion, "lease", true, false, http.StatusUpgradeRequired},
		{"register 426", http.StatusUpgradeRequired, agentproto.CodeUnsupportedVersion, "register", true, false, http.StatusUpgradeRequired},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				_ = json.NewEncoder(w).Encode(agentproto.ErrorResponse{Code: c.code, Message: "from the test"})
			}))
			t.Cleanup(srv.Close)
			hc := &agenthttp.Client{BaseURL: srv.URL, Token: testToken}
			var err error
			switch c.call {
			case "register":
				_, err = hc.Register(t.Context(), &agentproto.RegisterRequest{ProtocolVersion: agentproto.ProtocolVersion})
			case "lease":
				_, err = hc.Poll(t.Context(), &agentproto.PollRequest{HostID: "wkr_test"})
			case "report":
				err = hc.Report(t.Context(), &agentproto.AttemptEvent{AttemptID: "att_1", Seq: 1, Kind: agentproto.EventStarted})
			}
			if c.call == "report" && !c.wantErr {
				if !errors.Is(err, agent.ErrAttemptEnded) {
					t.Fatalf("got %v, want ErrAttemptEnded, which the reporter takes as delivered", err)
				}
				return
			}
			if (err != nil) != c.wantErr {
				t.Fatalf("got %v, want an error: %v", err, c.wantErr)
			}
			if !c.wantErr {
				return
			}
			if errors.Is(err, agent.ErrUnknownHost) != c.wantUnknown {
				t.Errorf("errors.Is(%v, ErrUnknownHost) = %v, want %v", err, !c.wantUnknown, c.wantUnknown)
			}
			var se *agenthttp.StatusError
			if !errors.As(err, &se) || se.StatusCode != c.wantStatusOf || se.Code != c.code {
				t.Errorf("got %v, want a StatusError %d %s", err, c.wantStatusOf, c.code)
			}
		})
	}
}

// TestAgentProtocolAnswers runs the agent against the fake controller
// answering 404, 409, 410 and 426 where agentproto allows them.
func TestAgentProtocolAnswers(t *testing.T) {
	img := newImage(t)

	// A 404 unknown_host on lease makes the agent register again, telling
	// the controller what it still runs, and go on with the same attempt.
	t.Run("404 unknown host registers again", func(t *testing.T) {
		t.Parallel()
		fc := newFakeController(t)
		startAgent(t, fc, processDriver(t), img)
		asg := assignment(t, img, sandboxtest.Payload{Progress: []string{`{"running":true}`}, SleepMS: 60_000})
		fc.assign(asg)
		fc.waitEvent(asg.AttemptID, func(ev agentproto.AttemptEvent) bool { return ev.Kind == agentproto.EventProgress })
		fc.mu.Lock()
		forgot := false
		fc.intercept = func(path string, _ []byte) (int, string) {
			if path == agentproto.PollPath && !forgot {
				forgot = true
				return http.StatusNotFound, agentproto.CodeUnknownHost
			}
			return 0, ""
		}
		fc.mu.Unlock()
		fc.waitFor("a second registration", func() bool { return len(fc.registers) == 2 })
		regs := fc.registrations()
		if !slices.Equal(regs[1].Running, []string{asg.AttemptID}) {
			t.Errorf("second registration lists running %q, want [%s]", regs[1].Running, asg.AttemptID)
		}
		// The agent still serves the controller: a cancel reaches it.
		fc.cancelAttempt(asg.AttemptID)
		if o, _ := fc.finished(asg.AttemptID); !o.Killed {
			t.Errorf("outcome after registering again: got %+v, want killed by the controller", o)
		}
	})

	// 409 (already recorded) and 410 (attempt gone) acknowledge an event:
	// the agent sends each such event once and goes on to the next.
	t.Run("409 and 410 acknowledge an event", func(t *testing.T) {
		t.Parallel()
		fc := newFakeController(t)
		posts := map[agentproto.EventKind]int{}
		fc.intercept = func(path string, body []byte) (int, string) {
			kind := eventKind(body)
			if path == agentproto.RegisterPath || path == agentproto.PollPath || kind == "" {
				return 0, ""
			}
			posts[kind]++
			switch kind {
			case agentproto.EventStarted:
				return http.StatusConflict, "duplicate"
			case agentproto.EventProgress:
				return http.StatusGone, "gone"
			}
			return 0, ""
		}
		startAgent(t, fc, processDriver(t), img)
		asg := assignment(t, img, sandboxtest.Payload{Progress: []string{`{"step":1}`}})
		fc.assign(asg)
		_, evs := fc.finished(asg.AttemptID)
		fc.mu.Lock()
		started, progress, finished := posts[agentproto.EventStarted], posts[agentproto.EventProgress], posts[agentproto.EventFinished]
		fc.mu.Unlock()
		if started != 1 || progress > 1 || finished != 1 {
			t.Errorf("posts: started %d, progress %d, finished %d; want each sent once (progress at most once)", started, progress, finished)
		}
		if len(evs) != 1 || evs[0].Seq != int64(1+started+progress) {
			t.Errorf("recorded events %+v: want only the finished one, numbered after the acknowledged ones", evs)
		}
	})

	// 426 on register: the agent keeps trying and registers once the
	// controller speaks its version.
	t.Run("426 on register is retried", func(t *testing.T) {
		t.Parallel()
		fc := newFakeController(t)
		refused := 0
		fc.intercept = func(path string, _ []byte) (int, string) {
			if path == agentproto.RegisterPath && refused < 3 {
				refused++
				return http.StatusUpgradeRequired, agentproto.CodeUnsupportedVersion
			}
			return 0, ""
		}
		startAgent(t, fc, processDriver(t), img)
		asg := assignment(t, img, sandboxtest.Payload{})
		fc.assign(asg)
		if o, _ := fc.finished(asg.AttemptID); o.ExitCode != 0 || o.HostError != "" {
			t.Errorf("outcome: got %+v, want exit 0", o)
		}
		fc.mu.Lock()
		defer fc.mu.Unlock()
		if refused != 3 || len(fc.registers) != 1 {
			t.Errorf("register: %d refused and %d accepted, want 3 and 1", refused, len(fc.registers))
		}
	})
}

// scriptedController is an in-memory Controller for tests in a synctest
// bubble, where time is fake and only advances when every goroutine waits.
type scriptedController struct {
	mu        sync.Mutex
	registers []time.Time
	leases    []time.Time
	deadlines []time.Time // each lease context's deadline
	// refuse is how many register calls answer 426 before one succeeds.
	refuse int
	// heartbeatS is the interval the controller hands out.
	heartbeatS int
}

func (c *scriptedController) Register(ctx context.Context, req *agentproto.RegisterRequest) (*agentproto.RegisterResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.registers = append(c.registers, time.Now())
	if len(c.registers) <= c.refuse {
		return nil, &agenthttp.StatusError{StatusCode: http.StatusUpgradeRequired, Code: agentproto.CodeUnsupportedVersion}
	}
	return &agentproto.RegisterResponse{ProtocolVersion: 1, HostID: "wkr_sync", HeartbeatIntervalS: c.heartbeatS}, nil
}

// Poll long-polls with no work until the agent's deadline for it.
func (c *scriptedController) Poll(ctx context.Context, req *agentproto.PollRequest) (*agentproto.PollResponse, error) {
	c.mu.Lock()
	c.leases = append(c.leases, time.Now())
	d, _ := ctx.Deadline()
	c.deadlines = append(c.deadlines, d)
	c.mu.Unlock()
	<-ctx.Done()
	return nil, ctx.Err()
}

func (c *scriptedController) Report(ctx context.Context, ev *agentproto.AttemptEvent) error {
	return errors.New("no attempts in this test")
}

// runScripted runs an agent against c inside the bubble for d of fake
// time, then stops it.
func runScripted(t *testing.T, c *scriptedController, cfg agent.Config, d time.Duration) {
	t.Helper()
	dir := t.TempDir()
	cfg.Controller = c
	cfg.Driver = processDriver(t)
	cfg.Images = &ociimage.Cache{Root: filepath.Join(dir, "images")}
	cfg.WorkRoot, cfg.CacheRoot = filepath.Join(dir, "work"), filepath.Join(dir, "cache")
	cfg.Slots, cfg.LayoutsInPlace = 1, true
	cfg.Profile = agentproto.ResourceProfile{CPUCount: 1, MemoryTotalMB: 1024}
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	time.Sleep(d)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run: got %v, want context.Canceled", err)
	}
}

// TestAgentBackoffSynctest: failed registrations are retried after a delay
// that doubles from MinBackoff up to MaxBackoff, each jittered into its
// upper half. In a synctest bubble the gaps between calls are exactly the
// delays the agent chose.
func TestAgentBackoffSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &scriptedController{refuse: 6, heartbeatS: 10}
		const minB, maxB = 100 * time.Millisecond, 800 * time.Millisecond
		runScripted(t, c, agent.Config{MinBackoff: minB, MaxBackoff: maxB, PollWait: time.Minute}, time.Minute)
		if len(c.registers) != c.refuse+1 {
			t.Fatalf("register calls: got %d, want %d refused and then one accepted", len(c.registers), c.refuse)
		}
		want := minB
		for i := 1; i < len(c.registers); i++ {
			gap := c.registers[i].Sub(c.registers[i-1])
			if gap < want/2 || gap > want {
				t.Errorf("retry %d came after %s, want within [%s, %s]", i, gap, want/2, want)
			}
			want = min(2*want, maxB)
		}
	})
}

// TestAgentLeaseWaitSynctest: the agent long-polls for the heartbeat
// interval the controller gave when that is below LeaseWait, gives each
// lease call that plus LeaseSlack, and after a lease call fails with its
// deadline passed, asks again after MinBackoff at most.
func TestAgentLeaseWaitSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &scriptedController{heartbeatS: 10}
		const slack, minB = 5 * time.Second, time.Second
		runScripted(t, c, agent.Config{PollWait: time.Minute, PollSlack: slack, MinBackoff: minB, MaxBackoff: minB},
			time.Minute)
		if len(c.leases) < 2 {
			t.Fatalf("lease calls: got %d in a minute, want several", len(c.leases))
		}
		for i, at := range c.leases {
			if got, want := c.deadlines[i].Sub(at), 10*time.Second+slack; got != want {
				t.Errorf("lease %d: deadline %s after the call, want %s (heartbeat + slack)", i, got, want)
			}
			if i == 0 {
				continue
			}
			if gap := at.Sub(c.deadlines[i-1]); gap < minB/2 || gap > minB {
				t.Errorf("lease %d: asked %s after the last one's deadline, want within [%s, %s]", i, gap, minB/2, minB)
			}
		}
	})
}
