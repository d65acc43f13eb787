package project_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/build/buildtest"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/project"
	"github.com/skiffhq/skiff/internal/server"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/store/sqlite"
	"github.com/skiffhq/skiff/internal/testlog"
	"github.com/skiffhq/skiff/openapi"
)

// The tests of this package that push code run the controller `skiff
// server` runs (internal/server's assembly): the HTTP API on 127.0.0.1, a
// project.Service with its data dir, the build queue (RunBuilds) over the
// real buildah builder with RUN steps in gVisor, the local host as
// preparer and billing as the init floor. Only the builder is the test's
// (at the server's builder seam): the real one wrapped so that a test can
// hold builds, with its run root inside the data dir. No local host runs
// tasks. Every request and answer is checked against openapi/openapi.json.
//
// They do not call t.Parallel: builds are serialised per builder, each test
// has its own, and on 2 cores parallel builds only slow each other and make
// the timeout and restart tests flaky.

// minimalManifest is the smallest valid manifest (spec 2.3, issue 3).
const minimalManifest = `{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"}, "entrypoint": {"command": ["/runner"]}}`

// scratchDockerfile is the FROM scratch project's build file.
const scratchDockerfile = "FROM scratch\nCOPY runner /runner\nWORKDIR /app\n"

// serverOptions configure startServer. The zero value is a fresh data dir
// and store with the real builder.
type serverOptions struct {
	// DataDir is the server's --data-dir; "" makes a fresh one. A restart
	// passes the previous server's.
	DataDir string
	// Store is the server's store; nil opens <DataDir>/skiff.db.
	Store store.Store
	// Builder replaces the buildah builder (nil: build.New as core.go does).
	Builder project.ImageBuilder
	// AllowedBaseImages is --build-allow-base.
	AllowedBaseImages []string
	// The build queue's shape and the per-account caps (project.Config's);
	// zero values take the server's defaults.
	BuildWorkers, BuildsPerAccount int
	MaxBuildTime                   time.Duration
	Quotas                         project.Quotas
}

// testServer is one running controller.
type testServer struct {
	*apitest.Env
	DataDir  string
	BuildCfg build.Config // the real builder's configuration (zero with a fake)
	Builder  *holdBuilder
	logs     *testlog.Buffer
	stopOnce sync.Once
	stopFn   func()
}

// startServer starts a controller and stops it when the test ends.
func startServer(t testing.TB, opts serverOptions) *testServer {
	t.Helper()
	dataDir := opts.DataDir
	if dataDir == "" {
		if opts.Builder == nil {
			buildtest.RequireTools(t)
		}
		// Short, and unmounted before removal: runsc and buildah mount
		// below it (see buildtest.DataDir).
		dataDir = buildtest.DataDir(t)
	}
	db := opts.Store
	if db == nil {
		db = openStore(t, dataDir)
	}
	logs := &testlog.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log (%s):\n%s", dataDir, logs.Tail(400))
		}
	})
	ts := &testServer{DataDir: dataDir, logs: logs}
	// The builder the server runs: the buildah builder as the server makes
	// it, with its run root inside the data dir so that the test's cleanup
	// reaches it, or the test's fake; held by holdBuilder either way.
	inner := opts.Builder
	if inner == nil {
		buildtest.RequireTools(t)
		ts.BuildCfg = build.Config{
			RunscPath:   build.DefaultRunscPath,
			StorageRoot: filepath.Join(dataDir, "buildah", "storage"),
			RunRoot:     filepath.Join(dataDir, "run"),
			ImagesDir:   filepath.Join(dataDir, "images"),
			// The flags' defaults: gVisor, private network, 2g.
			Isolation: build.IsolationOCI, Network: build.NetworkPrivate, MemoryLimit: "2g",
			AllowedBaseImages: opts.AllowedBaseImages,
		}
		if r := os.Getenv("SKIFF_RUNSC"); r != "" {
			ts.BuildCfg.RunscPath = r
		}
		b, err := build.New(t.Context(), ts.BuildCfg, log.With("component", "builder"))
		if err != nil {
			t.Fatalf("build.New: %v", err)
		}
		ts.BuildCfg = b.Config()
		inner = build.ProjectBuilder{B: b}
	}
	ts.Builder = &holdBuilder{inner: inner}

	srv, err := server.New(t.Context(), server.Config{
		DataDir: dataDir, DB: db, Listen: "127.0.0.1:0", Logger: log, Version: "test", DrainTimeout: 5 * time.Second,
		Builder: ts.Builder,
		Host:    server.HostConfig{Disabled: true},
		Fair: server.FairConfig{BuildWorkers: opts.BuildWorkers, BuildsPerAccount: opts.BuildsPerAccount,
			BuildTimeout: opts.MaxBuildTime, Quotas: opts.Quotas},
	})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- srv.Run(ctx) }()
	select {
	case <-srv.Ready():
	case err := <-runErr:
		t.Fatalf("server.Run: %v", err)
	}
	c, err := apitest.LoadContract(openapi.Document, srv.API().Routes())
	if err != nil {
		t.Fatal(err)
	}
	ts.Env = &apitest.Env{URL: srv.URL(), Server: srv.API(), Store: db, Auth: srv.Auth(), Billing: srv.Billing(),
		Projects: srv.Projects(), Jobs: srv.Jobs(), Blob: srv.Blob(), Artifacts: srv.Artifacts(), Payments: srv.Payments(),
		Broker: srv.Broker(), Metrics: srv.Metrics(), Contract: c, Controller: srv}
	// Shutdown as `skiff server` does it: stop the build queue (a build in
	// progress is interrupted), then serving, then background work.
	ts.stopFn = func() {
		cancel()
		if err := <-runErr; err != nil {
			t.Errorf("server: %v", err)
		}
	}
	t.Cleanup(ts.Stop)
	return ts
}

