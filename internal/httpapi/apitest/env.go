// Package apitest runs the real HTTP API for tests: a server on 127.0.0.1
// over a fresh store, accounts and keys with roles, and a client that sends
// real requests and checks every request and response against
// openapi/openapi.json. Tests of any package may use it.
package apitest

import (
	"context"
	"log/slog"
	"net"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/artifact/externalhttp"
	"github.com/skiffhq/skiff/internal/payment/facilitatorhttp"
	"github.com/skiffhq/skiff/internal/store/storetest"

	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/auth"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/diskfree"
	"github.com/skiffhq/skiff/internal/event"
	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/job/submit"
	"github.com/skiffhq/skiff/internal/metrics"
	"github.com/skiffhq/skiff/internal/payment"
	"github.com/skiffhq/skiff/internal/project"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/testlog"
)

// Epoch is where the fake clock of an Env starts.
var Epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Engine opens a fresh, migrated store of one kind for a test.
type Engine = storetest.Engine

// Engines lists every store engine (storetest.Engines).
func Engines() []Engine { return storetest.Engines() }

// OpenSQLite and OpenPostgres open migrated stores (storetest's openers).
var (
	OpenSQLite   = storetest.OpenSQLite
	OpenPostgres = storetest.OpenPostgres
)

// Options configure Start. The zero value is a fresh SQLite store and a fake
// clock at Epoch.
type Options struct {
	Store store.Store // nil: OpenSQLite(t)
	Clock *clock.Fake // nil: clock.NewFake(Epoch)
	// Payments turns payments on with this configuration (PublicURL is
	// set to the test server's URL); Facilitator replaces the HTTP one.
	Payments    *payment.Config
	Facilitator payment.Facilitator
	// Chain is the node the payment service asks when a settle answer
	// was lost (nil: none, as without --x402-rpc-url).
	Chain payment.Chain
	// WalletPolicy and the auth rate limits configure wallet sign-in
	// (0: the defaults, negative: unlimited).
	WalletPolicy                      *auth.WalletPolicy
	AuthRatePerAddress, AuthRatePerIP int
	// Streams configures the event streams; its Broker is the Env's own
	// (a zero value gets the server's defaults).
	Streams httpapi.StreamConfig
	// Wake, when set, is called with the broker once it runs, to wake it
	// from another source too (PostgreSQL notifications).
	Wake func(ctx context.Context, b *event.Broker)
	// BrokerPoll is how often the broker reads the feed without a wake-up
	// (zero: its default).
	BrokerPoll time.Duration
	// BrokerBuffer is how many events a stream may have waiting before it
	// is closed as slow (zero: the broker's default).
	BrokerBuffer int
	// MetricsToken is the bearer token GET /metrics accepts besides admins.
	MetricsToken string
	// Listener, when set, is where the server listens (a restarted server
	// can take over its predecessor's address); nil: a fresh 127.0.0.1 port.
	Listener net.Listener
	// TrustedProxies and Limits are passed to httpapi.Config.
	TrustedProxies []netip.Prefix
	Limits         *httpapi.Limits
	// Blob holds artifact bytes; nil: a local store under t.TempDir().
	Blob artifact.Blob
	// Artifacts overrides the artifact limits (quota, upload size, grace);
	// its Store, Blob, Clock and Logger are filled in.
	Artifacts artifact.Config
	// DiskFree is passed to httpapi.Config (a test fakes a full disk
	// through its Stat).
	DiskFree *diskfree.Checker
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
	Payments  *payment.Service
	Broker    *event.Broker
	Metrics   *metrics.Set
	Contract  *Contract

	ts   *httptest.Server
	stop context.CancelFunc
}

// Stop shuts the server down as a controller going away would: open
// connections (streams included) are cut, the broker stops, and the
// address is free for another server. The services stay usable.
func (e *Env) Stop() {
	e.ts.CloseClientConnections()
	e.ts.Close()
	e.stop()
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
	// Auth is made once the server's address is known (wallet messages
	// name it), below.
	e := &Env{Store: db, Clock: clk, Billing: billing.New(db, clk, nil)}
	var set *metrics.Set
	e.Broker = event.New(event.Config{Feed: db, Log: log, PollInterval: opts.BrokerPoll, Buffer: opts.BrokerBuffer, OnEvent: func(ev *store.JobEvent) { set.ObserveEvent(ev) }})
	set = metrics.New(metrics.Gauges{OpenStreams: e.Broker.Count,
		QueueDepth: func() (int64, error) { return db.TaskQueuedCount(context.Background()) }})
	e.Metrics = set
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	if err := e.Broker.Start(ctx); err != nil {
		t.Fatalf("start event broker: %v", err)
	}
	if opts.Wake != nil {
		opts.Wake(ctx, e.Broker)
	}
	streams := opts.Streams
	streams.Broker = e.Broker
	e.Jobs = job.New(job.Config{Store: event.NotifyingStore(db, e.Broker), Clock: clk, Logger: log, Billing: e.Billing,
		Limits: submit.Limits{Presets: submit.DefaultPresets()}})
	e.Projects = project.New(project.Config{Store: db, Clock: clk, Logger: log, Jobs: e.Jobs, DataDir: t.TempDir()})
	t.Cleanup(e.Projects.Close)
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
	if acfg.Fetcher == nil {
		acfg.Fetcher = externalhttp.Fetcher{}
	}
	e.Artifacts = artifact.New(acfg)
	// The server's address is known before it is built: wallet messages
	// and payment resources name it.
	ts := httptest.NewUnstartedServer(nil)
	if opts.Listener != nil {
		ts.Listener.Close()
		ts.Listener = opts.Listener
	}
	e.URL = "http://" + ts.Listener.Addr().String()
	e.Auth = auth.New(db, clk, auth.WalletConfig{PublicURL: e.URL, Policy: opts.WalletPolicy})
	var pcfg payment.Config
	if opts.Payments != nil {
		pcfg = *opts.Payments
		pcfg.PublicURL = e.URL
	}
	fac := opts.Facilitator
	if fac == nil && pcfg.FacilitatorURL != "" {
		fac = facilitatorhttp.New(pcfg.FacilitatorURL, pcfg.FacilitatorHeaders, pcfg.FacilitatorTimeout)
	}
	e.Payments = payment.NewService(pcfg, db, clk, log, fac, opts.Chain)
	e.Server = httpapi.New(httpapi.Config{
		Logger: log, Clock: clk, Store: db, Auth: e.Auth, Billing: e.Billing, Projects: e.Projects, Jobs: e.Jobs,
		Version: "test", Payments: e.Payments, AuthRatePerAddress: opts.AuthRatePerAddress, AuthRatePerIP: opts.AuthRatePerIP,
		Streams: streams, Metrics: e.Metrics, MetricsToken: opts.MetricsToken,
		TrustedProxies: opts.TrustedProxies, Limits: opts.Limits, Artifacts: e.Artifacts,
		DiskFree: opts.DiskFree,
	})
	e.Server.SetCoreStarted(true)
	c, err := ServiceContract()
	if err != nil {
		t.Fatal(err)
	}
	e.Contract = c
	ts.Config.Handler = e.Server
	ts.Start()
	t.Cleanup(ts.Close)
	e.ts, e.stop = ts, stop
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
