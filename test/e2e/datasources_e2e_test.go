package e2e_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/agent/datasrc/datasrctest"
	"github.com/skiffhq/skiff/internal/build/buildtest"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
)

// TestDataSourcesEndToEnd runs the real binary with its gVisor host
// against the stand-in for the hub and a file server: init fetches a
// project's url and hub data sources (ready_for_jobs then means they are
// there), tasks read them read-only at their mount paths, a cache mount
// starts with its seed and keeps what one task wrote for the next, and a project whose source has
// the wrong sha256 is attention_required with the source named, its job
// failing with that reason after the free requeues. The hub token is sent
// and never logged.
func TestDataSourcesEndToEnd(t *testing.T) {
	runner := realRunner(t)
	hub := datasrctest.Start(t)
	hub.Token = "hf_e2e_secret_token"
	weights := []byte(strings.Repeat("weights!", 1000))
	sum := sha256.Sum256(weights)
	hub.Files["/w.bin"] = weights
	const commit = "89abcdef0123456789abcdef0123456789abcdef"
	hub.Repos[datasrctest.RepoKey("model", "acme/tiny", commit)] = []datasrctest.File{
		{Path: "config.json", Content: []byte(`{"layers":2}`)},
		{Path: "model.safetensors", Content: []byte("tensor bytes"), LFS: true},
		{Path: "README.md", Content: []byte("not selected")},
	}

	dir := buildtest.DataDir(t)
	tokenFile := filepath.Join(t.TempDir(), "hf-token")
	if err := os.WriteFile(tokenFile, []byte(hub.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, nil, "--data-dir", dir, "--listen", "127.0.0.1:0", "--host-slots", "2",
		"--huggingface-endpoint", hub.URL, "--huggingface-token-file", tokenFile, "--huggingface-token-repos", "acme/*", "--data-source-allow-private")
	key := strings.TrimSpace(skiff(t, nil, "admin", "create-key", "--data-dir", dir, "--account", "e2e").stdout)
	skiff(t, nil, "admin", "grant-credit", "--data-dir", dir, "--account", "e2e", "--usd", "20")
	c := srv.client(t, key)

	push := func(name, sha string) {
		t.Helper()
		c.Post(t, "/api/v1/projects", map[string]any{"name": name}).Want(t, http.StatusCreated)
		manifest := fmt.Sprintf(`{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"},
			"entrypoint": {"command": ["/runner"]},
			"data_sources": [
				{"name": "weights", "source": "url", "uri": %q, "sha256": %q, "mount_path": "/data/w.bin"},
				{"name": "tiny", "source": "huggingface", "repo": "acme/tiny", "revision": %q, "include": ["*.json", "*.safetensors"], "mount_path": "/models/tiny"}],
			"cache_mounts": [{"name": "kernels", "path": "/cache/kernels", "seed": "seed"}]}`, hub.URL+"/w.bin", sha, commit)
		body := tarball(t, map[string]string{
			"Dockerfile":         "FROM scratch\nCOPY runner /runner\nWORKDIR /app\n",
			"skiff.project.json": manifest,
			"runner":             string(runner),
			"seed/prebuilt.txt":  "from the seed",
		})
		var rec struct {
			StatusURL string `json:"status_url"`
		}
		c.Do(t, apitest.Request{Method: http.MethodPost, Path: "/api/v1/projects/" + name + "/push", Body: body,
			Header: http.Header{"Content-Type": {"application/gzip"}}}).JSON(t, http.StatusAccepted, &rec)
		waitJSON(t, c, rec.StatusURL, 2*time.Minute, func(m map[string]any) bool { return m["status"] == "published" })
		c.Post(t, "/api/v1/projects/"+name+"/init", map[string]any{}).Want(t, http.StatusOK)
	}
	settled := func(m map[string]any) bool {
		return m["init_state"] == "ready" || m["init_state"] == "attention_required"
	}
	run := func(project string, p sandboxtest.Payload) (map[string]any, sandboxtest.Report) {
		t.Helper()
		job := c.Post(t, "/api/v1/jobs", map[string]any{"project": project, "runner_command": []string{"/runner"},
			"payload": json.RawMessage(p.Encode(t)), "requirements": map[string]any{"cpu": 1, "memory_mb": 256}}).
			Object(t, http.StatusCreated)
		id := job["id"].(string)
		done := waitJSON(t, c, "/api/v1/jobs/"+id, 3*time.Minute, jobEnded)
		task := c.Get(t, "/api/v1/jobs/"+id+"/tasks").Object(t, http.StatusOK)["tasks"].([]any)[0].(map[string]any)
		var r sandboxtest.Report
		if done["status"] == "completed" {
			b, _ := json.Marshal(task["result"])
			r = sandboxtest.DecodeReport(t, b)
		}
		return task, r
	}

	push("models", hex.EncodeToString(sum[:]))
	st := waitJSON(t, c, "/api/v1/projects/models/status", 2*time.Minute, settled)
	if st["init_state"] != "ready" || st["ready_for_jobs"] != true {
		t.Fatalf("after init: got %v, want ready with the data sources fetched", st)
	}
	if n := hub.Count("/w.bin"); n != 1 {
		t.Errorf("init fetched the url source %d times, want once", n)
	}

	task, r := run("models", sandboxtest.Payload{
		ReadFile: []string{"/data/w.bin", "/models/tiny/config.json", "/models/tiny/model.safetensors", "/models/tiny/README.md",
			"/cache/kernels/prebuilt.txt"},
		WriteFile: []string{"/data/w.bin", "/cache/kernels/built"},
	})
	if task["status"] != "succeeded" {
		t.Fatalf("task: %v", task)
	}
	if r.Reads["/data/w.bin"] != string(weights) || r.Reads["/models/tiny/config.json"] != `{"layers":2}` ||
		r.Reads["/models/tiny/model.safetensors"] != "tensor bytes" || !strings.HasPrefix(r.Reads["/models/tiny/README.md"], "error:") ||
		r.Reads["/cache/kernels/prebuilt.txt"] != "from the seed" {
		r.Reads["/data/w.bin"] = fmt.Sprintf("(%d bytes)", len(r.Reads["/data/w.bin"]))
		t.Errorf("reads: %v", r.Reads)
	}
	if r.WriteErrors["/data/w.bin"] == "" || r.WriteErrors["/cache/kernels/built"] != "" {
		t.Errorf("writes: %v, want the data source read-only and the cache mount writable", r.WriteErrors)
	}
	// The seeded file belongs to the runner: it can overwrite it.
	_, r = run("models", sandboxtest.Payload{WriteFile: []string{"/cache/kernels/prebuilt.txt"},
		ReadFile: []string{"/cache/kernels/built", "/cache/kernels/prebuilt.txt"}})
	if r.Reads["/cache/kernels/built"] != "x" || r.Reads["/cache/kernels/prebuilt.txt"] != "x" {
		t.Errorf("cache mount in the next task: %v", r.Reads)
	}
	if n := hub.Count("/w.bin"); n != 1 {
		t.Errorf("url source fetched %d times in all, want once for the host", n)
	}
	// invalidate wipes the cache mounts: the next task finds the seed alone.
	c.Post(t, "/api/v1/projects/models/invalidate", map[string]any{}).Want(t, http.StatusOK)
	_, r = run("models", sandboxtest.Payload{ReadFile: []string{"/cache/kernels/built", "/cache/kernels/prebuilt.txt"}})
	if !strings.HasPrefix(r.Reads["/cache/kernels/built"], "error:") || r.Reads["/cache/kernels/prebuilt.txt"] != "from the seed" {
		t.Errorf("after invalidate: %v, want the seed alone", r.Reads)
	}

	wrong := strings.Repeat("0", 64)
	push("broken", wrong)
	st = waitJSON(t, c, "/api/v1/projects/broken/status", 2*time.Minute, settled)
	issue, _ := st["latest_issue"].(string)
	if st["init_state"] != "attention_required" || !strings.Contains(issue, `data source "weights"`) || !strings.Contains(issue, wrong) {
		t.Errorf("broken project: got %v, want attention_required naming the source and its sha256", st)
	}
	task, _ = run("broken", sandboxtest.Payload{})
	errText, _ := task["error"].(string)
	if task["status"] != "failed" || !strings.Contains(errText, `data source "weights"`) {
		t.Errorf("broken task: got status %v error %q, want failed naming the source", task["status"], errText)
	}
	for _, a := range task["attempts"].([]any) {
		if cost := a.(map[string]any)["cost_usd"]; cost != float64(0) {
			t.Errorf("attempt of the broken task cost %v, want 0 (the fetch is not billed)", cost)
		}
	}

	if strings.Contains(srv.logText(), hub.Token) {
		t.Errorf("the server log shows the hub token")
	}
	hub.Mu.Lock()
	sent := false
	for _, a := range hub.AuthSeen {
		sent = sent || a == "Bearer "+hub.Token
	}
	hub.Mu.Unlock()
	if !sent {
		t.Errorf("the hub never received the token")
	}
	if code := srv.stop(t, 30*time.Second); code != 0 {
		t.Errorf("exit: %d", code)
	}
}
