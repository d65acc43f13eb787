// Package bench is `skiff bench`'s harness: it starts a throwaway server,
// measures job latency next to a bare `runsc run` and the host driver, a
// fan-out through the real local host and submissions per second, and
// reports the figures (docs/bench.md).
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Targets of issue 4: what `skiff bench` holds its figures to.
const (
	benchTargetOverheadMS = 50.0
	benchTargetJobsPerS   = 2000.0
	// benchTargetWarmMS is issue 18's submit-to-terminal p50 of a trivial
	// task on an initialized project (warm sandboxes).
	benchTargetWarmMS = 60.0
	// benchTargetWarmRatio is issue 31's: the warm p50 at most this
	// fraction of the bare `runsc run` p50 of the same run.
	benchTargetWarmRatio = 0.15
	// benchTargetAdmissionRatio is issue 31's: the service's admissions
	// per second at least this fraction of the admission floor's.
	benchTargetAdmissionRatio = 0.5
	// benchTargetBuildRatio is issue 31's: a push published within 10 %
	// of a bare `buildah bud` of the same context.
	benchTargetBuildRatio = 1.1
	// benchTargetFanOutRatio is issue 31's: fan-out at least this fraction
	// of the ideal (slots / bare runsc p50).
	benchTargetFanOutRatio = 0.9
)

// Config configures a bench run; `skiff bench` fills it from its flags.
type Config struct {
	Jobs        int           // timed latency rounds
	Warmup      int           // untimed rounds before them
	Clients     int           // concurrent clients of the throughput phase
	Submissions int           // timed submissions; 0 skips the phase
	FanOutTasks int           // tasks of the fan-out phase's job; 0 skips it
	Builds      int           // build rounds (push and bare buildah bud); 0 skips them
	Buildah     string        // buildah for the server's builder and the bare builds
	Poll        time.Duration // GET interval while a latency job runs
	Runsc       string        // runsc for the server and the bare and driver runs
	TmpDir      string        // where the temporary directory goes ("": the system's)
	Keep        bool          // keep the temporary directory
	// Version is the skiff version the report names.
	Version string
	// CgroupParent names the cgroup parent a server on dataDir gives its
	// local host, so that the bench can remove what it leaves.
	CgroupParent func(dataDir string) string
	// Progress receives progress lines (stderr).
	Progress io.Writer
}

// Report is what a bench run measured; `skiff bench --json` prints it as is.
type Report struct {
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
	// ServiceWarm is Service for a second project of the same image that
	// was initialized (POST /projects/:name/init), so that its tasks run
	// in the host's warm sandboxes; measured in the same rounds.
	ServiceWarm *latencyStat `json:"service_warm,omitempty"`
	// WarmRunMS is its started -> completed p50 (the hand-over to the warm
	// sandbox's launcher, the runner, the outcome's report).
	WarmRunMS    float64      `json:"service_warm_started_to_completed_p50_ms,omitempty"`
	TargetWarmMS float64      `json:"target_warm_ms"`
	WarmMet      *bool        `json:"warm_met,omitempty"`
	BareRunsc    *latencyStat `json:"bare_runsc"`  // `runsc run` alone
	HostDriver   *latencyStat `json:"host_driver"` // gvisor Driver.Run
	// The floors of a warm start, measured in the same rounds, each in a
	// bare sandbox booted (untimed) with the launcher waiting as its init:
	// WarmFloor hands the runner's command to the launcher and runs until
	// `runsc run` exits with the runner's status (what a warm attempt's
	// sandbox part cannot beat); RunscExec is `runsc exec` of the same
	// runner into such a sandbox (how warm starts ran before the launcher).
	WarmFloor *latencyStat `json:"warm_floor_launcher"`
	RunscExec *latencyStat `json:"warm_floor_runsc_exec"`
	// Ratios of p50s: each figure against its floor in the same run.
	Ratios *ratios `json:"ratios"`
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
	// AdmissionFloor is the same clients and submissions, interleaved with
	// the throughput phase's, against a handler that only inserts the job's
	// row (admitfloor.go).
	AdmissionFloor *admissionFloorResult `json:"admission_floor,omitempty"`

	// Build is the build rounds: pushes beside bare `buildah bud`.
	Build *buildFloorResult `json:"build,omitempty"`
}

