package e2e_test

import (
	"bufio"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/artifact/s3test"
	"github.com/skiffhq/skiff/internal/build/buildtest"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/store/postgres"
	"github.com/skiffhq/skiff/internal/store/postgres/pgtest"
)

// scaleJobs is how many jobs TestScaleOutKill9 submits: the 1,000
// unless SKIFF_SCALE_JOBS says otherwise (a quicker look while debugging).
func scaleJobs() int {
	if n, err := strconv.Atoi(os.Getenv("SKIFF_SCALE_JOBS")); err == nil && n > 0 {
		return n
	}
	return 1000
}

// scaleSleepMS is how long job i of n sleeps: the six submitted just
// before the mid-run kill sleep 5 s, so that attempts are running on every
// host when a controller is killed (and are orphaned by it); the rest are
// trivial and keep the test short.
func scaleSleepMS(i, n int) int {
	if i >= n/2-6 && i < n/2 {
		return 5000
	}
	return 0
}

// controller is one `skiff server` of the scale-out test, restartable on
// its data dir.
type controller struct {
	name string
	dir  string
	args []string
	env  []string
	srv  *server
	dead bool
}

func (c *controller) holder(t *testing.T) string {
	t.Helper()
	l := c.srv.waitLog(t, "sharing duties with the other controllers on the store", 10*time.Second)
	return l["holder"].(string)
}

