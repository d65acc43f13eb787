// Package python holds the tests of the Python SDK (sdk/python), run by Go
// against a real server so that `go test ./...` covers them.
package python

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/testenv"
)

// sdkServer starts a server on eng with an account, credit, a published
// project "p" and a stand-in host running every task; it returns the
// environment python3 needs.
func sdkServer(t *testing.T, eng apitest.Engine) []string {
	t.Helper()
	e := apitest.Start(t, apitest.Options{Store: eng.Open(t)})
	a := e.FundedAccount(t, "py", "p", 100_000_000)
	done := make(chan error, 1)
	go func() { done <- e.Worker().Serve(t.Context(), 20*time.Millisecond) }()
	t.Cleanup(func() {
		if err := <-done; err != nil && t.Context().Err() == nil {
			t.Errorf("worker: %v", err)
		}
	})
	return append(os.Environ(), "SKIFF_URL="+e.URL, "SKIFF_TOKEN="+a.Member, "SKIFF_TEST_PROJECT=p", "PYTHONPATH=.",
		"PYTHONDONTWRITEBYTECODE=1")
}

func python3(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		testenv.Skip(t, "skipping: python3 is not installed")
	}
	out, err := exec.Command(py, "-c", "import sys; assert sys.version_info >= (3, 11), sys.version").CombinedOutput()
	if err != nil {
		testenv.Skip(t, "skipping: the SDK needs Python 3.11 or newer: "+string(out))
	}
	return py
}

// TestSDK runs the SDK's unittest suite (sdk/python/tests) against a real
// server on each engine.
func TestSDK(t *testing.T) {
	py := python3(t)
	for _, eng := range apitest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			if eng.Skip != "" {
				testenv.Skip(t, eng.Skip)
			}
			cmd := exec.CommandContext(t.Context(), py, "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
			cmd.Env = sdkServer(t, eng)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("python3 -m unittest: %v\n%s", err, out)
			}
			t.Logf("%s", out)
		})
	}
}

// TestSDKDocs installs the package with pip (no package index: its build
// backend is standard library) and runs the Python blocks of
// docs/python-sdk.md in order, as one script, against a real server.
func TestSDKDocs(t *testing.T) {
	py := python3(t)
	if out, err := exec.Command(py, "-m", "pip", "--version").CombinedOutput(); err != nil {
		testenv.Skip(t, "skipping: pip is not installed (run make setup): "+string(out))
	}
	site := t.TempDir()
	if out, err := exec.CommandContext(t.Context(), py, "-m", "pip", "install", "--no-index", "--no-deps", "--quiet",
		"--target", site, ".").CombinedOutput(); err != nil {
		t.Fatalf("pip install ./sdk/python: %v\n%s", err, out)
	}
	e := apitest.Start(t, apitest.Options{})
	a := e.NewAccount(t, "docs")
	e.Grant(t, a.ID, 100_000_000)
	go func() { _ = e.Projects.RunBuilds(t.Context(), apitest.ReadyBuilder{}) }()
	go func() { _ = e.Worker().Serve(t.Context(), 20*time.Millisecond) }()

	// What `make -C examples/hello` leaves: the example with its runner.
	dir := t.TempDir()
	hello := filepath.Join(dir, "hello")
	if err := os.MkdirAll(hello, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"Dockerfile", "skiff.project.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "hello", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(hello, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(hello, "runner"), []byte("#!/runner\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "docs", "python-sdk.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := pythonBlocks(string(src))
	if len(blocks) < 6 {
		t.Fatalf("docs/python-sdk.md has %d python blocks; want the page's examples", len(blocks))
	}
	cmd := exec.CommandContext(t.Context(), py, "-c", strings.Join(blocks, "\n"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SKIFF_URL="+e.URL, "SKIFF_TOKEN="+a.Member, "PYTHONPATH="+site, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the Python blocks of docs/python-sdk.md failed: %v\n%s", err, out)
	}
	for _, want := range []string{"404 ", "published", "done: completed", "{'word': 'hello'}", "bytes", "job_charge"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the page's output lacks %q:\n%s", want, out)
		}
	}
}

// pythonBlocks returns the code of the ```python blocks of a markdown page.
func pythonBlocks(md string) []string {
	var out []string
	var cur []string
	in := false
	for _, line := range strings.Split(md, "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```python":
			in, cur = true, nil
		case in && strings.TrimSpace(line) == "```":
			in = false
			out = append(out, strings.Join(cur, "\n"))
		case in:
			cur = append(cur, line)
		}
	}
	return out
}
