package project_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/build/buildtest"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/project"
)

// benchDockerfile is the FROM scratch project with one file of code that
// each round changes, so that every build really builds a layer (the runner
// layer comes from the cache, as it does for a code change).
const benchDockerfile = "FROM scratch\nCOPY runner /runner\nWORKDIR /app\nCOPY main.txt /app/main.txt\n"

// BenchmarkPushToPublished times a push of the FROM scratch project through
// the HTTP API until its record says published (client side: POST, then
// GET every 10 ms), against `buildah bud` run by hand on the same context
// with the same command line (taken from the service's own buildah process),
// and against bud followed by the plainest export, `buildah push` into an
// OCI layout. Each round changes main.txt on both sides; the two sides share
// one buildah storage, so their layer caches are in the same state. The
// metrics are medians over the rounds (SKIFF_BENCH_ROUNDS, default 7):
//
//	go test -run '^$' -bench PushToPublished -benchtime 1x ./internal/project/
func BenchmarkPushToPublished(b *testing.B) {
	rounds := 7
	if n, err := strconv.Atoi(os.Getenv("SKIFF_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	ts := startServer(b, serverOptions{})
	c := ts.Client(ts.NewAccount(b, "bench").Member)
	createProject(b, c, "bench")
	// Checking every poll's answer against the document costs CPU that the
	// build then lacks on a small machine; the tests check the contract, the
	// benchmark times the service.
	c.Contract = nil
	runner := readRunner(b)
	files := func(rev string) []entry {
		return []entry{
			{name: "Dockerfile", body: benchDockerfile},
			{name: "runner", body: string(runner), mode: 0o755},
			{name: project.ManifestFile, body: minimalManifest},
			{name: "main.txt", body: rev + "\n"},
		}
	}

	// Warm up, and learn the exact buildah command line the service runs.
	capture := captureBud(b, ts.DataDir)
	warm := pushAccepted(b, c, "bench", tgz(b, files("warm")...))
	if rec := waitPushFast(b, c, warm.StatusURL); rec.Status != "published" {
		b.Fatalf("warm-up push: %s (%v)\n%s", rec.Status, deref(rec.Error), rec.LogTail)
	}
	budArgv, budEnv := capture()
	handCtx := b.TempDir()
	hand := handBud(b, budArgv, budEnv, handCtx)
	b.Logf("buildah command: %s", strings.Join(budArgv, " "))

	var service, post, queued, serverSide, builder, builderBud, builderExport, bud, budPush []float64
	for range b.N {
		for r := 1; r <= rounds; r++ {
			for _, e := range files(fmt.Sprintf("hand %d %d", r, time.Now().UnixNano())) {
				mode := os.FileMode(0o644)
				if e.mode != 0 {
					mode = os.FileMode(e.mode)
				}
				buildtest.WriteFile(b, handCtx, e.name, e.body, mode)
			}
			d, dp := hand()
			bud, budPush = append(bud, d.Seconds()), append(budPush, dp.Seconds())

			body := tgz(b, files(fmt.Sprintf("service %d %d", r, time.Now().UnixNano()))...)
			start := time.Now()
			acc := pushAccepted(b, c, "bench", body)
			posted := time.Since(start)
			rec := waitPushFast(b, c, acc.StatusURL)
			took := time.Since(start)
			if rec.Status != "published" {
				b.Fatalf("round %d: %s (%v)\n%s", r, rec.Status, deref(rec.Error), rec.LogTail)
			}
			service, post = append(service, took.Seconds()), append(post, posted.Seconds())
			queued = append(queued, rec.StartedAt.Sub(rec.CreatedAt).Seconds())
			serverSide = append(serverSide, rec.FinishedAt.Sub(rec.CreatedAt).Seconds())
			total, budT, exportT := builderTimings(b, ts.logs.String(), rec.PushRef)
			builder, builderBud, builderExport = append(builder, total), append(builderBud, budT), append(builderExport, exportT)
		}
	}
	ms, mb, mbp := median(service), median(bud), median(budPush)
	b.ReportMetric(ms, "push-to-published-s")
	b.ReportMetric(median(post), "post-202-s")
	b.ReportMetric(median(queued), "server-queued-s")
	b.ReportMetric(median(serverSide), "server-created-to-finished-s")
	b.ReportMetric(median(builder), "builder-s")
	b.ReportMetric(median(builderBud), "builder-bud-s")
	b.ReportMetric(median(builderExport), "builder-export-s")
	b.ReportMetric(mb, "buildah-bud-s")
	b.ReportMetric(mbp, "buildah-bud+push-s")
	b.ReportMetric(100*(ms-mb)/mb, "overhead-vs-bud-%")
	b.ReportMetric(100*(ms-mbp)/mbp, "overhead-vs-bud+push-%")
	b.Logf("rounds (s): push-to-published %s; buildah bud %s; bud+push %s", fmtSeconds(service), fmtSeconds(bud), fmtSeconds(budPush))
}

// builderTimings reads the builder's "image built" log line for the push:
// the whole Build, and its bud and export phases, in seconds.
func builderTimings(t testing.TB, log, pushRef string) (total, bud, export float64) {
	t.Helper()
	lines := strings.Split(log, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		line := lines[i]
		if !strings.Contains(line, `msg="image built"`) || !strings.Contains(line, pushRef) {
			continue
		}
		field := func(name string) float64 {
			for _, f := range strings.Fields(line) {
				if v, ok := strings.CutPrefix(f, name+"="); ok {
					d, err := time.ParseDuration(v)
					if err != nil {
						t.Fatalf("builder log %s: %v", name, err)
					}
					return d.Seconds()
				}
			}
			t.Fatalf("builder log line lacks %s: %s", name, line)
			return 0
		}
		return field("duration"), field("build"), field("export")
	}
	t.Fatalf("no builder log line for %s", pushRef)
	return 0, 0, 0
}

// waitPushFast polls a push record every 10 ms, so that the poll adds little
// to the time measured.
func waitPushFast(t testing.TB, c *apitest.Client, statusURL string) apiv1.PushRecord {
	t.Helper()
	return apitest.WaitPush(t, c, statusURL, buildWithin, 10*time.Millisecond)
}

// captureBud watches /proc for the service's `buildah ... bud` process under
// dataDir and returns a function that yields its argv and extra environment.
func captureBud(t testing.TB, dataDir string) func() (argv, env []string) {
	t.Helper()
	var mu sync.Mutex
	var argv, env []string
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			entries, _ := os.ReadDir("/proc")
			for _, e := range entries {
				raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
				if err != nil || !bytes.Contains(raw, []byte(dataDir)) {
					continue
				}
				args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
				if filepath.Base(args[0]) != "buildah" || !slices.Contains(args, "bud") {
					continue
				}
				environ, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
				var extra []string
				for _, kv := range strings.Split(string(environ), "\x00") {
					if strings.HasPrefix(kv, "TMPDIR=") {
						extra = append(extra, kv)
					}
				}
				mu.Lock()
				argv, env = args, extra
				mu.Unlock()
				return
			}
		}
	}()
	return func() ([]string, []string) {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		if argv == nil {
			t.Fatal("never saw the service's buildah bud process")
		}
		return argv, env
	}
}

