package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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

// benchAccounts is how many accounts the many-accounts case spreads its
// clients over: one per client.
const benchAccounts = 32

// TestScaleOutSubmitRate measures single-job submissions per second from
// 32 concurrent clients, spread round-robin over 1, 2 and 3 controllers on
// one PostgreSQL database, beside one controller on SQLite, each with all
// clients on one account and with each client on an account of its own,
// in one run. With each rate it reports the controllers' CPU (and on
// PostgreSQL the database backends' CPU) per admitted job, and the share
// of active PostgreSQL backends found waiting on a lock. It is a
// benchmark, not a check: it runs only with SKIFF_SCALE_BENCH=1
// (docs/scaling.md has its figures). Controllers run without hosts, so the
// jobs stay queued and only the submission path is measured.
//
// SKIFF_SCALE_COMPARE_BIN names another skiff binary (another commit's,
// with the same schema) whose controllers run each case too, right after
// this code's: before and after figures from one run.
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
	bins := []benchBin{{name: "this", path: os.Args[0]}}
	if p := os.Getenv("SKIFF_SCALE_COMPARE_BIN"); p != "" {
		bins = append(bins, benchBin{name: "compare", path: p})
	}
	ctlArgs := func(dir string) []string {
		return []string{"--data-dir", dir, "--listen", "127.0.0.1:0", "--no-local-host"}
	}
	var rows []string
	report := func(r benchResult) {
		t.Logf("%s", r.String())
		rows = append(rows, r.Row())
	}

	// Each engine is prepared once (accounts, credit, a published project
	// each) and every case runs on a fresh copy of it, so that the earlier
	// cases' queued jobs do not weigh on the later ones.
	liteDir := buildtest.DataDir(t)
	liteKeys := prepareBench(t, nil, liteDir, ctlArgs(liteDir))
	pgBase := pgtest.NewDatabase(t)
	pgEnv := []string{"SKIFF_DATABASE_URL=" + pgBase}
	pgKeys := prepareBench(t, pgEnv, "", ctlArgs(buildtest.DataDir(t)))

	for _, accounts := range []int{1, benchAccounts} {
		for _, b := range bins {
			dir := buildtest.DataDir(t)
			if out, err := exec.Command("cp", "-a", liteDir+"/.", dir).CombinedOutput(); err != nil {
				t.Fatalf("copy the prepared data dir: %v: %s", err, out)
			}
			lite := startBenchServer(t, b.path, nil, ctlArgs(dir)...)
			r := submitRate(t, []*server{lite}, "", liteKeys[:accounts], n, clients)
			r.setup, r.bin, r.accounts = "SQLite, 1 controller", b.name, accounts
			report(r)
			lite.stop(t, 30*time.Second)
		}
		for k := 1; k <= 3; k++ {
			for _, b := range bins {
				url := pgtest.CloneDatabase(t, pgBase)
				env := []string{"SKIFF_DATABASE_URL=" + url}
				var ctls []*server
				for range k {
					ctls = append(ctls, startBenchServer(t, b.path, env, ctlArgs(buildtest.DataDir(t))...))
				}
				r := submitRate(t, ctls, url, pgKeys[:accounts], n, clients)
				r.setup, r.bin, r.accounts = fmt.Sprintf("PostgreSQL, %d controller(s)", k), b.name, accounts
				report(r)
				for _, c := range ctls {
					c.stop(t, 30*time.Second)
				}
			}
		}
	}
	t.Logf("summary (%d submissions, %d clients):\n| setup | binary | accounts | jobs/s | controller CPU ms/job | PostgreSQL CPU ms/job | lock waits |\n|---|---|---|---|---|---|---|\n%s",
		n, clients, strings.Join(rows, "\n"))
}

// benchBin is a skiff binary the benchmark runs controllers of.
type benchBin struct{ name, path string }

// startBenchServer is startServer for the binary at bin.
func startBenchServer(t *testing.T, bin string, env []string, args ...string) *server {
	t.Helper()
	if bin == os.Args[0] {
		return startServer(t, env, args...)
	}
	cmd := skiffCmd(t, env, append([]string{"server"}, args...)...)
	cmd.Path, cmd.Args[0] = bin, bin
	return serve(t, cmd)
}

