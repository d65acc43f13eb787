package fleet_test

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/agent"
	"github.com/skiffhq/skiff/internal/agent/agenthttp"
	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/artifact/externalhttp"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/fleet"
	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/ociimage"
	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/sandbox/gvisor/gvisortest"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/store/storetest"
	"github.com/skiffhq/skiff/internal/testlog"
	"github.com/skiffhq/skiff/internal/wake"
)

// harness is a controller with the job service over a real store, serving
// agentproto on a loopback HTTP server, and a published project whose image
// is the sandbox test runner. Hosts are real agents running gVisor.
//
// It builds its controller by hand rather than through internal/server's
// assembly, on purpose: it tunes the controller below what any flag sets
// (a 200 ms sweep, LostAfter of three sub-second heartbeats, the retry
// avoidance window), restarts the controller alone over the same store
// while its hosts keep running, and starts several hosts of its own with
// test backoffs. The server's assembly runs one local host and the
// production timings; its own tests (internal/server) and the API tests
// (apitest) cover it.
type harness struct {
	t         *testing.T
	st        store.Store
	jobs      *job.Service
	wake      *wake.Signal // shared by jobs and every controller start
	ctrl      *fleet.Controller
	srv       *httptest.Server
	accountID string
	imagesDir string
	log       *slog.Logger
	images    *ociimage.Cache
	driver    sandbox.Driver
	cancel    context.CancelFunc
	heartbeat time.Duration
	arts      *artifact.Service
	blob      *artifact.Local

	agentsMu sync.Mutex
	agents   map[string]*agent.Agent // by host id
}

type harnessOptions struct {
	store store.Store // default: a fresh SQLite store
	// heartbeat is the controller's heartbeat interval and the hosts'
	// long-poll wait; default 1 s.
	heartbeat time.Duration
	// allowPrivate lets external artifacts reach loopback (a test server).
	allowPrivate bool
}

