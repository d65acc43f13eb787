package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/server"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/store/postgres/pgtest"
	"github.com/skiffhq/skiff/internal/testlog"
)

// countingDriver stands in for the local host's sandbox (the driver seam):
// it runs nothing and counts the cleanups the server asks of it.
type countingDriver struct{ cleanups atomic.Int32 }

func (d *countingDriver) Name() string { return "fake" }

func (d *countingDriver) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Outcome, error) {
	return nil, fmt.Errorf("the test driver runs nothing")
}

func (d *countingDriver) Cleanup(context.Context) error {
	d.cleanups.Add(1)
	return nil
}

// engines are the two ways a server opens its store: SQLite under its
// data dir, and PostgreSQL by URL (with duties shared through leases).
func engines(t *testing.T) map[string]func(cfg *server.Config) {
	return map[string]func(cfg *server.Config){
		"sqlite": func(*server.Config) {},
		"postgres": func(cfg *server.Config) {
			cfg.DatabaseURL = pgtest.NewDatabase(t)
		},
	}
}

// testConfig is a server on a fresh data dir and a free loopback port,
// with no builder (no buildah here) and the fake driver under its local
// host.
func testConfig(t *testing.T, logs io.Writer, d sandbox.Driver) server.Config {
	return server.Config{
		DataDir: t.TempDir(), Listen: "127.0.0.1:0", Version: "test",
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Build:  server.BuildConfig{Disabled: true},
		Host:   server.HostConfig{Slots: 1, Warm: 0},
		Driver: d, Heartbeat: time.Second, DrainTimeout: 5 * time.Second,
	}
}

// TestNewRunShutdown assembles a server on each engine, runs it, checks
// that it serves the API and the agent routes, that its local host joins
// the fleet and its duties run, and that Shutdown stops all it started:
// the local host's sandboxes are cleaned and no goroutine is left.
func TestNewRunShutdown(t *testing.T) {
	for name, engine := range engines(t) {
		t.Run(name, func(t *testing.T) {
			logs := &testlog.Buffer{}
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("server log:\n%s", logs.Tail(60))
				}
			})
			driver := &countingDriver{}
			cfg := testConfig(t, logs, driver)
			engine(&cfg)
			ctx := t.Context()
			// An expired wallet challenge, in the store before the server
			// opens it: the sweep duty purges it.
			db, err := server.OpenStore(ctx, cfg.DataDir, cfg.DatabaseURL)
			if err != nil {
				t.Fatal(err)
			}
			past := time.Now().Add(-time.Hour)
			if err := db.WalletChallengeCreate(ctx, &store.WalletChallenge{ID: "wch_expired", Chain: "eip155:8453",
				Address: "0x" + strings.Repeat("1", 40), Nonce: "n", Message: "m", Status: "pending",
				ExpiresAt: past, CreatedAt: past.Add(-time.Minute)}); err != nil {
				t.Fatal(err)
			}
			db.Close()
			// Counted once the test's own connections (pgtest's) are open.
			before := runtime.NumGoroutine()
			srv, err := server.New(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			runErr := make(chan error, 1)
			go func() { runErr <- srv.Run(context.Background()) }()

			waitFor(t, "the API to answer", func() bool { return get(srv.URL()+"/health") == http.StatusOK })
			// The agent routes are the fleet controller's: a host without
			// a token is refused there, not answered 404 by the API.
			resp, err := http.Post(srv.URL()+agentproto.PollPath, "application/json", bytes.NewReader([]byte(`{}`)))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("agent lease without a token: %d, want 401", resp.StatusCode)
			}
			waitFor(t, "the local host to register", func() bool { return srv.Controller().HostCounts()["registered"] == 1 })
			waitFor(t, "the sweep duty to purge the expired challenge", func() bool {
				_, err := srv.Store().WalletChallengeGet(ctx, "wch_expired")
				return err != nil
			})
			if driver.cleanups.Load() != 1 {
				t.Errorf("cleanups at start: %d, want 1", driver.cleanups.Load())
			}

			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil {
				t.Fatal(err)
			}
			if err := <-runErr; err != nil {
				t.Fatalf("Run: %v", err)
			}
			if driver.cleanups.Load() != 2 {
				t.Errorf("cleanups after shutdown: %d, want 2 (start and stop)", driver.cleanups.Load())
			}
			if code := get(srv.URL() + "/health"); code != 0 {
				t.Errorf("after shutdown /health answered %d", code)
			}
			noGoroutinesLeft(t, before)
		})
	}
}

// TestShutdownWithoutRun releases what New opened: the listener's
// address is free again.
func TestShutdownWithoutRun(t *testing.T) {
	before := runtime.NumGoroutine()
	cfg := testConfig(t, io.Discard, &countingDriver{})
	srv, err := server.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr().String()
	if err := srv.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	cfg.Listen = addr
	cfg.DataDir = t.TempDir()
	again, err := server.New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("a second server on the first's address: %v", err)
	}
	if err := again.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := again.Run(t.Context()); err == nil {
		t.Error("Run after Shutdown: nil error")
	}
	noGoroutinesLeft(t, before)
}

// TestNewFailsCleanly: a server that cannot start returns the error and
// leaves nothing behind.
func TestNewFailsCleanly(t *testing.T) {
	before := runtime.NumGoroutine()
	cfg := testConfig(t, io.Discard, &countingDriver{})
	cfg.Artifacts.StoreURL = "ftp://nowhere"
	if _, err := server.New(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "--artifact-store") {
		t.Fatalf("New with a bad artifact store: %v", err)
	}
	noGoroutinesLeft(t, before)
}

func get(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// noGoroutinesLeft waits for the goroutines to fall back to before (idle
// HTTP client connections take a moment to notice the server's close).
func noGoroutinesLeft(t *testing.T, before int) {
	t.Helper()
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("%d goroutines left running (had %d before):\n%s", runtime.NumGoroutine(), before, buf[:n])
		}
		time.Sleep(50 * time.Millisecond)
	}
}
