package build_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/build/buildtest"
)

// BenchmarkBuildOverhead compares Builder.Build (buildah bud, export into an
// OCI layout, validation, publishing) with bare buildah on the same context
// and flags: `buildah bud` alone, and `buildah bud` plus the plainest export,
// `buildah push` into a fresh OCI layout. Each round changes the project so
// that both sides really build; the metrics are medians over the rounds
// (SKIFF_BENCH_ROUNDS, default 5; 3 for the cold Python case). Run with
// `go test -run '^$' -bench BuildOverhead -benchtime 1x ./internal/build/`.
func BenchmarkBuildOverhead(b *testing.B) {
	rounds := 5
	if n, err := strconv.Atoi(os.Getenv("SKIFF_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	scenarios := []struct {
		name   string
		slow   bool
		rounds int
		setup  func(b *testing.B, cfg build.Config) (dir string, change func(dir, side string, round int))
	}{
		{name: "scratch-code-change", rounds: rounds, setup: scratchScenario},
		{name: "python-code-change", slow: true, rounds: rounds, setup: pythonScenario(false)},
		{name: "python-cold-apt-layer", slow: true, rounds: min(rounds, 3), setup: pythonScenario(true)},
	}
	for _, sc := range scenarios {
		b.Run(sc.name, func(b *testing.B) {
			if sc.slow && testing.Short() {
				b.Skip("skipping the Debian scenarios in -short mode")
			}
			bld, cfg := newBuilder(b, func(c *build.Config) { c.AllowedBaseImages = []string{buildtest.DebianImage} })
			dir, change := sc.setup(b, cfg)
			// Warm both paths once: the first build of a base pays for pooling it.
			change(dir, "warm", 0)
			if _, err := bld.Build(b.Context(), build.Request{ContextDir: dir, Tag: "warm", Timeout: 10 * time.Minute}); err != nil {
				b.Fatalf("warm-up build: %v", err)
			}
			var bare, barePush, skiff, export, validate []float64
			for range b.N {
				for r := 1; r <= sc.rounds; r++ {
					change(dir, "bare", r)
					bud, push := timeBareBuildah(b, bld, dir)
					bare, barePush = append(bare, bud), append(barePush, bud+push)

					change(dir, "skiff", r)
					res, err := bld.Build(b.Context(), build.Request{
						ContextDir: dir, Tag: fmt.Sprintf("round-%d", r), Timeout: 10 * time.Minute,
						ValidateFiles: []string{"/app/main.txt"},
					})
					if err != nil {
						b.Fatalf("Build: %v", err)
					}
					skiff = append(skiff, res.Duration.Seconds())
					export = append(export, res.Timings.Export.Seconds())
					validate = append(validate, res.Timings.Validate.Seconds())
				}
			}
			mb, mbp, ms := median(bare), median(barePush), median(skiff)
			b.ReportMetric(mb, "buildah-bud-s")
			b.ReportMetric(mbp, "buildah-bud+push-s")
			b.ReportMetric(ms, "skiff-s")
			b.ReportMetric(median(export), "skiff-export-s")
			b.ReportMetric(median(validate), "skiff-validate-s")
			b.ReportMetric(100*(ms-mb)/mb, "overhead-vs-bud-%")
			b.ReportMetric(100*(ms-mbp)/mbp, "overhead-vs-bud+push-%")
			b.Logf("%s: buildah bud %v; bud+push %v; skiff %v (s)", sc.name, bare, barePush, skiff)
		})
	}
}

// timeBareBuildah runs the builder's own buildah bud command line, then a
// plain push of the result into a fresh OCI layout, and returns both times.
func timeBareBuildah(b *testing.B, bld *build.Builder, dir string) (bud, push float64) {
	b.Helper()
	tmp := b.TempDir()
	iid := filepath.Join(tmp, "iid")
	path, args, env := bld.BareBudCommand(build.Request{ContextDir: dir}, iid)
	start := time.Now()
	runBare(b, path, args, env)
	bud = time.Since(start).Seconds()

	id, err := os.ReadFile(iid)
	if err != nil {
		b.Fatal(err)
	}
	path, args, env = bld.BareBuildah("push", "--quiet", "--compression-format", "zstd",
		strings.TrimSpace(string(id)), "oci:"+filepath.Join(tmp, "layout")+":bare")
	start = time.Now()
	runBare(b, path, args, env)
	return bud, time.Since(start).Seconds()
}

func runBare(b *testing.B, path string, args, env []string) {
	b.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s %v: %v\n%s", path, args, err, out)
	}
}

func scratchScenario(b *testing.B, _ build.Config) (string, func(string, string, int)) {
	dir := buildtest.ScratchProject(b, `FROM scratch
COPY runner /usr/local/bin/runner
COPY main.txt /app/main.txt
ENTRYPOINT ["/usr/local/bin/runner"]
`)
	return dir, func(dir, side string, round int) {
		buildtest.WriteFile(b, dir, "main.txt", fmt.Sprintf("%s %d %d\n", side, round, time.Now().UnixNano()), 0o644)
	}
}

// pythonScenario is the realistic project. With cold, each round also
// changes the apt-get step, so that it runs again (the base stays cached).
func pythonScenario(cold bool) func(*testing.B, build.Config) (string, func(string, string, int)) {
	return func(b *testing.B, cfg build.Config) (string, func(string, string, int)) {
		buildtest.DebianBase(b, cfg)
		dir := b.TempDir()
		return dir, func(dir, side string, round int) {
			marker := "v1"
			if cold {
				marker = fmt.Sprintf("%s-%d-%d", side, round, time.Now().UnixNano())
			}
			buildtest.WriteFile(b, dir, "Dockerfile", `FROM `+buildtest.DebianImage+`
RUN echo `+marker+` && apt-get update && apt-get install -y --no-install-recommends python3 && rm -rf /var/lib/apt/lists/*
COPY main.txt /app/main.txt
WORKDIR /app
CMD ["python3", "-c", "print(open('/app/main.txt').read())"]
`, 0o644)
			buildtest.WriteFile(b, dir, "main.txt", fmt.Sprintf("%s %d %d\n", side, round, time.Now().UnixNano()), 0o644)
		}
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
