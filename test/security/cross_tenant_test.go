package security_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/agent/datasrc/datasrctest"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
)

// crossTenantReader prints every input and every file under /data: what
// the task was handed.
const crossTenantReader = `package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

func main() {
	for _, root := range []string{"/run/skiff/payload/inputs", "/data"} {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				b, _ := os.ReadFile(p)
				fmt.Printf("%s: %s\n", p, b)
			}
			return nil
		})
	}
}
`

// crossTenantPush pushes a project whose runner is crossTenantReader, with
// the manifest's extra fields (data sources) merged in.
func crossTenantPush(t *testing.T, c *apitest.Client, name string, runner []byte, extra string) {
	t.Helper()
	m := `{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/"}, "entrypoint": {"command": ["/runner"]}` + extra + `}`
	rec := push(t, c, name, map[string]file{
		"Dockerfile":         {Body: []byte("FROM scratch\nCOPY runner /runner\n")},
		"runner":             {Body: runner, Mode: 0o755},
		"skiff.project.json": {Body: []byte(m)},
	}, 3*time.Minute)
	if rec["status"] != "published" {
		t.Fatalf("push %s: %v", name, rec)
	}
}

// crossTenantRun submits one task of project with payload and returns the
// task as the owner sees it once the job has ended.
func crossTenantRun(t *testing.T, c *apitest.Client, project string, payload map[string]any) map[string]any {
	t.Helper()
	jid := c.Post(t, "/api/v1/jobs", map[string]any{"project": project, "runner_command": []string{"/runner"}, "payload": payload}).
		Object(t, http.StatusCreated)["id"].(string)
	waitFor(t, c, "/api/v1/jobs/"+jid, 4*time.Minute, func(m map[string]any) bool {
		s, _ := m["status"].(string)
		return s == "completed" || s == "failed" || s == "cancelled"
	})
	tasks := c.Get(t, "/api/v1/jobs/"+jid+"/tasks").Object(t, http.StatusOK)["tasks"].([]any)
	return tasks[0].(map[string]any)
}

// Tenant A runs a task on an input only A holds; tenant B registers an
// external artifact on a URL of its own that claims A's sha256 and runs a
// task on it on the same host. B must not be handed A's bytes from the
// host's cache: B's input is really downloaded (B's server is asked) and
// checked, and what B's server serves is not A's content.
func TestCrossTenantInputDigest(t *testing.T) {
	engines(t, func(t *testing.T, engine string) {
		var asked atomic.Int64
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			asked.Add(1)
			_, _ = w.Write([]byte("not the bytes B claims"))
		}))
		t.Cleanup(other.Close)

		s := startServer(t, engine, "--artifact-external-allow-private")
		runner := program(t, crossTenantReader)
		a, b := s.account(t, "tenant-a", "5"), s.account(t, "tenant-b", "5")
		crossTenantPush(t, a, "reader-a", runner, "")
		crossTenantPush(t, b, "reader-b", runner, "")

		secret := []byte("tenant A's private dataset 3f1c")
		sum := sha256.Sum256(secret)
		digest := hex.EncodeToString(sum[:])
		var art struct {
			ID string `json:"id"`
		}
		a.Do(t, apitest.Request{Method: http.MethodPost, Path: "/api/v1/artifacts", Body: secret,
			Header: http.Header{"X-Artifact-Filename": {"data.txt"}}}).JSON(t, http.StatusCreated, &art)
		taskA := crossTenantRun(t, a, "reader-a", map[string]any{"_artifacts": map[string]any{"download": []string{art.ID}}})
		if out, _ := taskA["output"].(string); !strings.Contains(out, string(secret)) {
			t.Fatalf("A's own task did not read its input: %v", taskA)
		}

		var ext struct {
			ID string `json:"id"`
		}
		b.Post(t, "/api/v1/artifacts/external", map[string]any{"filename": "data.txt", "url": other.URL + "/data.txt", "sha256": digest}).
			JSON(t, http.StatusCreated, &ext)
		taskB := crossTenantRun(t, b, "reader-b", map[string]any{"_artifacts": map[string]any{"download": []string{ext.ID}}})
		raw, _ := json.Marshal(taskB)
		if bytes.Contains(raw, secret) {
			t.Fatalf("tenant B was handed tenant A's bytes by naming their sha256:\n%s", raw)
		}
		if asked.Load() == 0 {
			t.Errorf("B's URL was never fetched: B's input was not really downloaded (task %s)", raw)
		}
		if taskB["status"] == "completed" {
			t.Errorf("B's task completed on an input whose bytes do not match its sha256: %s", raw)
		}
	})
}

// The operator's hub token fetches only the repos on the operator's list
// (--huggingface-token-repos): a tenant naming a private repo off the
// list gets no token sent on its behalf and not the repo's files.
func TestCrossTenantHubToken(t *testing.T) {
	engines(t, func(t *testing.T, engine string) {
		hub := datasrctest.Start(t)
		const commit = "0123456789abcdef0123456789abcdef01234567"
		secret := "weights of someone's private model 77aa"
		hub.Mu.Lock()
		hub.Token = "hf_operator_secret"
		hub.Repos[datasrctest.RepoKey("model", "victim/private", commit)] = []datasrctest.File{{Path: "weights.txt", Content: []byte(secret)}}
		hub.Mu.Unlock()
		tokenFile := filepath.Join(t.TempDir(), "hf-token")
		if err := os.WriteFile(tokenFile, []byte("hf_operator_secret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		s := startServer(t, engine, "--huggingface-endpoint", hub.URL, "--huggingface-token-file", tokenFile,
			"--huggingface-token-repos", "operator/*", "--data-source-allow-private")
		c := s.account(t, "tenant-h", "5")
		crossTenantPush(t, c, "hub-reader", program(t, crossTenantReader),
			`, "data_sources": [{"name": "m", "source": "huggingface", "repo": "victim/private", "revision": "`+commit+`", "mount_path": "/data/m"}]`)
		task := crossTenantRun(t, c, "hub-reader", map[string]any{})
		raw, _ := json.Marshal(task)
		if strings.Contains(string(raw), secret) {
			t.Fatalf("a repo off the operator's list was fetched with the operator's token:\n%s", raw)
		}
		hub.Mu.Lock()
		seen := slices.Clone(hub.AuthSeen)
		hub.Mu.Unlock()
		if slices.Contains(seen, "Bearer hf_operator_secret") {
			t.Errorf("the hub received the operator's token for victim/private")
		}
	})
}
