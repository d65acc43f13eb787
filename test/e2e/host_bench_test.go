package e2e_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/build/buildtest"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
)

// TestHostsDispatchFigures measures, with real processes on this machine,
// the time from a `skiff host` start to its first task, and the dispatch
// throughput of trivial tasks across 4 hosts. It only logs the figures
// (docs/bench.md); run it with SKIFF_BENCH_HOSTS=1.
func TestHostsDispatchFigures(t *testing.T) {
	if os.Getenv("SKIFF_BENCH_HOSTS") == "" {
		t.Skip("a measurement, not a test: set SKIFF_BENCH_HOSTS=1")
	}
	runner := realRunner(t)
	dir := buildtest.DataDir(t)
	srv := startServer(t, nil, "--data-dir", dir, "--listen", "127.0.0.1:0", "--no-local-host")
	admin := func(args ...string) string { return runAdmin(t, []string{"--data-dir", dir}, args...) }
	key := admin("create-key", "--account", "bench")
	admin("grant-credit", "--account", "bench", "--usd", "100")
	c := srv.client(t, key)
	pushRunner(t, c, "b", runner)
	submit := func(n int) string {
		items := make([]json.RawMessage, n)
		for i := range items {
			items[i] = sandboxtest.Payload{Stdout: "x"}.Encode(t)
		}
		return c.Post(t, "/api/v1/jobs", map[string]any{"project": "b", "runner_command": []string{"/runner"},
			"fan_out": map[string]any{"items": items}, "requirements": map[string]any{"cpu": 1, "memory_mb": 256}}).
			Object(t, http.StatusCreated)["id"].(string)
	}

	// Time to first task: a job waits queued; the first host starts.
	first := submit(1)
	start := time.Now()
	startHost(t, "--controller", srv.URL, "--data-dir", filepath.Join(t.TempDir(), "h0"), "--cpus", "2", "--memory-gb", "2",
		"--slots", "2", "--code-file", codeFile(t, admin("create-enrollment")))
	waitJSON(t, c, "/api/v1/jobs/"+first, 2*time.Minute, jobEnded)
	t.Logf("FIGURE host start to first task completed: %s", time.Since(start).Round(10*time.Millisecond))

	for i := 1; i < 4; i++ {
		startHost(t, "--controller", srv.URL, "--data-dir", filepath.Join(t.TempDir(), "h"+strconv.Itoa(i)), "--cpus", "2",
			"--memory-gb", "2", "--slots", "2", "--code-file", codeFile(t, admin("create-enrollment")))
	}
	time.Sleep(2 * time.Second) // all four registered
	const n = 80
	start = time.Now()
	jid := submit(n)
	job := waitJSON(t, c, "/api/v1/jobs/"+jid, 10*time.Minute, jobEnded)
	d := time.Since(start)
	workers := map[string]int{}
	for _, tk := range c.Get(t, "/api/v1/jobs/"+jid+"/tasks?limit=100").Object(t, http.StatusOK)["tasks"].([]any) {
		for _, a := range tk.(map[string]any)["attempts"].([]any) {
			workers[a.(map[string]any)["worker_handle"].(string)]++
		}
	}
	t.Logf("FIGURE %d trivial tasks over 4 hosts (2 slots each): %s, %.1f tasks/s, status %v, per host %v",
		n, d.Round(10*time.Millisecond), float64(n)/d.Seconds(), job["status"], workers)
}
