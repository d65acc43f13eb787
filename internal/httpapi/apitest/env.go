// Package apitest runs the real HTTP API for tests: a server on 127.0.0.1
// over a fresh store, accounts and keys with roles, and a client that sends
// real requests and checks every request and response against
// openapi/openapi.json. Tests of any package may use it.
package apitest

import (
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/auth"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/job/submit"
	"github.com/skiffhq/skiff/internal/project"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/store/postgres"
	"github.com/skiffhq/skiff/internal/store/postgres/pgtest"
	"github.com/skiffhq/skiff/internal/store/sqlite"
	"github.com/skiffhq/skiff/internal/testlog"
	"github.com/skiffhq/skiff/openapi"
)

// Epoch is where the fake clock of an Env starts.
var Epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Engine opens a fresh, migrated store of one kind for a test.
type Engine struct {
	Name string
	Open func(t testing.TB) store.Store
	// Skip, when set, says why the engine cannot run here; tests pass it
	// to testenv.Skip, which fails them under SKIFF_TEST_REQUIRE_ALL=1.
	Skip string
}

// Engines lists every store engine. PostgreSQL runs only when
// SKIFF_TEST_POSTGRES_URL names a server; otherwise its Skip says so.
func Engines() []Engine {
	pg := Engine{Name: "postgres", Open: OpenPostgres}
	if os.Getenv(pgtest.EnvURL) == "" {
		pg.Skip = "PostgreSQL tests skipped: set " + pgtest.EnvURL
	}
	return []Engine{{Name: "sqlite", Open: OpenSQLite}, pg}
}

// OpenSQLite opens a migrated SQLite store under t.TempDir(), closed when
// the test ends.
func OpenSQLite(t testing.TB) store.Store {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "skiff.db"))
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(t.Context(), Epoch); err != nil {
		t.Fatalf("migrate sqlite: %v", err)
	}
	return db
}

// OpenPostgres opens a migrated store in a fresh PostgreSQL database
// (pgtest.NewDatabase), or skips the test when none is configured.
func OpenPostgres(t testing.TB) store.Store {
	t.Helper()
	db, err := postgres.Open(t.Context(), pgtest.NewDatabase(t))
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(t.Context(), Epoch); err != nil {
		t.Fatalf("migrate postgres: %v", err)
	}
	return db
}

// Options configure Start. The zero value is a fresh SQLite store and a fake
// clock at Epoch.
type Options struct {
	Store store.Store // nil: OpenSQLite(t)
	Clock *clock.Fake // nil: clock.NewFake(Epoch)
	// Blob holds artifact bytes; nil: a local store under t.TempDir().
	Blob artifact.Blob
	// Artifacts overrides the artifact limits (quota, upload size, grace);
	// its Store, Blob, Clock and Logger are filled in.
	Artifacts artifact.Config
}

// Env is one running API server and the services behind it.
type Env struct {
	URL       string // http://127.0.0.1:port, no trailing slash
	Server    *httpapi.Server
	Store     store.Store
	Clock     *clock.Fake
	Auth      *auth.Service
	Billing   *billing.Service
	Projects  *project.Service
	Jobs      *job.Service
	Blob      artifact.Blob
	Artifacts *artifact.Service
	Contract  *Contract
}

// Start serves the API on 127.0.0.1 until the test ends. The server's log is
// printed when the test fails.
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	db := opts.Store
	if db == nil {
		db = OpenSQLite(t)
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.NewFake(Epoch)
	}
	logs := &testlog.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log (last %d lines):\n%s", logTail, logs.Tail(logTail))
		}
	})
	e := &Env{Store: db, Clock: clk, Auth: auth.New(db, clk), Billing: billing.New(db, clk)}
	e.Projects = project.New(project.Config{Store: db, Clock: clk, Logger: log, DataDir: t.TempDir()})
	t.Cleanup(e.Projects.Close)
	e.Jobs = job.New(job.Config{Store: db, Clock: clk, Logger: log, Billing: e.Billing,
		Limits: submit.Limits{Presets: submit.DefaultPresets()}})
	e.Projects.SetJobs(e.Jobs)
	e.Blob = opts.Blob
	if e.Blob == nil {
		local, err := artifact.NewLocal(filepath.Join(t.TempDir(), "artifacts"))
		if err != nil {
			t.Fatal(err)
		}
		e.Blob = local
	}
	acfg := opts.Artifacts
	acfg.Store, acfg.Blob, acfg.Clock, acfg.Logger = db, e.Blob, clk, log
	e.Artifacts = artifact.New(acfg)
	e.Server = httpapi.New(httpapi.Config{
		Logger: log, Clock: clk, Store: db, Auth: e.Auth, Billing: e.Billing, Projects: e.Projects, Jobs: e.Jobs,
		Artifacts: e.Artifacts, Version: "test",
	})
	e.Server.SetCoreStarted(true)
	c, err := LoadContract(openapi.Document, e.Server.Routes())
	if err != nil {
		t.Fatal(err)
	}
	e.Contract = c
	ts := httptest.NewServer(e.Server)
	t.Cleanup(ts.Close)
	e.URL = ts.URL
	return e
}

// Account is an account with one key of each role.
type Account struct {
	ID, Name              string
	Member, Viewer, Admin string // bearer secrets (flk_...)
}

// NewAccount creates an account named name with a member, a viewer and an
// admin key.
func (e *Env) NewAccount(t testing.TB, name string) *Account {
	t.Helper()
	a := &Account{Name: name}
	for _, k := range []struct {
		role store.Role
		dst  *string
	}{{store.RoleMember, &a.Member}, {store.RoleViewer, &a.Viewer}, {store.RoleAdmin, &a.Admin}} {
		secret, acct, err := e.Auth.CreateKey(t.Context(), name, k.role)
		if err != nil {
			t.Fatalf("create %s key for %s: %v", k.role, name, err)
		}
		*k.dst, a.ID = secret, acct.ID
	}
	return a
}

// Client returns a client that sends token as its bearer token; "" sends no
// Authorization header.
func (e *Env) Client(token string) *Client {
	return &Client{BaseURL: e.URL, Token: token, Contract: e.Contract}
}

// logTail is how many lines of the server log a failed test prints.
const logTail = 40
