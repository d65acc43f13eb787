package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/sandbox"
)

// Targets of issue 4: what `skiff bench` holds its figures to.
const (
	benchTargetOverheadMS = 50.0
	benchTargetJobsPerS   = 2000.0
)

// benchFlags configure `skiff bench`.
type benchFlags struct {
	jobs        int
	warmup      int
	clients     int
	submissions int
	fanOutTasks int
	poll        time.Duration
	runsc       string
	tmpDir      string
	keep        bool
	json        bool
}

const benchSynopsis = `Measures the service on this machine and prints a report (figures on stdout,
progress on stderr). It starts a throwaway 'skiff server' (this binary, SQLite,
a temporary --data-dir, 127.0.0.1 on a free port), creates an account with a key
and credit through 'skiff admin', and pushes a project whose image is FROM scratch
with this binary as its runner ('skiff bench runner': reads the payload, writes
{"ok":true}). Then:

 1. Latency, in --jobs rounds (after --warmup untimed ones), each round running
    the same trivial task three ways, interleaved so that noise hits all three:
      service     POST /api/v1/jobs, then GET /api/v1/jobs/{id} every --poll
                  until the job is terminal; timed from the POST to the job's
                  completed_at (the server is local: same clock), and to the
                  GET that saw it ("service seen", up to one --poll more);
      bare runsc  'runsc run' of the same image and runner on a minimal OCI
                  bundle (no cgroup limits, no teardown), timed around runsc;
      host driver the gVisor driver's Run with the spec the host uses for a
                  default job (1 CPU, 2048 MiB): directories, bundle, runsc run,
                  teardown, result collection.
    Service overhead is p50(service) - p50(bare runsc); target < 50 ms.
 2. Fan-out: one job of --fanout-tasks trivial tasks (fan_out.items) on the
    local host, which has one slot per CPU. Reports tasks/s from the job's
    submitted_at to its completed_at next to the ideal (slots / p50 of the
    bare runsc run), and the refill gap: for every slot freed while tasks were
    queued, the time from that attempt's end to the next attempt's start, by
    the service's own timestamps; target p50 < 20 ms.
 3. Throughput: the server restarts on the same data dir with --no-local-host,
    so that jobs are admitted but never run, and --clients concurrent HTTP
    clients POST --submissions single-job submissions (after a warm-up of a
    tenth, at most 200). Reports jobs/s and submit latency, and the CPU time
    per job of the server and of this client; target 2,000/s on 2 cores.

Everything it started is stopped, and its temporary directory removed, when
it ends or on SIGINT/SIGTERM. Needs root, runsc and buildah (as the server's
local host and builder do). No figure is asserted: the machine is what it is.

'skiff bench runner' is the task itself; it is what runs in the sandbox.`

