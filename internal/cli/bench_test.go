package cli_test

import (
	"strings"
	"testing"
)

func TestBenchHelp(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runMain("bench", "--help")
	if code != 0 || stdout != "" {
		t.Fatalf("bench --help: got exit %d, stdout %q; want 0 and help on stderr only", code, stdout)
	}
	for _, f := range []string{"jobs", "warmup", "clients", "submissions", "fanout-tasks", "builds", "buildah", "poll", "runsc", "tmp-dir", "keep", "json"} {
		if !explains(stderr, f) {
			t.Errorf("bench help does not explain -%s with its environment twin:\n%s", f, stderr)
		}
	}
	for _, w := range []string{"bare runsc", "host driver", "--no-local-host", "50 ms", "2,000/s", "bench runner", "admission floor", "buildah bud", "admission_ratio", "build_ratio", "fan_out_ratio"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("bench help does not mention %q:\n%s", w, stderr)
		}
	}
	if code, _, stderr := runMain("--help"); code != 0 || !strings.Contains(stderr, "bench") {
		t.Errorf("skiff --help: got exit %d, want 0 and a line for bench:\n%s", code, stderr)
	}
}

func TestBenchBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"bench", "--jobs", "0"},
		{"bench", "--clients", "0"},
		{"bench", "--poll", "0s"},
		{"bench", "--builds", "-1"},
		{"bench", "extra"},
	} {
		if code, stdout, _ := runMain(args...); code == 0 || stdout != "" {
			t.Errorf("%v: got exit %d, stdout %q; want a failure and nothing on stdout", args, code, stdout)
		}
	}
}