// TestScaleOutKill9 runs three controllers, each with its own gVisor
// host, on one PostgreSQL database and one S3-compatible store
// (versitygw). A push accepted by one controller builds on the one holding
// the build duty, which is killed -9 during the build: another takes the
// duty over and publishes the push. Jobs are submitted round-robin over
// the controllers while a project stream on another watches; one
// controller is killed -9 mid-run and restarted later. In the end every
// job completed, no task has two attempts at once or two successes, every
// hold is settled once and the ledger sums to the balance, and the stream
// saw every job end. The take-over time of each duty is logged.
func TestScaleOutKill9(t *testing.T) {
	buildtest.RequireTools(t)
	url := pgtest.NewDatabase(t)
	s3 := s3test.Start(t)
	bucket := s3.Bucket(t)
	runner, err := os.ReadFile(sandboxtest.BuildRunner(t))
	if err != nil {
		t.Fatal(err)
	}
	if r := skiff(t, nil, "server", "migrate", "--database-url", url); r.code != 0 {
		t.Fatalf("migrate: %d %s", r.code, r.stderr)
	}
	key := strings.TrimSpace(skiff(t, nil, "admin", "create-key", "--database-url", url, "--account", "scale").stdout)
	if r := skiff(t, nil, "admin", "grant-credit", "--database-url", url, "--account", "scale", "--usd", "100"); r.code != 0 {
		t.Fatalf("grant-credit: %d %s", r.code, r.stderr)
	}
	db, err := postgres.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	// The price feed is polled by the holder of the price-feed duty only;
	// the others follow the table it shares through the store.
	var polls atomic.Int64
	feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		polls.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]int64{"cpu_core_hour_micros": 100_000, "memory_gb_hour_micros": 10_000,
			"gpu_hour_micros": 1_000_000, "dedicated_percent": 120})
	}))
	t.Cleanup(feed.Close)
	began := time.Now()

	ctls := make([]*controller, 3)
	for i := range ctls {
		dir := buildtest.DataDir(t)
		ctls[i] = &controller{name: string(rune('A' + i)), dir: dir,
			args: []string{"--data-dir", dir, "--listen", "127.0.0.1:0", "--host-slots", "2",
				"--duty-lease", "3s", "--host-heartbeat", "2s",
				"--price-feed-url", feed.URL + "/rates", "--price-feed-interval", "10s",
				"--artifact-store", "s3://" + bucket + "/skiff", "--s3-endpoint", s3.Endpoint},
			env: append([]string{"SKIFF_DATABASE_URL=" + url}, s3.Env()...)}
	}
	start := func(c *controller) {
		c.srv = startServer(t, c.env, c.args...)
		c.dead = false
	}
	for _, c := range ctls {
		start(c)
	}
	holders := map[string]*controller{}
	for _, c := range ctls {
		holders[c.holder(t)] = c
	}
	heldBy := func(duty string) *controller {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			ls, err := db.LeaseList(t.Context(), duty)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range ls {
				if l.Name == duty && l.Live(time.Now()) && holders[l.Holder] != nil && !holders[l.Holder].dead {
					return holders[l.Holder]
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no live controller holds %s: %+v", duty, ls)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// kill kills c -9 and returns when, and which duties it held.
	kill := func(c *controller) (time.Time, []string) {
		t.Helper()
		var held []string
		ls, err := db.LeaseList(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			if holders[l.Holder] == c && l.Live(time.Now()) && !strings.HasPrefix(l.Name, "host:") {
				held = append(held, l.Name)
			}
		}
		at := time.Now()
		if err := c.srv.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		c.srv.wait(t, 10*time.Second)
		c.dead = true
		return at, held
	}
	// takeOver waits until every duty is held by a live controller and
	// logs how long after killedAt each was taken.
	takeOver := func(what string, killedAt time.Time, duties []string) {
		t.Helper()
		for _, d := range duties {
			heldBy(d)
			ls, _ := db.LeaseList(t.Context(), d)
			for _, l := range ls {
				if l.Name == d {
					t.Logf("%s: duty %s taken over by %s %.1f s after the kill", what, d, holders[l.Holder].name,
						l.AcquiredAt.Sub(killedAt).Seconds())
				}
			}
		}
	}
	live := func() []*controller {
		var out []*controller
		for _, c := range ctls {
			if !c.dead {
				out = append(out, c)
			}
		}
		return out
	}

	// A push through a controller that does not hold the build duty; the
	// holder is killed during the build.
	builder := heldBy("builds")
	var via *controller
	for _, c := range ctls {
		if c != builder {
			via = c
			break
		}
	}
	cv := via.srv.client(t, key)
	cv.Post(t, "/api/v1/projects", map[string]any{"name": "scale"}).Want(t, http.StatusCreated)
	// Incompressible ballast makes the build last long enough for the kill
	// to land during it.
	ballast := make([]byte, 24<<20)
	_, _ = rand.Read(ballast)
	body := tarball(t, map[string]string{
		"ballast":            string(ballast),
		"Dockerfile":         "FROM scratch\nCOPY runner /runner\nCOPY ballast /ballast\nWORKDIR /app\n",
		"skiff.project.json": `{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"}, "entrypoint": {"command": ["/runner"]}}`,
		"runner":             string(runner),
	})
	var rec struct {
		StatusURL string `json:"status_url"`
	}
	cv.Do(t, apitest.Request{Method: http.MethodPost, Path: "/api/v1/projects/scale/push", Body: body,
		Header: http.Header{"Content-Type": {"application/gzip"}}}).JSON(t, http.StatusAccepted, &rec)
	waitJSON(t, cv, rec.StatusURL, time.Minute, func(m map[string]any) bool { return m["status"] != "queued" })
	killedAt, held := kill(builder)
	if strings.Contains(builder.srv.logText(), `"msg":"build published"`) {
		t.Log("the build had finished before the kill landed: the take-over found nothing to resume")
	} else {
		t.Log("the kill landed during the build: the new holder builds the push again from the shared context")
	}
	takeOver("build holder killed during a build", killedAt, held)
	push := waitJSON(t, cv, rec.StatusURL, 2*time.Minute, func(m map[string]any) bool {
		return m["status"] == "published" || m["status"] == "failed"
	})
	if push["status"] != "published" {
		t.Fatalf("push after the build holder's kill: %v", push)
	}
	start(builder) // back, on its data dir, for the jobs
	holders[builder.holder(t)] = builder

	// A project stream on one controller watches every job.
	watcher := ctls[2]
	if watcher == builder {
		watcher = ctls[1]
	}
	ended := watchEnds(t, watcher.srv.URL, key)

	n := scaleJobs()
	ids := make([]string, 0, n)
	var slow []string // the jobs whose tasks sleep: those a kill can orphan
	submit := func(i int) {
		lc := live()
		c := lc[i%len(lc)].srv.client(t, key)
		p := sandboxtest.Payload{Stdout: fmt.Sprintf("job %d\n", i), SleepMS: scaleSleepMS(i, n)}
		job := c.Post(t, "/api/v1/jobs", map[string]any{"project": "scale", "runner_command": []string{"/runner"},
			"payload": json.RawMessage(p.Encode(t)), "requirements": map[string]any{"cpu": 1, "memory_mb": 128}}).
			Object(t, http.StatusCreated)
		ids = append(ids, job["id"].(string))
		if scaleSleepMS(i, n) > 0 {
			slow = append(slow, job["id"].(string))
		}
	}
	for i := range n / 2 {
		submit(i)
	}
	// Mid-run: kill a controller whose host runs an attempt (which is then
	// orphaned), go on submitting, restart it later.
	// The controller holding the duties now is preferred, so that the kill
	// shows their take-over too.
	candidates := []*controller{heldBy("fleet-sweep")}
	if candidates[0] == watcher {
		candidates = nil
		for _, c := range ctls {
			if c != watcher {
				candidates = append(candidates, c)
			}
		}
	}
	victim := runningOn(t, watcher.srv.client(t, key), slow, ctls, candidates)
	killedAt, held = kill(victim)
	for i := n / 2; i < n; i++ {
		submit(i)
	}
	takeOver("controller killed mid-run", killedAt, held)
	start(victim)
	holders[victim.holder(t)] = victim

	// Every job completes, read through every controller.
	for i, id := range ids {
		c := ctls[i%len(ctls)].srv.client(t, key)
		j := waitJSON(t, c, "/api/v1/jobs/"+id, 4*time.Minute, jobEnded)
		if j["status"] != "completed" {
			t.Errorf("job %s: %v", id, j["status"])
		}
	}
	checkAttempts(t, ctls[0].srv.client(t, key), ids)
	fetched := 0
	for _, c := range ctls {
		fetched += strings.Count(c.srv.logText(), `"msg":"image fetched from the blob store"`)
	}
	if fetched == 0 {
		t.Error("no controller fetched the image from the blob store: only the builder's hosts ran tasks?")
	}
	checkMoney(t, db, ids)
	for _, c := range ctls {
		var l apiv1.PresetList
		c.srv.client(t, key).Get(t, "/api/v1/presets").JSON(t, http.StatusOK, &l)
		if l.Pricing.MarketRates.CPUCoreHourUSD != 100_000 || l.Pricing.DedicatedPercent != 120 {
			t.Errorf("controller %s prices at %+v, not the feed's rates", c.name, l.Pricing)
		}
	}
	// One poller at a time: a poll per interval, plus one at once by each
	// new holder (two kills, the start) and slack for a poll under way.
	if n, most := polls.Load(), int64(time.Since(began)/(10*time.Second))+6; n > most {
		t.Errorf("the price feed was polled %d times in %s; one poller at a time polls at most %d", n, time.Since(began).Round(time.Second), most)
	} else {
		t.Logf("the price feed was polled %d times in %s", n, time.Since(began).Round(time.Second))
	}
	seen := ended.wait(t, ids, time.Minute)
	t.Logf("%d jobs over 3 controllers; the stream on %s saw %d of them end", len(ids), watcher.name, seen)
	for _, c := range ctls {
		if code := c.srv.stop(t, 60*time.Second); code != 0 {
			t.Errorf("controller %s exit %d", c.name, code)
		}
	}
}

// runningOn waits until a task of ids runs on the host of one of
// candidates, and returns that controller.
func runningOn(t *testing.T, c *apitest.Client, ids []string, ctls []*controller, candidates []*controller) *controller {
	t.Helper()
	hosts := map[string]*controller{}
	for _, ct := range ctls {
		b, err := os.ReadFile(filepath.Join(ct.dir, "host", "id"))
		if err != nil {
			t.Fatal(err)
		}
		hosts[strings.TrimSpace(string(b))] = ct
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		for _, id := range ids {
			var page struct {
				Tasks []struct {
					Attempts []struct {
						Status string `json:"status"`
						Worker string `json:"worker_handle"`
					} `json:"attempts"`
				} `json:"tasks"`
			}
			c.Get(t, "/api/v1/jobs/"+id+"/tasks").JSON(t, http.StatusOK, &page)
			for _, task := range page.Tasks {
				for _, a := range task.Attempts {
					if ct := hosts[a.Worker]; a.Status == "running" && ct != nil && !ct.dead && slices.Contains(candidates, ct) {
						return ct
					}
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no task ran on a candidate controller's host within 2 minutes")
	return nil
}

// checkAttempts: no task ran two attempts at once, or succeeded twice.
func checkAttempts(t *testing.T, c *apitest.Client, ids []string) {
	t.Helper()
	lost := 0
	for _, id := range ids {
		var page struct {
			Tasks []struct {
				ID       string `json:"id"`
				Attempts []struct {
					Status     string     `json:"status"`
					AssignedAt time.Time  `json:"assigned_at"`
					EndedAt    *time.Time `json:"ended_at"`
				} `json:"attempts"`
			} `json:"tasks"`
		}
		c.Get(t, "/api/v1/jobs/"+id+"/tasks").JSON(t, http.StatusOK, &page)
		for _, task := range page.Tasks {
			succeeded := 0
			for i, a := range task.Attempts {
				if a.Status == "succeeded" {
					succeeded++
				}
				if a.Status == "lost" {
					lost++
				}
				if i > 0 {
					prev := task.Attempts[i-1]
					if prev.EndedAt == nil || a.AssignedAt.Before(*prev.EndedAt) {
						t.Errorf("task %s: attempt %d assigned at %s before attempt %d ended (%v)", task.ID, i+1, a.AssignedAt, i, prev.EndedAt)
					}
				}
			}
			if succeeded != 1 {
				t.Errorf("task %s: %d attempts succeeded, want 1", task.ID, succeeded)
			}
		}
	}
	t.Logf("%d attempts lost to the kills and requeued", lost)
}

// checkMoney: every job's hold is settled and charged once, and the
// balance is the ledger's sum with nothing held.
func checkMoney(t *testing.T, db store.Store, ids []string) {
	t.Helper()
	ctx := t.Context()
	acct, err := db.AccountGetByName(ctx, "scale")
	if err != nil {
		t.Fatal(err)
	}
	entries, _, err := db.LedgerList(ctx, &store.LedgerListParams{AccountID: acct.ID, Limit: 100000})
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	charges := map[string][]int64{}
	for _, e := range entries {
		sum += e.AmountMicros
		if e.Reference != "" {
			charges[e.Reference] = append(charges[e.Reference], e.AmountMicros)
		}
	}
	for _, id := range ids {
		h, err := db.HoldGetByJob(ctx, id)
		if err != nil {
			t.Errorf("hold of %s: %v", id, err)
			continue
		}
		if h.Status == store.HoldActive {
			t.Errorf("job %s: hold still active", id)
		}
		if c := charges[id]; h.CapturedMicros > 0 && (len(c) != 1 || c[0] != -h.CapturedMicros) {
			t.Errorf("job %s: captured %d, charged %v; want one charge", id, h.CapturedMicros, c)
		}
	}
	bal, err := db.BalanceGet(ctx, acct.ID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if bal.LedgerMicros != sum || bal.HeldMicros != 0 || bal.ActiveHoldCount != 0 {
		t.Errorf("balance %+v; ledger sums to %d; want equal and nothing held", bal, sum)
	}
}

// streamEnds collects the jobs a project stream saw end.
type streamEnds struct {
	mu   sync.Mutex
	ends map[string]bool
}

// watchEnds opens the project stream on baseURL and records every job
// frame of a terminal job, reconnecting with Last-Event-ID.
func watchEnds(t *testing.T, baseURL, key string) *streamEnds {
	s := &streamEnds{ends: map[string]bool{}}
	ctx := t.Context()
	go func() {
		last := ""
		for ctx.Err() == nil {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/api/v1/projects/scale/stream", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Accept", "text/event-stream")
			if last != "" {
				req.Header.Set("Last-Event-ID", last)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 4<<20)
			event := ""
			for sc.Scan() {
				line := sc.Text()
				switch {
				case strings.HasPrefix(line, "id: "):
					last = strings.TrimPrefix(line, "id: ")
				case strings.HasPrefix(line, "event: "):
					event = strings.TrimPrefix(line, "event: ")
				case strings.HasPrefix(line, "data: ") && event == "job":
					var f struct {
						Job struct {
							ID     string `json:"id"`
							Status string `json:"status"`
						} `json:"job"`
					}
					if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &f) == nil &&
						(f.Job.Status == "completed" || f.Job.Status == "failed" || f.Job.Status == "cancelled") {
						s.mu.Lock()
						s.ends[f.Job.ID] = true
						s.mu.Unlock()
					}
				}
			}
			resp.Body.Close()
		}
	}()
	return s
}

// wait waits until the stream saw every job of ids end, failing t after
// within, and returns how many it saw.
func (s *streamEnds) wait(t *testing.T, ids []string, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		s.mu.Lock()
		missing := 0
		for _, id := range ids {
			if !s.ends[id] {
				missing++
			}
		}
		s.mu.Unlock()
		if missing == 0 {
			return len(ids)
		}
		if time.Now().After(deadline) {
			t.Errorf("the stream missed the end of %d of %d jobs", missing, len(ids))
			return len(ids) - missing
		}
		time.Sleep(100 * time.Millisecond)
	}
}
