package e2e_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/sandbox/gvisor"
	"github.com/skiffhq/skiff/internal/testenv"
)

// The runner is what runs in the sandbox: it reads the payload from
// SKIFF_TASK_PAYLOAD and writes {"ok":true} to SKIFF_TASK_RESULT.
func TestBenchRunner(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, payload string
		code          int
	}{
		{"json payload", `{"i":1}`, 0},
		{"not json", `{"i":`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			payload, result := filepath.Join(dir, "payload.json"), filepath.Join(dir, "result.json")
			if err := os.WriteFile(payload, []byte(tc.payload), 0o600); err != nil {
				t.Fatal(err)
			}
			r := skiff(t, envList("SKIFF_TASK_PAYLOAD", payload, "SKIFF_TASK_RESULT", result), "bench", "runner")
			if r.code != tc.code {
				t.Fatalf("got exit %d, want %d; stderr %q", r.code, tc.code, r.stderr)
			}
			b, err := os.ReadFile(result)
			switch {
			case tc.code != 0 && err == nil:
				t.Errorf("got result %q after a failure, want none", b)
			case tc.code == 0:
				var r struct {
					OK      bool  `json:"ok"`
					Started int64 `json:"started_unix_nano"`
				}
				if err != nil || json.Unmarshal(b, &r) != nil || !r.OK || r.Started <= 0 {
					t.Errorf("got result %q (%v), want {\"ok\":true} with the runner's start time", b, err)
				}
			}
		})
	}
}