func newHarness(t *testing.T, opts harnessOptions) *harness {
	t.Helper()
	driver := gvisortest.Driver(t, "skiff-fleet-test")
	st := opts.store
	if st == nil {
		st = storetest.OpenSQLite(t)
	}
	logs := &testlog.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() {
		if t.Failed() {
			out := logs.String()
			if len(out) > 20000 {
				out = out[len(out)-20000:]
			}
			t.Logf("log:\n%s", out)
		}
	})
	h := &harness{t: t, st: st, log: log, driver: driver, imagesDir: t.TempDir(), heartbeat: cmp.Or(opts.heartbeat, time.Second)}
	h.wake = wake.New()
	h.jobs = job.New(job.Config{Store: st, Clock: clock.System{}, Logger: log, Wake: h.wake})
	blob, err := artifact.NewLocal(filepath.Join(t.TempDir(), "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	h.blob = blob
	h.arts = artifact.New(artifact.Config{Store: st, Blob: blob, Clock: clock.System{}, Logger: log, AllowPrivate: opts.allowPrivate,
		Fetcher: externalhttp.Fetcher{}})

	layoutDir, digest := sandboxtest.RunnerImage(t)
	hex := strings.TrimPrefix(digest, "sha256:")
	if err := os.Symlink(layoutDir, filepath.Join(h.imagesDir, hex)); err != nil {
		t.Fatal(err)
	}
	h.images = &ociimage.Cache{Root: t.TempDir(), MountPoints: sandbox.MountPoints(), Logger: log}
	// Unpack once up front, so that no agent's first attempt races an unpack
	// that writes an executable (ETXTBSY, see the agent tests).
	if _, err := h.images.Unpack(t.Context(), layoutDir, digest); err != nil {
		t.Fatal(err)
	}
	h.start()

	h.accountID = fundedProject(t, st, clock.System{}, digest)
	return h
}

// fundedProject creates an account with 100 USD of credit and a published
// project "runner" whose image is digest, and returns the account's id.
func fundedProject(t *testing.T, st store.Store, clk clock.Clock, digest string) string {
	t.Helper()
	ctx := context.Background()
	now := clk.Now()
	acc, err := st.AccountCreate(ctx, &store.AccountCreateParams{ID: id.New(id.Account), Name: "fleet-" + strings.ToLower(rand.Text()[:6]), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := billing.New(st, clk, nil).GrantCredit(ctx, acc.ID, 100_000_000, "test"); err != nil {
		t.Fatal(err)
	}
	p, err := st.ProjectCreate(ctx, &store.ProjectWriteParams{ID: id.New(id.Project), AccountID: acc.ID, Name: "runner",
		Env: json.RawMessage(`{"PROJECT_VAR":"from-project"}`), SetupTimeoutS: 600, RuntimeKind: "oci", RuntimeVersion: 1, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	manifest := `{"version":1,"runtime":{"kind":"oci","sandbox":"gvisor","workdir":"/app"},"entrypoint":{"command":["/usr/local/bin/runner"]}}`
	pu, err := st.PushCreate(ctx, &store.PushCreateParams{ID: id.New(id.Push), ProjectID: p.ID, AccountID: acc.ID,
		ContentHash: "sha256:" + strings.Repeat("0", 64), Manifest: json.RawMessage(manifest), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PushStart(ctx, pu.ID, now); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PushFinish(ctx, &store.PushFinishParams{ID: pu.ID, Status: store.PushPublished, ImageDigest: digest, Now: now}); err != nil {
		t.Fatal(err)
	}
	return acc.ID
}

// start runs a controller over h's store; a second start after stop is a
// controller restart.
func (h *harness) start() {
	h.ctrl = fleet.NewController(fleet.ControllerConfig{Store: h.st, Jobs: h.jobs, Wake: h.wake, Log: h.log, ImagesDir: h.imagesDir, Artifacts: h.arts,
		HeartbeatInterval: h.heartbeat, LostAfter: 3 * h.heartbeat, SweepInterval: 200 * time.Millisecond,
		RetryAvoidWindow: 30 * time.Second})
	h.srv = httptest.NewServer(httpapi.AgentHandler(h.ctrl, h.log))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = h.ctrl.Run(ctx) }()
	h.cancel = func() { cancel(); <-done }
	h.t.Cleanup(h.stop)
}

// stop closes the controller's server abruptly, as a crash would.
func (h *harness) stop() {
	if h.srv == nil {
		return
	}
	h.srv.CloseClientConnections()
	h.srv.Close()
	h.cancel()
	h.srv = nil
}

// host starts an agent with slots slots; stopping it (the returned func, or
// the test's end) kills its attempts and reports them.
func (h *harness) host(slots int) (hostID string, stop func()) {
	h.t.Helper()
	return h.hostWithCache(slots, "")
}

// hostWithCache is host with the agent's cache root at cacheRoot (a fresh
// directory when empty).
func (h *harness) hostWithCache(slots int, cacheRoot string) (hostID string, stop func()) {
	h.t.Helper()
	hostID = id.New(id.Worker)
	token := "tok-" + hostID
	h.ctrl.AllowHost(token, hostID)
	dir := h.t.TempDir()
	a, err := agent.New(agent.Config{
		Controller: &agenthttp.Client{BaseURL: h.srv.URL, Token: token},
		Driver:     h.driver, Images: h.images,
		WorkRoot: filepath.Join(dir, "work"), CacheRoot: cmp.Or(cacheRoot, filepath.Join(dir, "cache")),
		Slots: slots, Capacity: agentCapacity(slots), LayoutsInPlace: true,
		PollWait: h.heartbeat, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		ProgressInterval: 200 * time.Millisecond, ShutdownGrace: 20 * time.Second,
		Logger: h.log.With("host", hostID),
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.agentsMu.Lock()
	if h.agents == nil {
		h.agents = map[string]*agent.Agent{}
	}
	h.agents[hostID] = a
	h.agentsMu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	h.t.Cleanup(stop)
	return hostID, stop
}

func (h *harness) submit(js apiv1.JobSubmit) *store.Job {
	h.t.Helper()
	return submitRunner(h.t, h.jobs, h.accountID, js)
}

// submitRunner submits js to the fundedProject "runner" of accountID, with
// the test runner as its command and 1 CPU and 256 MB unless js says
// otherwise.
func submitRunner(t *testing.T, jobs *job.Service, accountID string, js apiv1.JobSubmit) *store.Job {
	t.Helper()
	project := "runner"
	js.Project = &project
	if js.RunnerCommand == nil {
		js.RunnerCommand = []string{"/usr/local/bin/runner"}
	}
	if js.Requirements == nil {
		cpu, mem := 1.0, int64(256)
		js.Requirements = &apiv1.JobRequirements{CPU: &cpu, MemoryMB: &mem}
	}
	j, err := jobs.Submit(context.Background(), accountID, &js)
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return j
}

// wait polls the job until it is terminal.
func (h *harness) wait(j *store.Job, within time.Duration) *store.Job {
	h.t.Helper()
	deadline := time.Now().Add(within)
	for {
		got, err := h.st.JobGetByID(context.Background(), j.ID)
		if err != nil {
			h.t.Fatal(err)
		}
		if got.Status.IsTerminal() {
			return got
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("job %s still %s after %s", j.ID, got.Status, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitFor polls until ok is true for the job's tasks.
func (h *harness) waitFor(j *store.Job, within time.Duration, what string, ok func([]*store.Task, []*store.Attempt) bool) {
	h.t.Helper()
	deadline := time.Now().Add(within)
	for {
		tasks, err := h.st.TaskList(context.Background(), j.ID)
		if err != nil {
			h.t.Fatal(err)
		}
		atts, err := h.st.AttemptList(context.Background(), j.ID)
		if err != nil {
			h.t.Fatal(err)
		}
		if ok(tasks, atts) {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("job %s: %s did not happen within %s", j.ID, what, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (h *harness) tasks(j *store.Job) ([]*store.Task, []*store.Attempt) {
	h.t.Helper()
	tasks, err := h.st.TaskList(context.Background(), j.ID)
	if err != nil {
		h.t.Fatal(err)
	}
	atts, err := h.st.AttemptList(context.Background(), j.ID)
	if err != nil {
		h.t.Fatal(err)
	}
	return tasks, atts
}

func (h *harness) eventKinds(j *store.Job) []string {
	h.t.Helper()
	evs, err := h.st.JobEventList(context.Background(), j.ID, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	return kinds
}

func payload(t *testing.T, p sandboxtest.Payload) json.RawMessage { return p.Encode(t) }

func ptr[T any](v T) *T { return &v }
