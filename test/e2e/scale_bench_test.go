package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/build/buildtest"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/store/postgres/pgtest"
)

// TestScaleOutSubmitRate measures single-job submissions per second from
// 32 concurrent clients, spread round-robin over 1, 2 and 3 controllers on
// one PostgreSQL database, beside one controller on SQLite, in one run. It
// is a benchmark, not a check: it runs only with SKIFF_SCALE_BENCH=1
// (docs/scaling.md has its figures). Controllers run without hosts, so the
// jobs stay queued and only the submission path is measured.
func TestScaleOutSubmitRate(t *testing.T) {
	if os.Getenv("SKIFF_SCALE_BENCH") != "1" {
		t.Skip("a measurement, not a test: set SKIFF_SCALE_BENCH=1 to run it")
	}
	buildtest.RequireTools(t)
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("SKIFF_SCALE_SUBMISSIONS")); err == nil && v > 0 {
		n = v
	}
	const clients = 32
	ctlArgs := func() []string {
		return []string{"--data-dir", buildtest.DataDir(t), "--listen", "127.0.0.1:0", "--no-local-host"}
	}

	// SQLite, one controller.
	dir := buildtest.DataDir(t)
	lite := startServer(t, nil, "--data-dir", dir, "--listen", "127.0.0.1:0", "--no-local-host")
	key := strings.TrimSpace(skiff(t, nil, "admin", "create-key", "--data-dir", dir, "--account", "bench").stdout)
	skiff(t, nil, "admin", "grant-credit", "--data-dir", dir, "--account", "bench", "--usd", "10000")
	benchProject(t, lite.client(t, key))
	rate := submitRate(t, []*server{lite}, key, n, clients)
	t.Logf("sqlite, 1 controller: %.0f jobs/s (%d submissions, %d clients)", rate, n, clients)
	lite.stop(t, 30*time.Second)

	// PostgreSQL, 1 to 3 controllers, each on a fresh database so that
	// the earlier rounds' queued jobs do not weigh on the later ones.
	for k := 1; k <= 3; k++ {
		url := pgtest.NewDatabase(t)
		env := []string{"SKIFF_DATABASE_URL=" + url}
		key := strings.TrimSpace(skiff(t, env, "admin", "create-key", "--account", "bench").stdout)
		skiff(t, env, "admin", "grant-credit", "--account", "bench", "--usd", "10000")
		var ctls []*server
		for range k {
			ctls = append(ctls, startServer(t, env, ctlArgs()...))
		}
		benchProject(t, ctls[0].client(t, key))
		rate := submitRate(t, ctls, key, n, clients)
		t.Logf("postgres, %d controller(s): %.0f jobs/s (%d submissions, %d clients)", k, rate, n, clients)
		for _, c := range ctls {
			c.stop(t, 30*time.Second)
		}
	}
}

// benchProject pushes a published project "bench".
func benchProject(t *testing.T, c *apitest.Client) {
	t.Helper()
	c.Post(t, "/api/v1/projects", map[string]any{"name": "bench"}).Want(t, http.StatusCreated)
	body := tarball(t, map[string]string{
		"Dockerfile":         "FROM scratch\nCOPY runner /runner\nWORKDIR /app\n",
		"skiff.project.json": `{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"}, "entrypoint": {"command": ["/runner"]}}`,
		"runner":             "#!/bin/sh\n",
	})
	var rec struct {
		StatusURL string `json:"status_url"`
	}
	c.Do(t, apitest.Request{Method: http.MethodPost, Path: "/api/v1/projects/bench/push", Body: body,
		Header: http.Header{"Content-Type": {"application/gzip"}}}).JSON(t, http.StatusAccepted, &rec)
	p := waitJSON(t, c, rec.StatusURL, 2*time.Minute, func(m map[string]any) bool {
		return m["status"] == "published" || m["status"] == "failed"
	})
	if p["status"] != "published" {
		t.Fatalf("push: %v", p)
	}
}

// submitRate posts n single-job submissions from clients goroutines,
// round-robin over the servers, after an untimed warm-up of a tenth, and
// returns submissions per second. Every one must answer 201.
func submitRate(t *testing.T, srvs []*server, key string, n, clients int) float64 {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	body := []byte(`{"project": "bench", "runner_command": ["/runner"], "payload": {"n": 1}, "requirements": {"cpu": 1, "memory_mb": 128}}`)
	run := func(total int) time.Duration {
		var next atomic.Int64
		var wg sync.WaitGroup
		var failed atomic.Value
		start := time.Now()
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := next.Add(1) - 1
					if i >= int64(total) {
						return
					}
					req, _ := http.NewRequest(http.MethodPost, srvs[int(i)%len(srvs)].URL+"/api/v1/jobs", bytes.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+key)
					req.Header.Set("Content-Type", "application/json")
					resp, err := hc.Do(req)
					if err != nil {
						failed.Store(err.Error())
						return
					}
					if resp.StatusCode != http.StatusCreated {
						var m map[string]any
						_ = json.NewDecoder(resp.Body).Decode(&m)
						failed.Store(fmt.Sprintf("status %d: %v", resp.StatusCode, m))
					}
					resp.Body.Close()
				}
			}()
		}
		wg.Wait()
		if f := failed.Load(); f != nil {
			t.Fatalf("submission failed: %v", f)
		}
		return time.Since(start)
	}
	run(min(n/10, 200))
	el := run(n)
	return float64(n) / el.Seconds()
}