// TestBenchEndToEnd runs `skiff bench` with small numbers against real
// gVisor and buildah and checks the report's shape, never its figures.
func TestBenchEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("bench: starts servers and sandboxes")
	}
	if os.Geteuid() != 0 {
		testenv.Skip(t, "bench: needs root")
	}
	runsc := os.Getenv("SKIFF_RUNSC")
	if runsc == "" {
		runsc = gvisor.DefaultRunscPath
	}
	if _, err := os.Stat(runsc); err != nil {
		testenv.Skipf(t, "bench: needs runsc at %s: %v", runsc, err)
	}
	if _, err := exec.LookPath("buildah"); err != nil {
		testenv.Skip(t, "bench: needs buildah")
	}
	t.Parallel()
	// The bench puts its own binary in the image, so it must be a real,
	// static skiff: the test binary is neither.
	bin := filepath.Join(t.TempDir(), "skiff")
	build := exec.Command("go", "build", "-o", bin, "github.com/skiffhq/skiff/cmd/skiff")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	tmp := t.TempDir()
	cmd := exec.Command(bin, "bench", "--jobs", "3", "--warmup", "1", "--submissions", "50", "--clients", "4", "--builds", "2",
		"--runsc", runsc, "--tmp-dir", tmp, "--json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("skiff bench: %v\nstderr:\n%s", err, stderr.String())
		}
	case <-time.After(5 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("skiff bench did not finish in 5 minutes; stderr:\n%s", stderr.String())
	}

	var rep struct {
		CPUs         int            `json:"cpus"`
		Store        string         `json:"store"`
		RunscVersion string         `json:"runsc_version"`
		Service      *benchStat     `json:"service"`
		ServiceSeen  *benchStat     `json:"service_seen"`
		BareRunsc    *benchStat     `json:"bare_runsc"`
		HostDriver   *benchStat     `json:"host_driver"`
		ServiceWarm  *benchStat     `json:"service_warm"`
		WarmFloor    *benchStat     `json:"warm_floor_launcher"`
		RunscExec    *benchStat     `json:"warm_floor_runsc_exec"`
		Ratios       map[string]any `json:"ratios"`
		Stages       *struct {
			RunMS float64 `json:"started_to_completed_ms"`
		} `json:"service_stages_p50"`
		ServiceOverheadMS *float64 `json:"service_overhead_ms"`
		OverheadMet       *bool    `json:"overhead_met"`
		Throughput        *struct {
			Clients     int        `json:"clients"`
			Submissions int        `json:"submissions"`
			JobsPerS    float64    `json:"jobs_per_s"`
			Quarters    []float64  `json:"quarter_jobs_per_s"`
			Latency     *benchStat `json:"latency"`
		} `json:"throughput"`
		ThroughputMet  *bool `json:"throughput_met"`
		AdmissionFloor *struct {
			Clients      int        `json:"clients"`
			Submissions  int        `json:"submissions"`
			RequestsPerS float64    `json:"requests_per_s"`
			Latency      *benchStat `json:"latency"`
		} `json:"admission_floor"`
		FanOut *struct {
			Tasks      int        `json:"tasks"`
			RefillGap  *benchStat `json:"refill_gap"`
			Attempt    *benchStat `json:"attempt"`
			Prepare    *benchStat `json:"prepare"`
			IdealBare  *benchStat `json:"ideal_bare_runsc"`
			BareCPU    *benchStat `json:"ideal_bare_runsc_cpu"`
			CPUPerTask float64    `json:"cpu_per_task_ms"`
			CPUBound   float64    `json:"cpu_bound_tasks_per_s"`
		} `json:"fan_out"`
		Build *struct {
			Rounds          int        `json:"rounds"`
			PushToPublished *benchStat `json:"push_to_published"`
			BareBud         *benchStat `json:"bare_buildah_bud"`
		} `json:"build"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s", err, stdout.String())
	}
	if rep.CPUs < 1 || rep.Store != "sqlite" || rep.RunscVersion == "" {
		t.Errorf("got cpus %d, store %q, runsc version %q; want the machine described", rep.CPUs, rep.Store, rep.RunscVersion)
	}
	for name, s := range map[string]*benchStat{"service": rep.Service, "service_seen": rep.ServiceSeen,
		"bare_runsc": rep.BareRunsc, "host_driver": rep.HostDriver, "service_warm": rep.ServiceWarm,
		"warm_floor_launcher": rep.WarmFloor, "warm_floor_runsc_exec": rep.RunscExec} {
		if s == nil || s.N != 3 || s.P50MS <= 0 || s.MinMS > s.P50MS || s.P50MS > s.P95MS || s.P95MS > s.MaxMS {
			t.Errorf("%s: got %+v, want 3 ordered samples", name, s)
		}
	}
	// Each figure beside its floor, as ratios of p50s in the same run.
	for _, k := range []string{"service_cold_ratio", "service_warm_ratio", "service_warm_to_floor_ratio", "warm_floor_ratio",
		"runsc_exec_to_floor_ratio", "fan_out_ratio", "admission_ratio", "build_ratio"} {
		if v, ok := rep.Ratios[k].(float64); !ok || v <= 0 {
			t.Errorf("ratios.%s: got %v, want a positive ratio (ratios %v)", k, rep.Ratios[k], rep.Ratios)
		}
	}
	if rep.Ratios["target_service_warm_ratio"] != 0.15 {
		t.Errorf("ratios.target_service_warm_ratio: got %v, want 0.15", rep.Ratios["target_service_warm_ratio"])
	}
	for k, want := range map[string]float64{"target_admission_ratio": 0.5, "target_build_ratio": 1.1, "target_fan_out_ratio": 0.9} {
		if rep.Ratios[k] != want {
			t.Errorf("ratios.%s: got %v, want %v", k, rep.Ratios[k], want)
		}
	}
	for _, k := range []string{"service_warm_ratio_met", "admission_ratio_met", "build_ratio_met", "fan_out_ratio_met"} {
		if _, ok := rep.Ratios[k].(bool); !ok {
			t.Errorf("ratios.%s: got %v, want a verdict", k, rep.Ratios[k])
		}
	}
	// The floors of an admission and of a build, beside the service's.
	if fl := rep.AdmissionFloor; fl == nil || fl.Clients != 4 || fl.Submissions != 50 || fl.RequestsPerS <= 0 ||
		fl.Latency == nil || fl.Latency.N != 50 {
		t.Errorf("got admission floor %+v, want 50 requests from 4 clients with a rate and latencies", fl)
	}
	// Where a fan-out's slot time goes: each attempt's run and preparation.
	if fo := rep.FanOut; fo == nil || fo.Tasks != 200 || fo.Attempt == nil || fo.Attempt.N < 200 || fo.Attempt.P50MS <= 0 ||
		fo.Prepare == nil || fo.Prepare.N < 200 || fo.RefillGap == nil || fo.IdealBare == nil || fo.IdealBare.N != 10 ||
		fo.BareCPU == nil || fo.BareCPU.N != 10 || fo.BareCPU.P50MS <= 0 || fo.CPUPerTask <= 0 || fo.CPUBound <= 0 {
		t.Errorf("got fan-out %+v, want 200 attempts' run and preparation times beside the refill gap, and 10 bare runs with their CPU for the ideal, and the CPU per task", fo)
	}
	if b := rep.Build; b == nil || b.Rounds != 2 || b.PushToPublished == nil || b.PushToPublished.N != 2 ||
		b.BareBud == nil || b.BareBud.N != 2 || b.BareBud.P50MS <= 0 {
		t.Errorf("got build %+v, want 2 pushes and 2 bare builds", b)
	}
	if rep.Stages == nil || rep.Stages.RunMS <= 0 {
		t.Errorf("got service stages %+v, want the run stage", rep.Stages)
	}
	if rep.ServiceOverheadMS == nil || rep.OverheadMet == nil {
		t.Errorf("got no service overhead or verdict")
	}
	if tp := rep.Throughput; tp == nil || tp.Clients != 4 || tp.Submissions != 50 || tp.JobsPerS <= 0 ||
		len(tp.Quarters) != 4 || tp.Latency == nil || tp.Latency.N != 50 || rep.ThroughputMet == nil {
		t.Errorf("got throughput %+v, want 50 submissions from 4 clients with a rate, latencies and a verdict", tp)
	}
	// Progress went to stderr, and nothing was left behind.
	if !regexp.MustCompile(`(?m)^bench: latency: 3/3 rounds$`).MatchString(stderr.String()) {
		t.Errorf("stderr lacks the progress lines:\n%s", stderr.String())
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("bench left %d entries in its --tmp-dir, want none", len(left))
	}
}

type benchStat struct {
	N     int     `json:"n"`
	MinMS float64 `json:"min_ms"`
	P50MS float64 `json:"p50_ms"`
	P95MS float64 `json:"p95_ms"`
	MaxMS float64 `json:"max_ms"`
}