// ratios are p50s divided by the p50 of their floor in the same run.
type ratios struct {
	// ServiceCold is service / bare runsc.
	ServiceCold float64 `json:"service_cold_ratio"`
	// ServiceWarm is service warm / bare runsc: issue 31's target is at
	// most TargetServiceWarm.
	ServiceWarm       float64 `json:"service_warm_ratio,omitempty"`
	TargetServiceWarm float64 `json:"target_service_warm_ratio"`
	ServiceWarmMet    *bool   `json:"service_warm_ratio_met,omitempty"`
	// ServiceWarmToFloor is service warm / the launcher's round trip: what
	// dispatch, the API and the driver add to a warm start's floor.
	ServiceWarmToFloor float64 `json:"service_warm_to_floor_ratio,omitempty"`
	// WarmFloor is the launcher's round trip / bare runsc.
	WarmFloor float64 `json:"warm_floor_ratio"`
	// RunscExecToFloor is runsc exec / the launcher's round trip.
	RunscExecToFloor float64 `json:"runsc_exec_to_floor_ratio"`
	// FanOut is fan-out tasks/s / the ideal (slots / bare runsc).
	FanOut       float64 `json:"fan_out_ratio,omitempty"`
	TargetFanOut float64 `json:"target_fan_out_ratio"`
	FanOutMet    *bool   `json:"fan_out_ratio_met,omitempty"`
	// Admission is the service's jobs/s / the admission floor's requests/s.
	Admission       float64 `json:"admission_ratio,omitempty"`
	TargetAdmission float64 `json:"target_admission_ratio"`
	AdmissionMet    *bool   `json:"admission_ratio_met,omitempty"`
	// Build is push-to-published / bare buildah bud.
	Build       float64 `json:"build_ratio,omitempty"`
	TargetBuild float64 `json:"target_build_ratio"`
	BuildMet    *bool   `json:"build_ratio_met,omitempty"`
}

// ratio is a / b to 3 places; 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return math.Round(a/b*1000) / 1000
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

