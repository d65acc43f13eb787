package bench

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The bench project: a FROM scratch image holding this binary, whose task
// is `skiff bench runner`.
const (
	benchProjectName = "bench"
	// benchWarmProjectName is the same image, initialized: warm starts.
	benchWarmProjectName = "bench-warm"
	// The binary goes under /app so that /app exists: buildah's WORKDIR
	// alone adds an empty layer and no directory, and a missing working
	// directory fails the sandbox start.
	benchDockerfile = "FROM scratch\nCOPY skiff /app/skiff\nWORKDIR /app\n"
	benchManifest   = `{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"},` +
		` "entrypoint": {"command": ["/app/skiff", "bench", "runner"]}}` + "\n"
	benchJobTimeoutS = 60
)

// benchRunnerArgs is the task's command line inside the image.
var benchRunnerArgs = []string{"/app/skiff", "bench", "runner"}

// benchClient talks to the server's API with the bench account's key.
type benchClient struct {
	base, key string
	hc        *http.Client
}

func newBenchClient(base, key string, conns int) *benchClient {
	tr := &http.Transport{MaxIdleConns: conns + 4, MaxIdleConnsPerHost: conns + 4, IdleConnTimeout: time.Minute,
		DisableCompression: true}
	return &benchClient{base: base, key: key, hc: &http.Client{Transport: tr, Timeout: time.Minute}}
}

// apiError is a response with an unexpected status.
type apiError struct {
	method, path string
	status       int
	body         string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s %s: got %d, want success: %s", e.method, e.path, e.status, strings.TrimSpace(e.body))
}

// do sends a request and decodes a 2xx JSON answer into out (when not nil).
func (c *benchClient) do(ctx context.Context, method, path, ctype string, body []byte, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return resp.StatusCode, &apiError{method, path, resp.StatusCode, string(b)}
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s: decode: %w", method, path, err)
	}
	return resp.StatusCode, nil
}

// benchPushTimeout bounds the project's build.
const benchPushTimeout = 5 * time.Minute

// pushProject creates the project, pushes it with bin as its runner, waits
// until the push is published and returns the image digest.
func (c *benchClient) pushProject(ctx context.Context, name, bin string) (string, error) {
	body, _ := json.Marshal(map[string]string{"name": name})
	if status, err := c.do(ctx, "POST", "/api/v1/projects", "application/json", body, nil); err != nil && status != http.StatusConflict {
		return "", err
	}
	files, err := benchContext(bin, "")
	if err != nil {
		return "", err
	}
	tgz, err := benchTarball(files)
	if err != nil {
		return "", err
	}
	return c.pushTarball(ctx, name, tgz, 100*time.Millisecond)
}

// pushTarball pushes tgz to the project, polls its push record every poll
// until it is published and returns the image digest.
func (c *benchClient) pushTarball(ctx context.Context, name string, tgz []byte, poll time.Duration) (string, error) {
	var push struct {
		PushRef   string `json:"push_ref"`
		StatusURL string `json:"status_url"`
	}
	if _, err := c.do(ctx, "POST", "/api/v1/projects/"+name+"/push", "application/gzip", tgz, &push); err != nil {
		return "", err
	}
	statusPath := "/api/v1/projects/" + name + "/pushes/" + push.PushRef
	deadline := time.Now().Add(benchPushTimeout)
	for {
		var rec struct {
			Status      string  `json:"status"`
			Terminal    bool    `json:"terminal"`
			ImageDigest *string `json:"image_digest"`
			Error       *string `json:"error"`
			LogTail     string  `json:"log_tail"`
		}
		if _, err := c.do(ctx, "GET", statusPath, "", nil, &rec); err != nil {
			return "", err
		}
		switch {
		case rec.Status == "published" && rec.ImageDigest != nil:
			return *rec.ImageDigest, nil
		case rec.Terminal:
			msg := ""
			if rec.Error != nil {
				msg = *rec.Error
			}
			return "", fmt.Errorf("push of the bench project ended %s: %s\n%s", rec.Status, msg, rec.LogTail)
		case time.Now().After(deadline):
			return "", fmt.Errorf("push of the bench project still %s after %s", rec.Status, benchPushTimeout)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(poll):
		}
	}
}

