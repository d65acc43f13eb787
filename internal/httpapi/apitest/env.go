// Package apitest runs the real HTTP API for tests: a server on 127.0.0.1
// over a fresh store, accounts and keys with roles, and a client that sends
// real requests and checks every request and response against
// openapi/openapi.json. Tests of any package may use it.
package apitest

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store/storetest"

	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/auth"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/diskfree"
	"github.com/skiffhq/skiff/internal/event"
	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/metrics"
	"github.com/skiffhq/skiff/internal/payment"
	"github.com/skiffhq/skiff/internal/project"
	"github.com/skiffhq/skiff/internal/server"
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
	// Controller is the assembled server (internal/server), for what the
	// fields above do not reach (the fleet controller, the agent routes).
	Controller *server.Server

	stop func()
}

// Stop shuts the server down as a controller going away would: open
// connections (streams included) end, the broker stops, and the address
// is free for another server. The store stays open.
func (e *Env) Stop() { e.stop() }

// Start serves the API on 127.0.0.1 until the test ends: the assembly
// `skiff server` runs (internal/server), with the fake clock at its clock
// seam, the test's store and blob store, no image builder (pushes stay
// queued: tests publish revisions with Publish) and no local host (Worker
// stands in for hosts). The server's log is printed when the test fails.
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
	cfg := server.Config{
		DataDir: t.TempDir(), DB: db, Listen: "127.0.0.1:0", Listener: opts.Listener, Logger: log, Version: "test",
		// A test server goes away at once, as a killed controller would.
		DrainTimeout: time.Second,
		// Worker claims for hosts the fleet controller never registered:
		// a heartbeat of an hour keeps its lost-host sweep (every
		// heartbeat, on the fake clock) from requeueing their attempts
		// while a test advances the clock by minutes.
		Heartbeat: time.Hour,
		Build:     server.BuildConfig{Disabled: true},
		Host:      server.HostConfig{Disabled: true},
		Payments: server.PaymentsConfig{WalletPolicy: opts.WalletPolicy,
			AuthRatePerAddress: opts.AuthRatePerAddress, AuthRatePerIP: opts.AuthRatePerIP},
		Streams: server.StreamsConfig{Timeout: opts.Streams.Timeout, PingInterval: opts.Streams.PingInterval,
			PerAccount: opts.Streams.PerAccount, BrokerPoll: opts.BrokerPoll, BrokerBuffer: opts.BrokerBuffer},
		MetricsToken: opts.MetricsToken,
		Front:        server.FrontConfig{TrustedProxies: opts.TrustedProxies, Limits: opts.Limits},
		Artifacts: server.ArtifactsConfig{MaxUploadBytes: opts.Artifacts.MaxUploadBytes, QuotaBytes: opts.Artifacts.QuotaBytes,
			Grace: opts.Artifacts.Grace, AllowPrivate: opts.Artifacts.AllowPrivate},
		Blob:        opts.Blob,
		Clock:       clk,
		Facilitator: opts.Facilitator,
		Chain:       opts.Chain,
	}
	if opts.Payments != nil {
		cfg.Payments.Config = *opts.Payments
		cfg.Payments.Config.PublicURL = "" // the server's own URL
	}
	if opts.DiskFree != nil {
		cfg.MinFreeDisk, cfg.DiskStat = opts.DiskFree.Min, opts.DiskFree.Stat
	}
	srv, err := server.New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- srv.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-runErr; err != nil {
				t.Errorf("server: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	select {
	case <-srv.Ready():
	case err := <-runErr:
		t.Fatalf("server.Run: %v", err)
	}
	if opts.Wake != nil {
		opts.Wake(ctx, srv.Broker())
	}
	c, err := ServiceContract()
	if err != nil {
		t.Fatal(err)
	}
	return &Env{URL: srv.URL(), Server: srv.API(), Store: db, Clock: clk, Auth: srv.Auth(), Billing: srv.Billing(),
		Projects: srv.Projects(), Jobs: srv.Jobs(), Blob: srv.Blob(), Artifacts: srv.Artifacts(), Payments: srv.Payments(),
		Broker: srv.Broker(), Metrics: srv.Metrics(), Contract: c, Controller: srv, stop: stop}
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
