package server_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/build/buildtest"
	"github.com/skiffhq/skiff/internal/server"
	"github.com/skiffhq/skiff/internal/store/postgres/pgtest"
	"github.com/skiffhq/skiff/internal/testlog"
)

// config is the production assembly's defaults on a fresh data dir (and a
// fresh PostgreSQL database for "postgres"), listening on a free port, with
// a local gVisor host of one slot.
func config(t *testing.T, engine string, log io.Writer) server.Config {
	t.Helper()
	runsc := buildtest.RequireTools(t)
	cfg := server.Defaults()
	cfg.DataDir = buildtest.DataDir(t)
	cfg.Listen = "127.0.0.1:0"
	cfg.Build.Runsc, cfg.Build.Buildah = runsc, buildtest.Buildah()
	cfg.Host.Slots, cfg.Host.Warm = 1, 0
	cfg.Version = "test"
	cfg.Logger = slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if engine == "postgres" {
		cfg.DatabaseURL = pgtest.NewDatabase(t)
	}
	return cfg
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The assembly New builds is the whole controller: the API answers ready
// once the core runs, the host protocol is mounted beside it, and the
// local host registers through it over loopback, as a remote host would.
// Shutdown stops all of it and leaves no sandbox process behind; a second
// server on the same data dir starts where the first stopped.
func TestServerAssembly(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			var log testlog.Buffer
			cfg := config(t, engine, &log)
			defer func() {
				if t.Failed() {
					t.Logf("server log:\n%s", log.Tail(60))
				}
			}()
			for round := range 2 {
				s, err := server.New(t.Context(), cfg)
				if err != nil {
					t.Fatalf("round %d: New: %v", round, err)
				}
				if err := s.Start(t.Context()); err != nil {
					t.Fatalf("round %d: Start: %v", round, err)
				}
				base := "http://" + s.Addr()
				if code, body := get(t, base+"/ready"); code != http.StatusOK {
					t.Fatalf("round %d: GET /ready = %d %s, want 200", round, code, body)
				}
				// The host protocol is served by the same listener: a
				// register without a credential is refused, not a 404.
				resp, err := http.Post(base+agentproto.RegisterPath, "application/json", bytes.NewReader([]byte(`{}`)))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("round %d: POST %s without a credential = %d, want 401", round, agentproto.RegisterPath, resp.StatusCode)
				}
				// The local host registers with the fleet controller.
				deadline := time.Now().Add(30 * time.Second)
				for {
					_, metrics := get(t, base+"/metrics")
					if strings.Contains(metrics, `skiff_hosts{state="registered"} 1`) {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("round %d: the local host did not register within 30s; metrics:\n%s", round, metrics)
					}
					time.Sleep(100 * time.Millisecond)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				err = s.Shutdown(ctx)
				cancel()
				if err != nil {
					t.Fatalf("round %d: Shutdown: %v", round, err)
				}
				if code, _ := get(t, base+"/ready"); code != 0 {
					t.Errorf("round %d: GET /ready after Shutdown answered %d, want the listener closed", round, code)
				}
				if left := processesUnder(t, cfg.DataDir); len(left) > 0 {
					t.Errorf("round %d: processes left under the data dir after Shutdown: %v", round, left)
				}
			}
		})
	}
}

// processesUnder lists the processes whose command line names dir (the
// local host's runsc sandboxes and gofers do).
func processesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range cmdlines {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if cmd := strings.ReplaceAll(string(b), "\x00", " "); strings.Contains(cmd, dir) {
			out = append(out, cmd)
		}
	}
	return out
}

// A Config the flags would refuse is refused before anything is opened:
// no database file appears.
func TestNewRefusesABadConfigBeforeOpening(t *testing.T) {
	t.Parallel()
	for name, edit := range map[string]func(*server.Config){
		"heartbeat":      func(c *server.Config) { c.Heartbeat = time.Millisecond },
		"streams":        func(c *server.Config) { c.Streams.PerAccount = 0 },
		"trusted proxy":  func(c *server.Config) { c.Front.TrustedProxies = "not-an-address" },
		"negative cache": func(c *server.Config) { c.Data.CacheGB = -1 },
		"pids":           func(c *server.Config) { c.Disk.PidsLimit = 0 },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := server.Defaults()
			cfg.DataDir = t.TempDir()
			edit(&cfg)
			if _, err := server.New(t.Context(), cfg); err == nil {
				t.Fatal("New accepted the config")
			}
			if _, err := os.Stat(filepath.Join(cfg.DataDir, "skiff.db")); !os.IsNotExist(err) {
				t.Errorf("the store was opened before the config was refused: %v", err)
			}
		})
	}
}
