// Package sandboxtest is the conformance suite every sandbox driver passes,
// and the fixtures it needs: a static test runner compiled from
// testdata/runner, packed into a FROM-scratch OCI layout and unpacked as a
// root filesystem. Other packages' tests (the host agent's) use the same
// fixtures.
package sandboxtest

import (
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/skiffhq/skiff/internal/testenv"
)

// runnerSource is embedded so the fixture builds from any working directory
// and from the module cache, where testdata is not a package.
//
//go:embed testdata/runner/main.go
var runnerSource []byte

// RunnerPath is where the runner sits in the fixture image.
const RunnerPath = "/usr/local/bin/runner"

// BuildRunner compiles the test runner as a static binary (CGO_ENABLED=0, so
// it needs nothing from the image) and returns its path. It skips the test
// when no Go toolchain is available.
func BuildRunner(t testing.TB) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goBin); err != nil {
			testenv.Skip(t, "sandboxtest: no go toolchain to build the test runner")
		}
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"go.mod":  []byte("module skiff.test/runner\n\ngo 1.26\n"),
		"main.go": runnerSource,
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(src, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "runner")
	cmd := exec.Command(goBin, "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out, ".")
	cmd.Dir = src
	// The caller's GOFLAGS (say -modfile or -mod=vendor) belong to its own
	// module, not to this one.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sandboxtest: build runner: %v\n%s", err, b)
	}
	return out
}