// initProject initializes the project (POST /api/v1/projects/:name/init:
// the host prepares its revision and boots warm sandboxes of it) and waits
// until the project reports ready for jobs.
func (c *benchClient) initProject(ctx context.Context, name string) error {
	if _, err := c.do(ctx, "POST", "/api/v1/projects/"+name+"/init", "application/json", []byte("{}"), nil); err != nil {
		return err
	}
	deadline := time.Now().Add(benchPushTimeout)
	for {
		var st struct {
			ReadyForJobs bool `json:"ready_for_jobs"`
		}
		if _, err := c.do(ctx, "GET", "/api/v1/projects/"+name+"/status", "", nil, &st); err != nil {
			return err
		}
		if st.ReadyForJobs {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("project %s not ready %s after init", name, benchPushTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// benchFile is one file of the bench project's build context.
type benchFile struct {
	name string
	mode int64
	data []byte
}

// benchContext is the bench project's build context: Dockerfile, manifest
// and bin as "skiff". bin must be static: the image has nothing else. A
// nonce, when not empty, is copied into the image before everything else,
// so that no step of the build comes from a layer cache.
func benchContext(bin, nonce string) ([]benchFile, error) {
	if err := checkStatic(bin); err != nil {
		return nil, err
	}
	exe, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("read this binary for the bench image: %w", err)
	}
	dockerfile := benchDockerfile
	files := []benchFile{{"skiff.project.json", 0o644, []byte(benchManifest)}, {"skiff", 0o755, exe}}
	if nonce != "" {
		dockerfile = strings.Replace(dockerfile, "\n", "\nCOPY nonce /app/.nonce\n", 1)
		files = append(files, benchFile{"nonce", 0o644, []byte(nonce + "\n")})
	}
	return append([]benchFile{{"Dockerfile", 0o644, []byte(dockerfile)}}, files...), nil
}

// benchTarball is files as a gzip tarball, as a push carries it.
func benchTarball(files []benchFile) ([]byte, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	now := time.Now()
	for _, f := range files {
		hdr := &tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: now, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// checkStatic refuses a dynamically linked binary: in the FROM scratch
// image its interpreter is missing, and every task would fail to start
// with "no such file or directory".
func checkStatic(bin string) error {
	f, err := elf.Open(bin)
	if err != nil {
		return fmt.Errorf("read this binary for the bench image: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked and cannot run FROM scratch; build it with CGO_ENABLED=0 ('make build' does)", bin)
		}
	}
	return nil
}

// benchSubmission is the body of every job the bench submits.
func benchSubmission(project string, i int) []byte {
	b, _ := json.Marshal(map[string]any{
		"project": project, "runner_command": benchRunnerArgs,
		"payload": map[string]int{"i": i}, "timeout_s": benchJobTimeoutS,
	})
	return b
}

// benchJob is the part of the job object the bench reads.
type benchJob struct {
	ID          string     `json:"id"`
	Status      string     `json:"status"`
	Error       *string    `json:"error"`
	SubmittedAt time.Time  `json:"submitted_at"`
	CompletedAt *time.Time `json:"completed_at"`
}

func (j *benchJob) terminal() bool {
	switch j.Status {
	case "completed", "partial", "failed", "cancelled":
		return true
	}
	return false
}

// jobTiming is one latency job's times.
type jobTiming struct {
	// completed runs from the start of the POST to the job's completed_at:
	// the service's own latency, whatever the poll interval. The throwaway
	// server runs on this machine, so its clock is ours.
	completed time.Duration
	// seen runs to the answer of the first GET that showed the job
	// terminal; it includes up to one poll interval.
	seen time.Duration
	// Stages by the service's timestamps: submitted -> assigned to a host
	// -> started on it -> completed. Zero when the tasks view lacks them.
	queue, prepare, run time.Duration
}

// runJob submits one job, polls it until it is terminal and returns its
// timing; a job that ends other than completed is an error.
func (c *benchClient) runJob(ctx context.Context, project string, i int, poll time.Duration) (*jobTiming, error) {
	body := benchSubmission(project, i)
	start := time.Now()
	var j benchJob
	if _, err := c.do(ctx, "POST", "/api/v1/jobs", "application/json", body, &j); err != nil {
		return nil, err
	}
	deadline := start.Add(2 * benchJobTimeoutS * time.Second)
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for !j.terminal() {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		if _, err := c.do(ctx, "GET", "/api/v1/jobs/"+j.ID, "", nil, &j); err != nil {
			return nil, err
		}
		if !j.terminal() && time.Now().After(deadline) {
			return nil, fmt.Errorf("job %s still %s after %s", j.ID, j.Status, time.Since(start).Round(time.Millisecond))
		}
	}
	jt := &jobTiming{seen: time.Since(start)}
	if j.Status != "completed" || j.CompletedAt == nil {
		msg := ""
		if j.Error != nil {
			msg = *j.Error
		}
		var out struct {
			Error *string `json:"error"`
		}
		if _, err := c.do(ctx, "GET", "/api/v1/jobs/"+j.ID+"/output", "", nil, &out); err == nil && out.Error != nil {
			msg += "; stderr: " + *out.Error
		}
		return nil, fmt.Errorf("bench job %s ended %s, want completed: %s", j.ID, j.Status, msg)
	}
	jt.completed = j.CompletedAt.Sub(start)
	// The stages are a breakdown, not the measure: a tasks view that
	// cannot be read leaves them out.
	var tasks struct {
		Tasks []struct {
			Attempts []struct {
				AssignedAt time.Time  `json:"assigned_at"`
				StartedAt  *time.Time `json:"started_at"`
			} `json:"attempts"`
		} `json:"tasks"`
	}
	if _, err := c.do(ctx, "GET", "/api/v1/jobs/"+j.ID+"/tasks", "", nil, &tasks); err == nil &&
		len(tasks.Tasks) == 1 && len(tasks.Tasks[0].Attempts) > 0 {
		a := tasks.Tasks[0].Attempts[len(tasks.Tasks[0].Attempts)-1]
		if a.StartedAt != nil && !a.AssignedAt.IsZero() {
			jt.queue = a.AssignedAt.Sub(j.SubmittedAt)
			jt.prepare = a.StartedAt.Sub(a.AssignedAt)
			jt.run = j.CompletedAt.Sub(*a.StartedAt)
		}
	}
	return jt, nil
}

// latencySamples are the latency phase's timed rounds.
type latencySamples struct {
	service, seen, bare, driver []time.Duration
	// warm is submit-to-terminal on the initialized project (its tasks
	// run in warm sandboxes); warmRun its started -> completed stage.
	warm, warmRun []time.Duration
	// The floors of a warm start: handing the runner's command to a
	// launcher waiting in a booted sandbox, and `runsc exec` of it into one.
	launch, runscExec []time.Duration
	// The driver runs' stages.
	prepare2, runscStart, runnerToExit, collect, teardown []time.Duration
	queue, prepare, run                                   []time.Duration // the service's stages
}

// latencyRounds runs warm-up and timed rounds of one service job, one bare
// runsc run and one driver run each, interleaved so that drift in the
// machine's load reaches all three alike.
func latencyRounds(ctx context.Context, c *benchClient, sb *benchSandbox, warmProject string, f *Config, progress func(string, ...any)) (*latencySamples, error) {
	var s latencySamples
	total := f.Warmup + f.Jobs
	progress("latency: %d warm-up and %d timed rounds of service job, bare runsc run, host driver run, warm floors", f.Warmup, f.Jobs)
	last := time.Now()
	for i := range total {
		jt, err := c.runJob(ctx, benchProjectName, i, f.Poll)
		if err != nil {
			return nil, err
		}
		var wt *jobTiming
		if warmProject != "" {
			if wt, err = c.runJob(ctx, warmProject, i, f.Poll); err != nil {
				return nil, err
			}
		}
		bare, err := sb.bareRun(ctx, i)
		if err != nil {
			return nil, err
		}
		drv, st, err := sb.driverRun(ctx, i)
		if err != nil {
			return nil, err
		}
		launch, runscExec, err := sb.floorRun(ctx, i)
		if err != nil {
			return nil, err
		}
		if i < f.Warmup {
			continue
		}
		s.service, s.seen = append(s.service, jt.completed), append(s.seen, jt.seen)
		if wt != nil {
			s.warm, s.warmRun = append(s.warm, wt.completed), append(s.warmRun, wt.run)
		}
		s.bare, s.driver = append(s.bare, bare), append(s.driver, drv)
		s.launch, s.runscExec = append(s.launch, launch), append(s.runscExec, runscExec)
		s.prepare2, s.runscStart, s.runnerToExit = append(s.prepare2, st.prepare), append(s.runscStart, st.runscStart), append(s.runnerToExit, st.runnerToExit)
		s.collect, s.teardown = append(s.collect, st.collect), append(s.teardown, st.teardown)
		if jt.run > 0 {
			s.queue, s.prepare, s.run = append(s.queue, jt.queue), append(s.prepare, jt.prepare), append(s.run, jt.run)
		}
		if time.Since(last) > 5*time.Second || i == total-1 {
			progress("latency: %d/%d rounds", i+1-f.Warmup, f.Jobs)
			last = time.Now()
		}
	}
	return &s, nil
}

// throughputResult is the throughput phase's figures.
type throughputResult struct {
	Clients     int          `json:"clients"`
	Submissions int          `json:"submissions"`
	Seconds     float64      `json:"seconds"`
	JobsPerS    float64      `json:"jobs_per_s"`
	Latency     *latencyStat `json:"latency"` // of each POST /api/v1/jobs
	// QuarterJobsPerS is the rate over each quarter of the submissions, in
	// the order they were answered: a rate that falls as jobs pile up
	// shows a per-submission cost that grows with the queue.
	QuarterJobsPerS []float64 `json:"quarter_jobs_per_s"`
	// CPU time per admitted job, user plus system, over the timed part.
	ServerCPUUSPerJob float64 `json:"server_cpu_us_per_job"`
	ClientCPUUSPerJob float64 `json:"client_cpu_us_per_job"`
}

// admissionFloorResult is the admission floor's figures, from the same
// clients and submissions as the throughput phase.
type admissionFloorResult struct {
	Clients      int          `json:"clients"`
	Submissions  int          `json:"submissions"`
	Seconds      float64      `json:"seconds"`
	RequestsPerS float64      `json:"requests_per_s"`
	Latency      *latencyStat `json:"latency"`
}

// throughputRounds is how many slices the timed submissions are cut into,
// each run against the service and against the floor in turn.
const throughputRounds = 4

// throughput submits f.Submissions jobs from f.Clients concurrent clients
// after a warm-up, and as many to the admission floor (floor), in
// alternating slices (service first, then floor first) so that drift in
// the machine's load reaches both alike. Any failed submission fails the
// phase: a rate of refusals is not a rate of admissions.
func throughput(ctx context.Context, c, floor *benchClient, serverPid int, f *Config, progress func(string, ...any)) (*throughputResult, *admissionFloorResult, error) {
	warm := min(f.Submissions/10, 200)
	progress("throughput: %d clients, %d warm-up and %d timed submissions, as many to the admission floor, interleaved", f.Clients, warm, f.Submissions)
	for _, cl := range []*benchClient{c, floor} {
		if _, _, _, err := submitMany(ctx, cl, f.Clients, warm); err != nil {
			return nil, nil, err
		}
	}
	var (
		lats, ends, floorLats  []time.Duration
		elapsed, floorElapsed  time.Duration
		serverCPU, selfCPUUsed time.Duration
	)
	service := func(n int) error {
		cpu0, err := processCPU(serverPid)
		if err != nil {
			return err
		}
		self0 := selfCPU()
		l, e, el, err := submitMany(ctx, c, f.Clients, n)
		if err != nil {
			return err
		}
		cpu1, err := processCPU(serverPid)
		if err != nil {
			return err
		}
		selfCPUUsed += selfCPU() - self0
		serverCPU += cpu1 - cpu0
		for _, d := range e {
			ends = append(ends, elapsed+d)
		}
		lats, elapsed = append(lats, l...), elapsed+el
		return nil
	}
	floorRun := func(n int) error {
		l, _, el, err := submitMany(ctx, floor, f.Clients, n)
		if err != nil {
			return fmt.Errorf("admission floor: %w", err)
		}
		floorLats, floorElapsed = append(floorLats, l...), floorElapsed+el
		return nil
	}
	for r := range throughputRounds {
		n := (r+1)*f.Submissions/throughputRounds - r*f.Submissions/throughputRounds
		first, second := service, floorRun
		if r%2 == 1 {
			first, second = floorRun, service
		}
		if err := first(n); err != nil {
			return nil, nil, err
		}
		if err := second(n); err != nil {
			return nil, nil, err
		}
	}
	n := float64(f.Submissions)
	perJob := func(d time.Duration) float64 { return round1(float64(d) / float64(time.Microsecond) / n) }
	tp := &throughputResult{
		Clients: f.Clients, Submissions: f.Submissions, Seconds: math.Round(elapsed.Seconds()*1000) / 1000,
		JobsPerS: round1(n / elapsed.Seconds()), Latency: summarize(lats),
		QuarterJobsPerS:   quarterRates(ends),
		ServerCPUUSPerJob: perJob(serverCPU), ClientCPUUSPerJob: perJob(selfCPUUsed),
	}
	fl := &admissionFloorResult{Clients: f.Clients, Submissions: f.Submissions,
		Seconds:      math.Round(floorElapsed.Seconds()*1000) / 1000,
		RequestsPerS: round1(n / floorElapsed.Seconds()), Latency: summarize(floorLats)}
	return tp, fl, nil
}

// quarterRates splits the answer times (since the start) into four equal
// counts and returns the rate of each.
func quarterRates(ends []time.Duration) []float64 {
	if len(ends) < 4 {
		return nil
	}
	s := slices.Clone(ends)
	slices.Sort(s)
	out := make([]float64, 4)
	var prev time.Duration
	for q := range 4 {
		lo, hi := q*len(s)/4, (q+1)*len(s)/4
		end := s[hi-1]
		if d := end - prev; d > 0 {
			out[q] = round1(float64(hi-lo) / d.Seconds())
		}
		prev = end
	}
	return out
}

// submitMany posts n submissions from clients goroutines and returns each
// one's latency, when each was answered (since the start) and the wall
// time of the lot.
func submitMany(ctx context.Context, c *benchClient, clients, n int) (lats, ends []time.Duration, elapsed time.Duration, err error) {
	if n == 0 {
		return nil, nil, 0, nil
	}
	body := benchSubmission(benchProjectName, 0)
	lats, ends = make([]time.Duration, n), make([]time.Duration, n)
	var next atomic.Int64
	var firstErr error
	var errOnce sync.Once
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				t := time.Now()
				_, err := c.do(ctx, "POST", "/api/v1/jobs", "application/json", body, nil)
				lats[i], ends[i] = time.Since(t), time.Since(start)
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed = time.Since(start)
	if firstErr != nil {
		return nil, nil, 0, fmt.Errorf("throughput: %w", firstErr)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, 0, err
	}
	return lats, ends, elapsed, nil
}

// processCPU is the user plus system CPU time of process pid so far, from
// /proc/<pid>/stat (fields 14 and 15, in USER_HZ ticks, which Linux fixes
// at 100 for user space).
func processCPU(pid int) (time.Duration, error) { return procStatCPU(pid, false) }

// processTreeCPU is processCPU with the children pid has waited for
// (fields 16 and 17): a server's with its local host's sandboxes.
func processTreeCPU(pid int) (time.Duration, error) { return procStatCPU(pid, true) }

func procStatCPU(pid int, children bool) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	fields := strings.Fields(string(b[i+1:]))
	// fields[0] is field 3 (state); utime and stime are fields 14 and 15,
	// cutime and cstime 16 and 17.
	if len(fields) < 15 {
		return 0, errors.New("short /proc stat")
	}
	last := 12
	if children {
		last = 14
	}
	var ticks int64
	for _, f := range fields[11 : last+1] {
		var v int64
		if _, err := fmt.Sscan(f, &v); err != nil {
			return 0, err
		}
		ticks += v
	}
	return time.Duration(ticks) * (time.Second / 100), nil
}

// selfCPU is this process's user plus system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
