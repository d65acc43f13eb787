package testenv_test

import (
	"fmt"
	"testing"

	"github.com/skiffhq/skiff/internal/testenv"
)

// recorder stands in for a test: it records the first of Skip, Fatal and
// Log called. The real ones end the goroutine there, so later calls are
// ignored.
type recorder struct {
	testing.TB
	got string
}

func (r *recorder) first(s string) {
	if r.got == "" {
		r.got = s
	}
}

func (r *recorder) Helper()                        {}
func (r *recorder) Skip(args ...any)               { r.first("skip") }
func (r *recorder) Skipf(string, ...any)           { r.first("skip") }
func (r *recorder) Fatalf(format string, a ...any) { r.first("fatal: " + fmt.Sprintf(format, a...)) }
func (r *recorder) Logf(string, ...any)            { r.first("log") }

func TestSwitch(t *testing.T) {
	for _, c := range []struct {
		env           string
		skip, partial string
	}{
		{"", "skip", "log"},
		{"0", "skip", "log"},
		{"1", "fatal", "fatal"},
	} {
		t.Run("env="+c.env, func(t *testing.T) {
			t.Setenv(testenv.EnvRequireAll, c.env)
			for name, call := range map[string]func(testing.TB){
				"Skip":    func(tb testing.TB) { testenv.Skip(tb, "no runsc") },
				"Skipf":   func(tb testing.TB) { testenv.Skipf(tb, "no %s", "runsc") },
				"Partial": func(tb testing.TB) { testenv.Partial(tb, "no runsc") },
			} {
				r := &recorder{TB: t}
				call(r)
				want := c.skip
				if name == "Partial" {
					want = c.partial
				}
				if len(r.got) < len(want) || r.got[:len(want)] != want {
					t.Errorf("%s: got %q, want %s", name, r.got, want)
				}
				if want == "fatal" && r.got != "fatal: "+testenv.EnvRequireAll+"=1 but a part this test needs is missing: no runsc" &&
					name != "Partial" {
					t.Errorf("%s: message %q does not say what is missing", name, r.got)
				}
			}
		})
	}
}