// Run sets up, measures and tears down; every exit path stops what it
// started.
func Run(ctx context.Context, f Config) (*Report, error) {
	progress := func(format string, a ...any) { fmt.Fprintf(f.Progress, "bench: "+format+"\n", a...) }
	if os.Geteuid() != 0 {
		return nil, errors.New("needs root: the server's local host and the bare runs use runsc, which applies cgroup limits only as root")
	}
	if _, err := os.Stat(f.Runsc); err != nil {
		return nil, fmt.Errorf("runsc: %w (run 'make setup', or pass --runsc)", err)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this binary: %w", err)
	}
	tmp, err := os.MkdirTemp(f.TmpDir, "skiff-bench-")
	if err != nil {
		return nil, err
	}
	// The server's data dir must be absolute for the cgroup name and the
	// host's paths to come out the same as the server computes them.
	if tmp, err = filepath.Abs(tmp); err != nil {
		return nil, err
	}
	defer func() {
		if f.Keep {
			progress("kept %s", tmp)
			return
		}
		if err := os.RemoveAll(tmp); err != nil {
			progress("remove %s: %v", tmp, err)
		}
	}()
	dataDir := filepath.Join(tmp, "data")
	// The servers' local host leaves its (empty) cgroup parent behind.
	defer removeCgroupDirs(f.CgroupParent(dataDir))

	rep := &Report{Version: f.Version, CPUs: runtime.NumCPU(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		Store: "sqlite", RunscVersion: runscVersion(ctx, f.Runsc), PollMS: ms(f.Poll),
		TargetOverheadMS: benchTargetOverheadMS, TargetWarmMS: benchTargetWarmMS, TargetJobsPerS: benchTargetJobsPerS, TargetRefillGapMS: benchFanOutTargetGapMS}
	slots := runtime.NumCPU()

	progress("starting a throwaway server on %s", dataDir)
	srv, err := startBenchServer(ctx, benchServerParams{Binary: self, DataDir: dataDir, Runsc: f.Runsc, Buildah: f.Buildah,
		LogPath: filepath.Join(tmp, "server.log"), HostSlots: slots})
	if err != nil {
		return nil, err
	}
	defer srv.stop(progress)
	key, err := benchAccount(ctx, self, dataDir)
	if err != nil {
		return nil, err
	}
	client := newBenchClient(srv.URL, key, f.Clients)
	progress("pushing the bench project (this binary as its runner) and waiting for its build")
	digest, err := client.pushProject(ctx, benchProjectName, self)
	if err != nil {
		return nil, err
	}

	sb, err := newBenchSandbox(ctx, benchSandboxParams{Runsc: f.Runsc, Dir: filepath.Join(tmp, "sandbox"),
		LayoutDir: filepath.Join(dataDir, "images", strings.TrimPrefix(digest, "sha256:")), Digest: digest})
	if err != nil {
		return nil, err
	}
	defer sb.close(progress)

	progress("pushing and initializing a second project of the same image for warm starts")
	if _, err := client.pushProject(ctx, benchWarmProjectName, self); err != nil {
		return nil, err
	}
	if err := client.initProject(ctx, benchWarmProjectName); err != nil {
		return nil, err
	}
	lat, err := latencyRounds(ctx, client, sb, benchWarmProjectName, &f, progress)
	if err != nil {
		return nil, err
	}
	if rep.ServiceWarm = summarize(lat.warm); rep.ServiceWarm != nil {
		rep.WarmRunMS = summarize(lat.warmRun).P50MS
		met := rep.ServiceWarm.P50MS <= benchTargetWarmMS
		rep.WarmMet = &met
	}
	rep.Service, rep.ServiceSeen = summarize(lat.service), summarize(lat.seen)
	rep.BareRunsc, rep.HostDriver = summarize(lat.bare), summarize(lat.driver)
	rep.WarmFloor, rep.RunscExec = summarize(lat.launch), summarize(lat.runscExec)
	rep.Ratios = &ratios{ServiceCold: ratio(rep.Service.P50MS, rep.BareRunsc.P50MS), TargetServiceWarm: benchTargetWarmRatio,
		TargetFanOut: benchTargetFanOutRatio, TargetAdmission: benchTargetAdmissionRatio, TargetBuild: benchTargetBuildRatio,
		WarmFloor: ratio(rep.WarmFloor.P50MS, rep.BareRunsc.P50MS), RunscExecToFloor: ratio(rep.RunscExec.P50MS, rep.WarmFloor.P50MS)}
	if rep.ServiceWarm != nil {
		rep.Ratios.ServiceWarm = ratio(rep.ServiceWarm.P50MS, rep.BareRunsc.P50MS)
		rep.Ratios.ServiceWarmToFloor = ratio(rep.ServiceWarm.P50MS, rep.WarmFloor.P50MS)
		met := rep.Ratios.ServiceWarm <= benchTargetWarmRatio
		rep.Ratios.ServiceWarmMet = &met
	}
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

	if f.FanOutTasks > 0 {
		fo, err := fanOut(ctx, client, srv.Pid(), runtime.NumCPU(), f.FanOutTasks, slots, sb.bareRunCPU, progress)
		if err != nil {
			return nil, err
		}
		rep.FanOut = fo
		rep.Ratios.FanOut = ratio(fo.TasksPerS, fo.IdealTasksPerS)
		met := rep.Ratios.FanOut >= benchTargetFanOutRatio
		rep.Ratios.FanOutMet = &met
		if fo.RefillGap != nil {
			met := fo.RefillGap.P50MS < benchFanOutTargetGapMS
			rep.RefillGapMet = &met
		}
	}
	sb.close(progress)

	if f.Builds > 0 {
		b, err := buildRounds(ctx, client, self, f.Buildah, filepath.Join(tmp, "buildfloor"), f.Builds, progress)
		if err != nil {
			return nil, err
		}
		rep.Build = b
		rep.Ratios.Build = ratio(b.PushToPublished.P50MS, b.BareBud.P50MS)
		met := rep.Ratios.Build <= benchTargetBuildRatio
		rep.Ratios.BuildMet = &met
	}

	if f.Submissions == 0 {
		return rep, nil
	}
	progress("restarting the server with --no-local-host for the throughput phase")
	srv.stop(progress)
	srv, err = startBenchServer(ctx, benchServerParams{Binary: self, DataDir: dataDir, Runsc: f.Runsc, Buildah: f.Buildah,
		LogPath: filepath.Join(tmp, "server-throughput.log"), NoLocalHost: true})
	if err != nil {
		return nil, err
	}
	defer srv.stop(progress)
	client = newBenchClient(srv.URL, key, f.Clients)
	floor, err := startAdmissionFloor(ctx, filepath.Join(tmp, "admission-floor", "floor.db"), time.Now)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := floor.close(); err != nil {
			progress("admission floor: %v", err)
		}
	}()
	tp, fl, err := throughput(ctx, client, newBenchClient(floor.URL, key, f.Clients), srv.Pid(), &f, progress)
	if err != nil {
		return nil, err
	}
	rep.Throughput, rep.AdmissionFloor = tp, fl
	met := tp.JobsPerS >= benchTargetJobsPerS
	rep.ThroughputMet = &met
	rep.Ratios.Admission = ratio(tp.JobsPerS, fl.RequestsPerS)
	admMet := rep.Ratios.Admission >= benchTargetAdmissionRatio
	rep.Ratios.AdmissionMet = &admMet
	return rep, nil
}

