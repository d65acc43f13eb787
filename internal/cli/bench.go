package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/skiffhq/skiff/internal/bench"
	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/server"
)

// benchFlags configure `skiff bench`.
type benchFlags struct {
	jobs        int
	warmup      int
	clients     int
	submissions int
	fanOutTasks int
	builds      int
	buildah     string
	poll        time.Duration
	runsc       string
	tmpDir      string
	keep        bool
	json        bool
	gpu         bool
	gpuFlags    gpuBenchFlags
}

const benchSynopsis = `Measures the service on this machine and prints a report (figures on stdout,
progress on stderr). It starts a throwaway 'skiff server' (this binary, SQLite,
a temporary --data-dir, 127.0.0.1 on a free port), creates an account with a key
and credit through 'skiff admin', and pushes a project whose image is FROM scratch
with this binary as its runner ('skiff bench runner': reads the payload, writes
{"ok":true}). Then:

 1. Latency, in --jobs rounds (after --warmup untimed ones), each round running
    the same trivial task several ways, interleaved so that noise hits them alike:
      service     POST /api/v1/jobs, then GET /api/v1/jobs/{id} every --poll
                  until the job is terminal; timed from the POST to the job's
                  completed_at (the server is local: same clock), and to the
                  GET that saw it ("service seen", up to one --poll more);
      bare runsc  'runsc run' of the same image and runner on a minimal OCI
                  bundle (no cgroup limits, no teardown), timed around runsc;
      host driver the gVisor driver's Run with the spec the host uses for a
                  default job (1 CPU, 2048 MiB): directories, bundle, runsc run,
                  teardown, result collection;
      service warm the service's job on a second, initialized project, whose
                  tasks run in the local host's warm sandboxes;
      warm floor  in a bare sandbox booted beforehand (untimed) with the
                  launcher waiting as its init, handing it the runner's
                  command until runsc exits with the runner's status; beside
                  it, runsc exec of the runner into another such sandbox.
    Service overhead is p50(service) - p50(bare runsc); target < 50 ms. Each
    figure is also given as a ratio of p50s to its floor in the same run
    (the *_ratio keys of --json); target: service warm <= 0.15 of bare runsc.
 2. Fan-out: one job of --fanout-tasks trivial tasks (fan_out.items) on the
    local host, which has one slot per CPU. Reports tasks/s from the job's
    submitted_at to its completed_at next to the ideal (slots / p50 of bare
    runsc runs, five just before the job and five just after), each
    attempt's run and preparation, and the refill gap: for every slot freed while tasks were
    queued, the time from that attempt's end to the next attempt's start, by
    the service's own timestamps; target p50 < 20 ms. Target: fan-out at
    least 0.9 of the ideal (fan_out_ratio).
 3. Builds, in --builds rounds: a push of the bench project (with a nonce
    copied in first, so that nothing comes from a layer cache), timed from
    the POST to the GET that shows it published, and a bare 'buildah bud' of
    the same context with the same buildah and the builder's storage flags
    on a storage of its own, in alternating order. Target: push at most 1.1
    of bare buildah bud (build_ratio).
 4. Throughput: the server restarts on the same data dir with --no-local-host,
    so that jobs are admitted but never run, and --clients concurrent HTTP
    clients POST --submissions single-job submissions (after a warm-up of a
    tenth, at most 200). Reports jobs/s and submit latency, and the CPU time
    per job of the server and of this client; target 2,000/s on 2 cores.
    Interleaved with it in four slices, the same clients send as many
    submissions to the admission floor: a handler in this process that does
    one SQLite insert of a job-sized row per request, with the store's own
    SQLite settings. Target: service at least 0.5 of the floor's requests/s
    (admission_ratio).

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
	fs.IntVar(&f.builds, "builds", 3, "rounds of the build phase: a push of the bench project and a bare buildah bud of it each; 0 skips it (env SKIFF_BUILDS)")
	fs.StringVar(&f.buildah, "buildah", build.DefaultBuildahPath, "buildah for the server's builder and the bare builds (env SKIFF_BUILDAH)")
	fs.IntVar(&f.submissions, "submissions", 4000, "timed submissions of the throughput phase; 0 skips it (env SKIFF_SUBMISSIONS)")
	fs.DurationVar(&f.poll, "poll", 20*time.Millisecond, "interval of GET /api/v1/jobs/{id} while a latency job runs; shorter polls load the server and slow the sandbox start on small machines (env SKIFF_POLL)")
	fs.StringVar(&f.runsc, "runsc", build.DefaultRunscPath, "runsc for the server, the bare runs and the driver runs (env SKIFF_RUNSC)")
	fs.StringVar(&f.tmpDir, "tmp-dir", "", "where the temporary directory goes (default: the system's, usually /tmp) (env SKIFF_TMP_DIR)")
	fs.BoolVar(&f.keep, "keep", false, "keep the temporary directory (data dir and server logs) for inspection (env SKIFF_KEEP)")
	fs.BoolVar(&f.gpu, "gpu", false, "instead of the service bench, on a GPU host: a PyTorch matmul's throughput and cold start (process or sandbox start to the first finished kernel) on the bare host and in a one-GPU gVisor sandbox, side by side (see /docs/gpus)")
	f.gpuFlags.register(fs)
	fs.BoolVar(&f.json, "json", false, "print the figures as one JSON object instead of the text report (env SKIFF_JSON)")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if f.jobs < 1 || f.warmup < 0 || f.clients < 1 || f.submissions < 0 || f.fanOutTasks < 0 || f.builds < 0 || f.poll <= 0 {
		fs.Usage()
		return errors.New("--jobs and --clients must be at least 1, --warmup, --fanout-tasks, --builds and --submissions at least 0, --poll positive")
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if f.gpu {
		return runGPUBench(ctx, e, f.runsc, f.gpuFlags, f.json)
	}
	rep, err := bench.Run(ctx, bench.Config{Jobs: f.jobs, Warmup: f.warmup, Clients: f.clients,
		Submissions: f.submissions, FanOutTasks: f.fanOutTasks, Builds: f.builds, Buildah: f.buildah, Poll: f.poll, Runsc: f.runsc, TmpDir: f.tmpDir,
		Keep: f.keep, Version: Version, Progress: e.stderr,
		CgroupParent: func(dataDir string) string { return "skiff-" + server.CgroupSuffix(dataDir) }})
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
	rep.WriteText(e.stdout)
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