// prepareBench starts one controller (on dataDir's SQLite when env names
// no database), creates benchAccounts accounts bench0.. with credit and a
// published project "bench" each, stops it and returns their keys.
func prepareBench(t *testing.T, env []string, dataDir string, args []string) []string {
	t.Helper()
	srv := startServer(t, env, args...)
	admin := func(cmd ...string) string {
		if dataDir != "" {
			cmd = append(cmd, "--data-dir", dataDir)
		}
		return strings.TrimSpace(skiff(t, env, append([]string{"admin"}, cmd...)...).stdout)
	}
	keys := make([]string, benchAccounts)
	for i := range keys {
		acct := fmt.Sprintf("bench%d", i)
		keys[i] = admin("create-key", "--account", acct)
		admin("grant-credit", "--account", acct, "--usd", "10000")
	}
	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Go(func() { benchProject(t, srv.client(t, k)) })
	}
	wg.Wait()
	srv.stop(t, 30*time.Second)
	return keys
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
	p := waitJSON(t, c, rec.StatusURL, 5*time.Minute, func(m map[string]any) bool {
		return m["status"] == "published" || m["status"] == "failed"
	})
	if p["status"] != "published" {
		t.Fatalf("push: %v", p)
	}
}

// benchResult is one case's figures.
type benchResult struct {
	setup, bin      string
	accounts        int
	rate            float64 // jobs/s
	ctlCPU, dbCPU   float64 // ms per admitted job; dbCPU < 0: not measured
	lockWaits       float64 // share of active backend samples waiting on a lock; < 0: not measured
	samples, waited int
	lockEvents      string // lock waits by wait_event
}

func (r benchResult) String() string {
	return fmt.Sprintf("%s [%s], %d account(s): %.0f jobs/s, controllers %.2f ms CPU/job, database %s, lock waits %s %s",
		r.setup, r.bin, r.accounts, r.rate, r.ctlCPU, r.db(), r.locks(), r.lockEvents)
}

func (r benchResult) Row() string {
	return fmt.Sprintf("| %s | %s | %d | %.0f | %.2f | %s | %s |", r.setup, r.bin, r.accounts, r.rate, r.ctlCPU, r.db(), r.locks())
}

func (r benchResult) db() string {
	if r.dbCPU < 0 {
		return "(in the controller)"
	}
	return fmt.Sprintf("%.2f ms/job", r.dbCPU)
}

func (r benchResult) locks() string {
	if r.lockWaits < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f %% (%d of %d)", 100*r.lockWaits, r.waited, r.samples)
}

// submitRate posts n single-job submissions from clients goroutines,
// round-robin over the servers, client i with keys[i%len(keys)], after an
// untimed warm-up of a tenth. Every one must answer 201. With dbURL (a
// PostgreSQL database) it also measures the database's backends: their CPU
// and how often an active one waits on a lock.
func submitRate(t *testing.T, srvs []*server, dbURL string, keys []string, n, clients int) benchResult {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	body := []byte(`{"project": "bench", "runner_command": ["/runner"], "payload": {"n": 1}, "requirements": {"cpu": 1, "memory_mb": 128}}`)
	run := func(total int) time.Duration {
		var next atomic.Int64
		var wg sync.WaitGroup
		var failed atomic.Value
		start := time.Now()
		for c := range clients {
			key := keys[c%len(keys)]
			wg.Go(func() {
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
			})
		}
		wg.Wait()
		if f := failed.Load(); f != nil {
			t.Fatalf("submission failed: %v", f)
		}
		return time.Since(start)
	}
	run(min(n/10, 200))
	var ctlPIDs []int
	for _, s := range srvs {
		ctlPIDs = append(ctlPIDs, s.Cmd.Process.Pid)
	}
	ctl0 := cpuTicks(ctlPIDs)
	var pg *pgSampler
	if dbURL != "" {
		pg = startPGSampler(t, dbURL)
	}
	el := run(n)
	r := benchResult{rate: float64(n) / el.Seconds(), dbCPU: -1, lockWaits: -1}
	r.ctlCPU = ticksToMS(cpuTicks(ctlPIDs)-ctl0) / float64(n)
	if pg != nil {
		cpu, samples, waited, byEvent := pg.stop(t)
		r.lockEvents = fmt.Sprint(byEvent)
		r.dbCPU = cpu / float64(n)
		r.samples, r.waited = samples, waited
		if samples > 0 {
			r.lockWaits = float64(waited) / float64(samples)
		}
	}
	return r
}

// cpuTicks sums the user and system CPU of pids (clock ticks, from
// /proc/<pid>/stat); a process gone is counted as 0.
func cpuTicks(pids []int) int64 {
	var total int64
	for _, pid := range pids {
		total += procTicks(pid)
	}
	return total
}

func procTicks(pid int) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// Fields after the command name (in parentheses, which may hold
	// spaces): state is field 3, utime 14 and stime 15.
	rest := string(b[bytes.LastIndexByte(b, ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// ticksToMS converts clock ticks (USER_HZ, 100 on Linux) to milliseconds.
func ticksToMS(ticks int64) float64 { return float64(ticks) * 10 }