// writeText prints the report for people.
func (r *Report) WriteText(w io.Writer) {
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
	if r.ServiceWarm != nil {
		row("service warm", r.ServiceWarm)
	}
	row("bare runsc", r.BareRunsc)
	row("host driver", r.HostDriver)
	row("warm floor", r.WarmFloor)
	row("runsc exec", r.RunscExec)
	p("  service = start of POST /api/v1/jobs to the job's completed_at; service seen = to the first GET that")
	p("  shows it terminal (polled every %.1f ms); bare runsc = `runsc run` alone; host driver = the gVisor", r.PollMS)
	p("  driver's Run (directories, bundle, runsc run with limits, teardown, result), as the host calls it;")
	p("  warm floor = handing the runner's command to a launcher already waiting in a booted bare sandbox, until")
	p("  runsc run exits with its status; runsc exec = `runsc exec` of the runner into such a sandbox.")
	if ds := r.DriverStages; ds != nil {
		p("  host driver p50 by stage: prepare %.1f ms, runsc start to runner %.1f ms, runner to exit %.1f ms, collect %.1f ms, teardown before the outcome %.1f ms",
			ds.PrepareMS, ds.RunscStartMS, ds.RunnerToExitMS, ds.CollectMS, ds.TeardownMS)
	}
	if st := r.Stages; st != nil {
		p("  service p50 by stage: submitted->assigned %.1f ms, assigned->started %.1f ms, started->completed %.1f ms",
			st.QueueMS, st.PrepareMS, st.RunMS)
	}
	if r.ServiceWarm != nil {
		p("  service warm = the same on an initialized project, whose tasks run in warm sandboxes (started->completed p50 %.1f ms)", r.WarmRunMS)
		p("Warm start p50 target <= %.0f ms: %s", r.TargetWarmMS, verdict(*r.WarmMet))
	}
	if q := r.Ratios; q != nil {
		p("Ratios of p50s to their floor in this run: service cold / bare runsc %.3f; warm floor / bare runsc %.3f; runsc exec / warm floor %.3f",
			q.ServiceCold, q.WarmFloor, q.RunscExecToFloor)
		if q.ServiceWarmMet != nil {
			p("  service warm / bare runsc %.3f (target <= %.2f: %s); service warm / warm floor %.3f",
				q.ServiceWarm, q.TargetServiceWarm, verdict(*q.ServiceWarmMet), q.ServiceWarmToFloor)
		}
	}
	p("Service overhead (p50 service - p50 bare runsc): %.1f ms; target < %.0f ms: %s", r.ServiceOverheadMS, r.TargetOverheadMS, verdict(r.OverheadMet))
	p("  host driver over bare runsc: %.1f ms; dispatch, API and store (service over host driver): %.1f ms", r.DriverOverheadMS, r.DispatchOverheadMS)
	if fo := r.FanOut; fo != nil {
		p("")
		p("Fan-out: one job of %d trivial tasks on the local host's %d slots:", fo.Tasks, fo.Slots)
		p("  %.1f tasks/s in %.2f s (ideal, slots / p50 of bare runsc runs just before and after it: %.1f tasks/s; ratio %.3f, target >= %.2f: %s)", fo.TasksPerS, fo.Seconds,
			fo.IdealTasksPerS, r.Ratios.FanOut, r.Ratios.TargetFanOut, verdict(r.Ratios.FanOutMet != nil && *r.Ratios.FanOutMet))
		if a, pr := fo.Attempt, fo.Prepare; a != nil && pr != nil {
			p("  each attempt (started->ended) p50 %.1f ms, p95 %.1f ms, against bare runsc p50 %.1f ms alone; assigned->started p50 %.1f ms",
				a.P50MS, a.P95MS, fo.IdealBare.P50MS, pr.P50MS)
		}
		if c := fo.IdealBareCPU; c != nil {
			p("  a bare runsc run takes p50 %.1f ms of CPU (runsc and its sandbox) in %.1f ms: %d at once want %.1f of the %d CPUs",
				c.P50MS, fo.IdealBare.P50MS, fo.Slots, float64(fo.Slots)*c.P50MS/fo.IdealBare.P50MS, r.CPUs)
		}
		if fo.CPUPerTaskMS > 0 {
			p("  CPU per task, the server and its sandboxes: %.1f ms; the %d CPUs allow at most %.1f tasks/s", fo.CPUPerTaskMS, r.CPUs, fo.CPUBoundTasksPerS)
		}
		if g := fo.RefillGap; g != nil {
			p("  refill gap (a freed slot's end to the next start on it): p50 %.1f ms, p95 %.1f ms, max %.1f ms (n=%d)",
				g.P50MS, g.P95MS, g.MaxMS, g.N)
			p("Refill gap p50 target < %.0f ms: %s", r.TargetRefillGapMS, verdict(*r.RefillGapMet))
		}
	}
	if b := r.Build; b != nil {
		p("")
		p("Builds of the bench project, %d rounds, each with no layer cached:", b.Rounds)
		row("push", b.PushToPublished)
		row("buildah bud", b.BareBud)
		p("  push = start of POST /api/v1/projects/:name/push to the GET that shows it published (polled every %.1f ms);", b.PollMS)
		p("  buildah bud = the same context built bare by the same buildah, with the builder's storage flags.")
		p("Push / bare buildah bud %.3f; target <= %.2f: %s", r.Ratios.Build, r.Ratios.TargetBuild, verdict(*r.Ratios.BuildMet))
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
		if fl := r.AdmissionFloor; fl != nil {
			p("  admission floor (the same clients against a handler doing one SQLite insert of the job's row with the store's")
			p("  settings, interleaved): %.0f requests/s, latency p50 %.1f ms, p95 %.1f ms", fl.RequestsPerS, fl.Latency.P50MS, fl.Latency.P95MS)
			p("Service / admission floor %.3f; target >= %.2f: %s", r.Ratios.Admission, r.Ratios.TargetAdmission, verdict(*r.Ratios.AdmissionMet))
		}
	}
}
