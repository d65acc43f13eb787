package e2e_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/build/buildtest"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
)

// TestJobsEndToEndSurviveKill9 runs the real binary: push a project built
// by buildah, run jobs on the server's own gVisor host over HTTP, then
// kill -9 the server while a task runs. The restarted server records the
// attempt as lost, requeues it free and runs the job to the end.
func TestJobsEndToEndSurviveKill9(t *testing.T) {
	runner := realRunner(t)
	dir := buildtest.DataDir(t)
	args := []string{"--data-dir", dir, "--listen", "127.0.0.1:0", "--host-slots", "2"}
	srv := startServer(t, nil, args...)
	key := strings.TrimSpace(skiff(t, nil, "admin", "create-key", "--data-dir", dir, "--account", "e2e").stdout)
	skiff(t, nil, "admin", "grant-credit", "--data-dir", dir, "--account", "e2e", "--usd", "20")
	c := srv.client(t, key)
	publishRunner(t, c, "e2e", runner)

	submit := func(p sandboxtest.Payload) string {
		t.Helper()
		job := c.Post(t, "/api/v1/jobs", map[string]any{"project": "e2e", "runner_command": []string{"/runner"},
			"payload": json.RawMessage(p.Encode(t)), "requirements": map[string]any{"cpu": 1, "memory_mb": 256}}).
			Object(t, http.StatusCreated)
		return job["id"].(string)
	}

	// A job that succeeds, read back through every endpoint.
	ok := submit(sandboxtest.Payload{Stdout: "hello e2e\n", Env: []string{"GREETING"}, Progress: []string{`{"pct":100}`}})
	job := waitJSON(t, c, "/api/v1/jobs/"+ok, time.Minute, jobEnded)
	if job["status"] != "completed" {
		t.Fatalf("job: %v", job)
	}
	tasks := c.Get(t, "/api/v1/jobs/"+ok+"/tasks").Object(t, http.StatusOK)["tasks"].([]any)
	task := tasks[0].(map[string]any)
	result, _ := json.Marshal(task["result"])
	if r := sandboxtest.DecodeReport(t, result); r.Env["GREETING"] != "hi" {
		t.Errorf("runner env: %v, want the project's GREETING", r.Env)
	}
	if p, _ := json.Marshal(task["latest_progress"]); string(p) != `{"pct":100}` {
		t.Errorf("latest_progress: %s", p)
	}
	attempts := task["attempts"].([]any)
	if len(attempts) != 1 || !strings.HasPrefix(attempts[0].(map[string]any)["worker_handle"].(string), "wkr_") {
		t.Errorf("attempts: %v", attempts)
	}
	out := c.Get(t, "/api/v1/jobs/"+ok+"/output").Object(t, http.StatusOK)
	if !strings.Contains(out["output"].(string), "hello e2e") {
		t.Errorf("output: %v", out)
	}
	res := c.Get(t, "/api/v1/results/"+ok).Object(t, http.StatusOK)
	if res["status"] != "completed" || res["result_count"] != float64(1) {
		t.Errorf("result: %v", res)
	}
	// The host's paths and the image's digest stay inside; the project's
	// own content hash is the user's to see (project_content_hash, spec
	// 2.6), so it is taken out before looking for a digest.
	contentHash, _ := c.Get(t, "/api/v1/projects/e2e").Object(t, http.StatusOK)["content_hash"].(string)
	if !strings.HasPrefix(contentHash, "sha256:") {
		t.Fatalf("project content_hash %q, want sha256:...", contentHash)
	}
	for _, leak := range []string{dir, "sha256:", "/host/"} {
		for _, p := range []string{"/api/v1/jobs/" + ok, "/api/v1/jobs/" + ok + "/tasks", "/api/v1/results/" + ok} {
			if b := bytes.ReplaceAll(c.Get(t, p).Body, []byte(contentHash), nil); bytes.Contains(b, []byte(leak)) {
				t.Errorf("GET %s shows %q: %s", p, leak, b)
			}
		}
	}

	// kill -9 while a task runs.
	long := submit(sandboxtest.Payload{SleepMS: 4000, Stdout: "survived"})
	waitJSON(t, c, "/api/v1/jobs/"+long+"/tasks", time.Minute, func(m map[string]any) bool {
		ts := m["tasks"].([]any)
		return len(ts) == 1 && ts[0].(map[string]any)["status"] == "running" &&
			len(ts[0].(map[string]any)["attempts"].([]any)) == 1
	})
	if err := srv.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	srv.wait(t, 10*time.Second)

	srv = startServer(t, nil, args...)
	c = srv.client(t, key)
	job = waitJSON(t, c, "/api/v1/jobs/"+long, 2*time.Minute, jobEnded)
	if job["status"] != "completed" {
		t.Fatalf("job after kill -9: %v", job)
	}
	task = c.Get(t, "/api/v1/jobs/"+long+"/tasks").Object(t, http.StatusOK)["tasks"].([]any)[0].(map[string]any)
	attempts = task["attempts"].([]any)
	if len(attempts) != 2 || attempts[0].(map[string]any)["status"] != "lost" || attempts[1].(map[string]any)["status"] != "succeeded" {
		t.Errorf("attempts after kill -9: %v", attempts)
	}
	if task["retries_used"] != float64(0) {
		t.Errorf("retries_used: %v, want 0 (a lost attempt is free)", task["retries_used"])
	}
	if code := srv.stop(t, 30*time.Second); code != 0 {
		t.Errorf("exit: %d", code)
	}
}

// publishRunner creates project name (env GREETING=hi) with the test
// runner as its image (FROM scratch) and waits until its push publishes.
func publishRunner(t *testing.T, c *apitest.Client, name string, runner []byte) {
	t.Helper()
	c.Post(t, "/api/v1/projects", map[string]any{"name": name, "env": map[string]string{"GREETING": "hi"}}).
		Want(t, http.StatusCreated)
	body := tarball(t, map[string]string{
		"Dockerfile":         "FROM scratch\nCOPY runner /runner\nWORKDIR /app\n",
		"skiff.project.json": `{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"}, "entrypoint": {"command": ["/runner"]}}`,
		"runner":             string(runner),
	})
	var rec struct {
		StatusURL string `json:"status_url"`
	}
	c.Do(t, apitest.Request{Method: http.MethodPost, Path: "/api/v1/projects/" + name + "/push", Body: body,
		Header: http.Header{"Content-Type": {"application/gzip"}}}).JSON(t, http.StatusAccepted, &rec)
	waitJSON(t, c, rec.StatusURL, time.Minute, func(m map[string]any) bool { return m["status"] == "published" })
}

// waitJSON polls path until ok holds for its JSON object.
func waitJSON(t *testing.T, c *apitest.Client, path string, within time.Duration, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		m := c.Get(t, path).Object(t, http.StatusOK)
		if ok(m) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: condition not met within %s; last %v", path, within, m)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tarball is a gzip tar of the files (mode 0755 for "runner").
func tarball(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		mode := int64(0o644)
		if name == "runner" {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(body)), Typeflag: tar.TypeReg,
			ModTime: time.Unix(1_700_000_000, 0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