// Stop shuts the server down; a build in progress is interrupted and stays
// "building" in the store, as after a real shutdown.
func (ts *testServer) Stop() { ts.stopOnce.Do(ts.stopFn) }

func openStore(t testing.TB, dataDir string) store.Store {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(dataDir, "skiff.db"))
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(t.Context(), time.Now().UTC()); err != nil {
		t.Fatalf("migrate sqlite: %v", err)
	}
	return db
}

// holdBuilder lets a test keep builds waiting, so that it can look at a
// push while it is in progress without racing the builder.
type holdBuilder struct {
	inner project.ImageBuilder
	mu    sync.Mutex
	gate  chan struct{} // nil: builds go straight through
	calls int
}

// Hold makes builds wait until release is called.
func (h *holdBuilder) Hold() (release func()) {
	ch := make(chan struct{})
	h.mu.Lock()
	h.gate = ch
	h.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			h.gate = nil
			h.mu.Unlock()
			close(ch)
		})
	}
}

// Calls is how many builds were started.
func (h *holdBuilder) Calls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls
}

func (h *holdBuilder) Build(ctx context.Context, req project.BuildRequest) (*project.BuildResult, error) {
	h.mu.Lock()
	h.calls++
	gate := h.gate
	h.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return h.inner.Build(ctx, req)
}

// entry is one tar entry of a test tarball.
type entry struct {
	name     string
	body     string
	mode     int64 // 0: 0644 for files, 0755 for dirs
	typ      byte  // 0: tar.TypeReg
	linkname string
	size     int64 // for headers that lie; 0: len(body)
}

// tgz makes a gzip-compressed tar of the entries, in order.
func tgz(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: e.mode, Typeflag: e.typ, Linkname: e.linkname,
			Size: int64(len(e.body)), ModTime: time.Unix(1_700_000_000, 0)}
		if hdr.Typeflag == 0 {
			hdr.Typeflag = tar.TypeReg
		}
		if hdr.Typeflag != tar.TypeReg {
			hdr.Size = 0
		}
		if hdr.Mode == 0 {
			hdr.Mode = 0o644
			if hdr.Typeflag == tar.TypeDir {
				hdr.Mode = 0o755
			}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatalf("tar header %s: %v", e.name, err)
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// scratchProject is the FROM scratch project: the static runner, a
// Dockerfile, a manifest and any extra files (name -> content).
func scratchProject(t testing.TB, runner []byte, dockerfile, manifest string, extra ...entry) []byte {
	t.Helper()
	entries := []entry{
		{name: "Dockerfile", body: dockerfile},
		{name: "runner", body: string(runner), mode: 0o755},
		{name: project.ManifestFile, body: manifest},
	}
	return tgz(t, append(entries, extra...)...)
}

// readRunner compiles the static test runner (buildtest.StaticRunner).
func readRunner(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(buildtest.StaticRunner(t))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// push posts a tarball as the raw body. application/octet-stream is one of
// the two media types the document describes for it.
func push(t testing.TB, c *apitest.Client, name string, body []byte) *apitest.Response {
	t.Helper()
	return c.Do(t, apitest.Request{Method: http.MethodPost, Path: "/api/v1/projects/" + name + "/push", Body: body,
		Header: http.Header{"Content-Type": {"application/octet-stream"}}})
}

// pushAccepted pushes and wants 202 with a push record.
func pushAccepted(t testing.TB, c *apitest.Client, name string, body []byte) apiv1.PushRecord {
	t.Helper()
	var rec apiv1.PushRecord
	push(t, c, name, body).JSON(t, http.StatusAccepted, &rec)
	if rec.PushRef == "" {
		t.Fatalf("push answered 202 without push_ref")
	}
	return rec
}

// waitPush polls a push record until it is terminal.
func waitPush(t testing.TB, c *apitest.Client, statusURL string, within time.Duration) apiv1.PushRecord {
	t.Helper()
	return apitest.WaitPush(t, c, statusURL, within, 100*time.Millisecond)
}

// waitStatus polls GET /status until ok accepts it.
func waitStatus(t testing.TB, c *apitest.Client, name string, within time.Duration, ok func(*apiv1.Readiness) bool) *apiv1.Readiness {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		rd := status(t, c, name)
		if ok(rd) {
			return rd
		}
		if time.Now().After(deadline) {
			t.Fatalf("project %s status never reached the wanted state in %s; last: %+v", name, within, rd)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func status(t testing.TB, c *apitest.Client, name string) *apiv1.Readiness {
	t.Helper()
	var rd apiv1.Readiness
	c.Get(t, "/api/v1/projects/"+name+"/status").JSON(t, http.StatusOK, &rd)
	return &rd
}

func createProject(t testing.TB, c *apitest.Client, name string) {
	t.Helper()
	c.Post(t, "/api/v1/projects", map[string]any{"name": name}).Want(t, http.StatusCreated)
}

// pushDirs lists what is left under <data-dir>/pushes.
func pushDirs(t testing.TB, dataDir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dataDir, "pushes"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// wantNoPushDirs waits a little for <data-dir>/pushes to empty: the build
// queue removes a finished push's context right after recording the end of
// its build, so a client can see the record before the removal.
func wantNoPushDirs(t testing.TB, dataDir string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := pushDirs(t, dataDir)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("got %v under <data-dir>/pushes, want nothing left", left)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// jsonField decodes one top-level field of a JSON body.
func jsonField(t testing.TB, body []byte, field string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return m[field]
}