// handBud returns a function that runs the captured bud command line on
// ctxDir (instead of the push's context), then `buildah push` of the image
// into a fresh OCI layout, and returns both durations: bud alone, and bud
// plus push.
func handBud(t testing.TB, argv, env []string, ctxDir string) func() (bud, budPush time.Duration) {
	t.Helper()
	budAt := slices.Index(argv, "bud")
	global := slices.Clone(argv[1:budAt])
	args := slices.Clone(argv)
	pushCtx := args[len(args)-1]
	var iidFile string
	for i, a := range args {
		switch {
		case i == len(args)-1:
			args[i] = ctxDir
		case a == "-f":
			args[i+1] = filepath.Join(ctxDir, strings.TrimPrefix(args[i+1], pushCtx+"/"))
		case i > 0 && args[i-1] == "--iidfile":
			iidFile = filepath.Join(t.TempDir(), "iid")
			args[i] = iidFile
		}
	}
	if iidFile == "" {
		t.Fatalf("the captured bud command has no --iidfile: %v", argv)
	}
	run := func(argv ...string) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
		}
	}
	n := 0
	return func() (time.Duration, time.Duration) {
		n++
		start := time.Now()
		run(args...)
		bud := time.Since(start)
		id, err := os.ReadFile(iidFile)
		if err != nil {
			t.Fatal(err)
		}
		layout := filepath.Join(t.TempDir(), "layout")
		run(append(append([]string{argv[0]}, global...), "push", "--quiet", strings.TrimSpace(string(id)),
			fmt.Sprintf("oci:%s:hand-%d", layout, n))...)
		return bud, time.Since(start)
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func fmtSeconds(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 3, 64)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