func runBench(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 && args[0] == "runner" {
		return benchRunner(e)
	}
	var f benchFlags
	fs := e.newFlags("bench [flags] | bench runner", benchSynopsis)
	fs.IntVar(&f.jobs, "jobs", 50, "timed latency rounds: jobs, bare runsc runs and driver runs each (env SKIFF_JOBS)")
	fs.IntVar(&f.warmup, "warmup", 3, "untimed latency rounds before the timed ones (env SKIFF_WARMUP)")
	fs.IntVar(&f.clients, "clients", 32, "concurrent HTTP clients of the throughput phase (env SKIFF_CLIENTS)")
	fs.IntVar(&f.fanOutTasks, "fanout-tasks", 200, "tasks of the fan-out phase's one job; 0 skips it (env SKIFF_FANOUT_TASKS)")
	fs.IntVar(&f.submissions, "submissions", 4000, "timed submissions of the throughput phase; 0 skips it (env SKIFF_SUBMISSIONS)")
	fs.DurationVar(&f.poll, "poll", 20*time.Millisecond, "interval of GET /api/v1/jobs/{id} while a latency job runs; shorter polls load the server and slow the sandbox start on small machines (env SKIFF_POLL)")
	fs.StringVar(&f.runsc, "runsc", build.DefaultRunscPath, "runsc for the server, the bare runs and the driver runs (env SKIFF_RUNSC)")
	fs.StringVar(&f.tmpDir, "tmp-dir", "", "where the temporary directory goes (default: the system's, usually /tmp) (env SKIFF_TMP_DIR)")
	fs.BoolVar(&f.keep, "keep", false, "keep the temporary directory (data dir and server logs) for inspection (env SKIFF_KEEP)")
	fs.BoolVar(&f.json, "json", false, "print the figures as one JSON object instead of the text report (env SKIFF_JSON)")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if f.jobs < 1 || f.warmup < 0 || f.clients < 1 || f.submissions < 0 || f.fanOutTasks < 0 || f.poll <= 0 {
		fs.Usage()
		return errors.New("--jobs and --clients must be at least 1, --warmup, --fanout-tasks and --submissions at least 0, --poll positive")
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rep, err := runBenchPhases(ctx, e, &f)
	if err != nil {
		if ctx.Err() != nil {
			return errors.New("interrupted; stopped everything it started")
		}
		return err
	}
	if f.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.writeText(e.stdout)
	return nil
}

// benchRunner is the bench project's task: it checks that the payload is
// JSON and writes a fixed result. It does as little as a runner can.
func benchRunner(e *env) error {
	// Its start, as the host's clock reads it (gVisor serves the host's
	// time), lets the bench tell the sandbox's start from the runner's run.
	started := time.Now().UnixNano()
	payload, err := os.ReadFile(e.getenv(sandbox.EnvPayload))
	if err != nil {
		return err
	}
	if !json.Valid(payload) {
		return errors.New("payload is not JSON")
	}
	return os.WriteFile(e.getenv(sandbox.EnvResult), fmt.Appendf(nil, `{"ok":true,"started_unix_nano":%d}`+"\n", started), 0o644)
}

// benchReport is what `skiff bench` measured; --json prints it as is.
type benchReport struct {
	Version      string `json:"version"`
	CPUs         int    `json:"cpus"`
	Platform     string `json:"platform"`
	Store        string `json:"store"`
	RunscVersion string `json:"runsc_version"`

	PollMS float64 `json:"poll_ms"`
	// Service is submit-to-terminal: from the start of POST /api/v1/jobs
	// to the job's completed_at. ServiceSeen runs to the first GET that
	// showed it terminal, so it adds up to one poll interval.
	Service     *latencyStat `json:"service"`
	ServiceSeen *latencyStat `json:"service_seen"`
	BareRunsc   *latencyStat `json:"bare_runsc"`  // `runsc run` alone
	HostDriver  *latencyStat `json:"host_driver"` // gvisor Driver.Run
	// DriverStages are p50s of the host driver's stages (see
	// sandbox.Stages), the sandbox's span split at the runner's start.
	DriverStages *driverStagesP50 `json:"driver_stages_p50,omitempty"`
	// The service's stages, p50s, by its own timestamps: submitted ->
	// assigned to the host (queue and dispatch) -> started on it (image and
	// directories) -> completed (sandbox, outcome report, job end).
	Stages *serviceStages `json:"service_stages_p50,omitempty"`

	ServiceOverheadMS  float64 `json:"service_overhead_ms"`  // p50 service - p50 bare runsc
	DriverOverheadMS   float64 `json:"driver_overhead_ms"`   // p50 host driver - p50 bare runsc
	DispatchOverheadMS float64 `json:"dispatch_overhead_ms"` // p50 service - p50 host driver
	TargetOverheadMS   float64 `json:"target_overhead_ms"`
	OverheadMet        bool    `json:"overhead_met"`

	FanOut *fanOutResult `json:"fan_out,omitempty"`
	// TargetRefillGapMS is the target for FanOut.RefillGap's p50.
	TargetRefillGapMS float64 `json:"target_refill_gap_ms"`
	RefillGapMet      *bool   `json:"refill_gap_met,omitempty"`

	Throughput *throughputResult `json:"throughput,omitempty"`
	// TargetJobsPerS applies on 2 cores with SQLite; on other machines the
	// comparison is only indicative.
	TargetJobsPerS float64 `json:"target_jobs_per_s"`
	ThroughputMet  *bool   `json:"throughput_met,omitempty"`
}

// driverStagesP50 are p50s of the host driver's stages in milliseconds.
type driverStagesP50 struct {
	PrepareMS      float64 `json:"prepare_ms"`        // directories, bundle, limits
	RunscStartMS   float64 `json:"runsc_start_ms"`    // runsc's start until the runner runs
	RunnerToExitMS float64 `json:"runner_to_exit_ms"` // the runner, then runsc's exit
	CollectMS      float64 `json:"collect_ms"`        // result, runsc's errors
	TeardownMS     float64 `json:"teardown_ms"`       // before the outcome (0: handed off)
}

// serviceStages are p50s of the service's stages in milliseconds.
type serviceStages struct {
	QueueMS   float64 `json:"submitted_to_assigned_ms"`
	PrepareMS float64 `json:"assigned_to_started_ms"`
	RunMS     float64 `json:"started_to_completed_ms"`
}

// latencyStat summarizes a sample of durations in milliseconds.
type latencyStat struct {
	N     int     `json:"n"`
	MinMS float64 `json:"min_ms"`
	P50MS float64 `json:"p50_ms"`
	P95MS float64 `json:"p95_ms"`
	P99MS float64 `json:"p99_ms"`
	MaxMS float64 `json:"max_ms"`
}

func summarize(ds []time.Duration) *latencyStat {
	if len(ds) == 0 {
		return nil
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return &latencyStat{N: len(s), MinMS: ms(s[0]), P50MS: ms(percentile(s, 50)), P95MS: ms(percentile(s, 95)),
		P99MS: ms(percentile(s, 99)), MaxMS: ms(s[len(s)-1])}
}

// percentile is the nearest-rank percentile of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// ms is d in milliseconds rounded to 0.1 ms.
func ms(d time.Duration) float64 { return round1(float64(d) / float64(time.Millisecond)) }

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// runBenchPhases sets up, measures and tears down; every exit path stops
// what it started.
func runBenchPhases(ctx context.Context, e *env, f *benchFlags) (*benchReport, error) {
	progress := func(format string, a ...any) { fmt.Fprintf(e.stderr, "bench: "+format+"\n", a...) }
	if os.Geteuid() != 0 {
		return nil, errors.New("needs root: the server's local host and the bare runs use runsc, which applies cgroup limits only as root")
	}
	if _, err := os.Stat(f.runsc); err != nil {
		return nil, fmt.Errorf("runsc: %w (run 'make setup', or pass --runsc)", err)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this binary: %w", err)
	}
	tmp, err := os.MkdirTemp(f.tmpDir, "skiff-bench-")
	if err != nil {
		return nil, err
	}
	// The server's data dir must be absolute for the cgroup name and the
	// host's paths to come out the same as the server computes them.
	if tmp, err = filepath.Abs(tmp); err != nil {
		return nil, err
	}
	defer func() {
		if f.keep {
			progress("kept %s", tmp)
			return
		}
		if err := os.RemoveAll(tmp); err != nil {
			progress("remove %s: %v", tmp, err)
		}
	}()
	dataDir := filepath.Join(tmp, "data")
	// The servers' local host leaves its (empty) cgroup parent behind.
	defer removeCgroupDirs("skiff-" + hostSuffix(dataDir))

	rep := &benchReport{Version: Version, CPUs: runtime.NumCPU(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		Store: "sqlite", RunscVersion: runscVersion(ctx, f.runsc), PollMS: ms(f.poll),
		TargetOverheadMS: benchTargetOverheadMS, TargetJobsPerS: benchTargetJobsPerS, TargetRefillGapMS: benchFanOutTargetGapMS}
	slots := runtime.NumCPU()

	progress("starting a throwaway server on %s", dataDir)
	srv, err := startBenchServer(ctx, benchServerParams{Binary: self, DataDir: dataDir, Runsc: f.runsc,
		LogPath: filepath.Join(tmp, "server.log"), HostSlots: slots})
	if err != nil {
		return nil, err
	}
	defer srv.stop(progress)
	key, err := benchAccount(ctx, self, dataDir)
	if err != nil {
		return nil, err
	}
	client := newBenchClient(srv.URL, key, f.clients)
	progress("pushing the bench project (this binary as its runner) and waiting for its build")
	digest, err := client.pushProject(ctx, benchProjectName, self)
	if err != nil {
		return nil, err
	}

	sb, err := newBenchSandbox(ctx, benchSandboxParams{Runsc: f.runsc, Dir: filepath.Join(tmp, "sandbox"),
		LayoutDir: filepath.Join(dataDir, "images", strings.TrimPrefix(digest, "sha256:")), Digest: digest})
	if err != nil {
		return nil, err
	}
	defer sb.close(progress)

	lat, err := latencyRounds(ctx, client, sb, f, progress)
	if err != nil {
		return nil, err
	}
	rep.Service, rep.ServiceSeen = summarize(lat.service), summarize(lat.seen)
	rep.BareRunsc, rep.HostDriver = summarize(lat.bare), summarize(lat.driver)
	rep.DriverStages = &driverStagesP50{PrepareMS: summarize(lat.prepare2).P50MS, RunscStartMS: summarize(lat.runscStart).P50MS,
		RunnerToExitMS: summarize(lat.runnerToExit).P50MS, CollectMS: summarize(lat.collect).P50MS, TeardownMS: summarize(lat.teardown).P50MS}
	if len(lat.run) > 0 {
		rep.Stages = &serviceStages{QueueMS: summarize(lat.queue).P50MS, PrepareMS: summarize(lat.prepare).P50MS,
			RunMS: summarize(lat.run).P50MS}
	}
	rep.ServiceOverheadMS = round1(rep.Service.P50MS - rep.BareRunsc.P50MS)
	rep.DriverOverheadMS = round1(rep.HostDriver.P50MS - rep.BareRunsc.P50MS)
	rep.DispatchOverheadMS = round1(rep.Service.P50MS - rep.HostDriver.P50MS)
	rep.OverheadMet = rep.ServiceOverheadMS < benchTargetOverheadMS
	sb.close(progress)

	if f.fanOutTasks > 0 {
		fo, err := fanOut(ctx, client, f.fanOutTasks, slots, rep.BareRunsc.P50MS, progress)
		if err != nil {
			return nil, err
		}
		rep.FanOut = fo
		if fo.RefillGap != nil {
			met := fo.RefillGap.P50MS < benchFanOutTargetGapMS
			rep.RefillGapMet = &met
		}
	}

	if f.submissions == 0 {
		return rep, nil
	}
	progress("restarting the server with --no-local-host for the throughput phase")
	srv.stop(progress)
	srv, err = startBenchServer(ctx, benchServerParams{Binary: self, DataDir: dataDir, Runsc: f.runsc,
		LogPath: filepath.Join(tmp, "server-throughput.log"), NoLocalHost: true})
	if err != nil {
		return nil, err
	}
	defer srv.stop(progress)
	client = newBenchClient(srv.URL, key, f.clients)
	tp, err := throughput(ctx, client, srv.Pid(), f, progress)
	if err != nil {
		return nil, err
	}
	rep.Throughput = tp
	met := tp.JobsPerS >= benchTargetJobsPerS
	rep.ThroughputMet = &met
	return rep, nil
}

// writeText prints the report for people.
func (r *benchReport) writeText(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	row := func(name string, s *latencyStat) {
		p("  %-12s p50 %7.1f ms   p95 %7.1f ms   min %7.1f ms   max %7.1f ms   (n=%d)", name, s.P50MS, s.P95MS, s.MinMS, s.MaxMS, s.N)
	}
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	p("skiff bench: skiff %s, %d CPUs, %s, %s store, runsc %s", r.Version, r.CPUs, r.Platform, r.Store, r.RunscVersion)
	p("")
	p("Trivial task (FROM scratch image, runner writes {\"ok\":true}), one at a time, %d rounds:", r.Service.N)
	row("service", r.Service)
	row("service seen", r.ServiceSeen)
	row("bare runsc", r.BareRunsc)
	row("host driver", r.HostDriver)
	p("  service = start of POST /api/v1/jobs to the job's completed_at; service seen = to the first GET that")
	p("  shows it terminal (polled every %.1f ms); bare runsc = `runsc run` alone; host driver = the gVisor", r.PollMS)
	p("  driver's Run (directories, bundle, runsc run with limits, teardown, result), as the host calls it.")
	if ds := r.DriverStages; ds != nil {
		p("  host driver p50 by stage: prepare %.1f ms, runsc start to runner %.1f ms, runner to exit %.1f ms, collect %.1f ms, teardown before the outcome %.1f ms",
			ds.PrepareMS, ds.RunscStartMS, ds.RunnerToExitMS, ds.CollectMS, ds.TeardownMS)
	}
	if st := r.Stages; st != nil {
		p("  service p50 by stage: submitted->assigned %.1f ms, assigned->started %.1f ms, started->completed %.1f ms",
			st.QueueMS, st.PrepareMS, st.RunMS)
	}
	p("Service overhead (p50 service - p50 bare runsc): %.1f ms; target < %.0f ms: %s", r.ServiceOverheadMS, r.TargetOverheadMS, verdict(r.OverheadMet))
	p("  host driver over bare runsc: %.1f ms; dispatch, API and store (service over host driver): %.1f ms", r.DriverOverheadMS, r.DispatchOverheadMS)
	if fo := r.FanOut; fo != nil {
		p("")
		p("Fan-out: one job of %d trivial tasks on the local host's %d slots:", fo.Tasks, fo.Slots)
		p("  %.1f tasks/s in %.2f s (ideal, slots / p50 bare runsc: %.1f tasks/s)", fo.TasksPerS, fo.Seconds, fo.IdealTasksPerS)
		if g := fo.RefillGap; g != nil {
			p("  refill gap (a freed slot's end to the next start on it): p50 %.1f ms, p95 %.1f ms, max %.1f ms (n=%d)",
				g.P50MS, g.P95MS, g.MaxMS, g.N)
			p("Refill gap p50 target < %.0f ms: %s", r.TargetRefillGapMS, verdict(*r.RefillGapMet))
		}
	}
	if t := r.Throughput; t != nil {
		p("")
		p("Single-job submissions over HTTP, %d clients, %d jobs (server without a local host: admission only):", t.Clients, t.Submissions)
		p("  %.0f jobs/s in %.2f s; submit latency p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms",
			t.JobsPerS, t.Seconds, t.Latency.P50MS, t.Latency.P95MS, t.Latency.P99MS, t.Latency.MaxMS)
		if len(t.QuarterJobsPerS) == 4 {
			q := t.QuarterJobsPerS
			p("  rate by quarter of the submissions: %.0f, %.0f, %.0f, %.0f jobs/s", q[0], q[1], q[2], q[3])
		}
		p("  CPU per job: server %.0f us, this client %.0f us (%d CPUs shared by both)", t.ServerCPUUSPerJob, t.ClientCPUUSPerJob, r.CPUs)
		p("Target %.0f jobs/s (on 2 cores with SQLite): %s", r.TargetJobsPerS, verdict(*r.ThroughputMet))
	}
}
