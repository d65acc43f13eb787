package e2e_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/build/buildtest"
)

// TestExamplesEndToEnd pushes the projects under examples/ as a user would
// (their own Dockerfile and manifest) to the real binary and runs the job
// the README or the example shows on the server's own gVisor host: the Go
// FROM scratch runner, then the Python sweep. The Python example says
// `FROM python:3.12-slim`; no registry is reachable here, so the test makes a
// local image under that name first (about 25 s, from the cached Debian
// rootfs).
func TestExamplesEndToEnd(t *testing.T) {
	runsc := buildtest.RequireTools(t)
	dir := buildtest.DataDir(t)
	python := !testing.Short()
	if python {
		// The storage the server's builder uses: same data dir, same defaults.
		b, err := build.New(t.Context(), build.Config{RunscPath: runsc,
			StorageRoot: filepath.Join(dir, "buildah", "storage"), ImagesDir: filepath.Join(dir, "images")},
			slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		buildtest.PythonBase(t, b.Config())
	}
	srv := startServer(t, nil, "--data-dir", dir, "--listen", "127.0.0.1:0", "--host-slots", "2",
		"--build-allow-base", "python:3.12-slim")
	key := strings.TrimSpace(skiff(t, nil, "admin", "create-key", "--data-dir", dir, "--account", "newcomer").stdout)
	skiff(t, nil, "admin", "grant-credit", "--data-dir", dir, "--account", "newcomer", "--usd", "25")
	c := srv.client(t, key)

	t.Run("hello", func(t *testing.T) {
		// As the README's first steps do it: skiff push of the example's
		// directory (its .dockerignore leaves the Go source out), then
		// skiff run, which follows the job and prints its result.
		dir := t.TempDir()
		for name, body := range exampleFiles(t, "hello", "Dockerfile", "skiff.project.json", ".dockerignore", "main.go") {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "runner"), buildExample(t, "hello"), 0o755); err != nil {
			t.Fatal(err)
		}
		user := []string{"SKIFF_URL=" + srv.URL, "SKIFF_TOKEN=" + key, "XDG_CONFIG_HOME=" + t.TempDir()}
		push := skiff(t, user, "push", dir, "--project", "hello")
		if push.code != 0 || !strings.Contains(push.stdout, "Published psh_") {
			t.Fatalf("skiff push: exit %d\n%s\n%s", push.code, push.stdout, push.stderr)
		}
		payload := filepath.Join(t.TempDir(), "payload.json")
		if err := os.WriteFile(payload, []byte(`{"name": "Ada", "repeat": 2}`), 0o644); err != nil {
			t.Fatal(err)
		}
		run := skiff(t, user, "run", "--project", "hello", "--command", "/runner", "--json", payload)
		if run.code != 0 {
			t.Fatalf("skiff run: exit %d\n%s\n%s", run.code, run.stdout, run.stderr)
		}
		var out struct {
			Job    map[string]any `json:"job"`
			Result struct {
				Results []map[string]any `json:"results"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(run.stdout), &out); err != nil || len(out.Result.Results) != 1 {
			t.Fatalf("skiff run --json: %v\n%s", err, run.stdout)
		}
		id, _ := out.Job["id"].(string)
		task := c.Get(t, "/api/v1/jobs/"+id+"/tasks").Object(t, http.StatusOK)["tasks"].([]any)[0].(map[string]any)
		res, _ := task["result"].(map[string]any)
		if res["greeting"] != "hello, Ada\nhello, Ada" || res["letters"] != float64(3) || res["task_id"] != task["id"] {
			t.Errorf("result: %v, want the greeting twice, 3 letters and the task id", task["result"])
		}
		if p, _ := json.Marshal(task["latest_progress"]); string(p) != `{"pct":100,"stage":"greeting"}` {
			t.Errorf("latest_progress: %s", p)
		}
		if logs := skiff(t, user, "jobs", "logs", id); !strings.Contains(logs.stdout, "hello, Ada") {
			t.Errorf("skiff jobs logs: %+v", logs)
		}
	})

	t.Run("python-sweep", func(t *testing.T) {
		if !python {
			t.Skip("skipping the Python example (a Debian and python3 base image) in -short mode")
		}
		// The example's directory as it is, and its sweep.json, a whole
		// submission, through the CLI.
		example := filepath.Join("..", "..", "examples", "python-sweep")
		user := []string{"SKIFF_URL=" + srv.URL, "SKIFF_TOKEN=" + key, "XDG_CONFIG_HOME=" + t.TempDir()}
		if push := skiff(t, user, "push", example, "--project", "sweep"); push.code != 0 {
			t.Fatalf("skiff push: exit %d\n%s\n%s", push.code, push.stdout, push.stderr)
		}
		run := skiff(t, user, "run", "--json", filepath.Join(example, "sweep.json"))
		var out struct {
			Job map[string]any `json:"job"`
		}
		if err := json.Unmarshal([]byte(run.stdout), &out); err != nil || run.code != 0 {
			t.Fatalf("skiff run: exit %d, %v\n%s\n%s", run.code, err, run.stdout, run.stderr)
		}
		job := out.Job
		summary, _ := job["summary"].(map[string]any)
		if counts, _ := summary["task_outcome_counts"].(map[string]any); counts["succeeded"] != float64(4) {
			t.Errorf("task_outcome_counts: %v, want 4 succeeded (2 lr x 2 depth)", summary["task_outcome_counts"])
		}
		// main.py's stand-in loss is lowest at lr 0.5, depth 4.
		best, _ := summary["best"].(map[string]any)
		params, _ := best["params"].(map[string]any)
		result, _ := best["result"].(map[string]any)
		if params["lr"] != 0.5 || params["depth"] != float64(4) || result["python"] == nil {
			t.Errorf("best: %v, want lr 0.5, depth 4 and the runner's result", summary["best"])
		}
	})

	if code := srv.stop(t, 30*time.Second); code != 0 {
		t.Errorf("exit: %d", code)
	}
}

// exampleFiles reads the named files of examples/name.
func exampleFiles(t *testing.T, name string, files ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", name, f))
		if err != nil {
			t.Fatal(err)
		}
		out[f] = string(b)
	}
	return out
}

// buildExample compiles examples/name as its Makefile does (static, for
// FROM scratch) into a temporary directory, and returns the binary.
func buildExample(t *testing.T, name string) []byte {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("skipping: the go tool is not on PATH to compile the example")
	}
	bin := filepath.Join(t.TempDir(), "runner")
	cmd := exec.CommandContext(t.Context(), gobin, "build", "-trimpath", "-o", bin, "./examples/"+name)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building examples/%s: %v\n%s", name, err, out)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jobEnded says whether a job object is in a terminal status.
func jobEnded(m map[string]any) bool {
	switch m["status"] {
	case "completed", "partial", "failed", "cancelled":
		return true
	}
	return false
}
