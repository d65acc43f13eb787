package e2e_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/build/buildtest"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
	"github.com/skiffhq/skiff/internal/testproc"
)

// runInstaller runs what a machine's owner runs, `curl -fsSL
// URL/skiff-host | sh -s -- args`, as two processes joined by a pipe. With
// --foreground the shell becomes `skiff host` (exec), so the returned
// process is the host: its JSON log is read like a server's, and it is
// stopped when the test ends.
func runInstaller(t *testing.T, url string, args ...string) *server {
	t.Helper()
	curl := exec.Command("curl", "-fsSL", url+"/skiff-host")
	sh := exec.Command("sh", append([]string{"-s", "--"}, args...)...)
	// The binary the controller serves is this test binary, which acts as
	// skiff with the environment skiffCmd gives it.
	sh.Env = skiffCmd(t, nil).Env
	pipe, err := curl.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	sh.Stdin = pipe
	if err := curl.Start(); err != nil {
		t.Fatalf("start curl: %v", err)
	}
	h := &server{Proc: testproc.Start(t, sh)}
	if err := curl.Wait(); err != nil {
		t.Fatalf("curl %s/skiff-host: %v", url, err)
	}
	h.waitLog(t, "host started", time.Minute)
	return h
}

// The installer served at GET /skiff-host, run for real against a local
// controller into a temporary prefix (no root paths, no systemd): it
// installs the controller's own skiff binary and runsc, checked by sha256,
// writes the unit, and the host it starts enrolls with the code and runs a
// task in gVisor. Run again without a code, it upgrades in place and the
// same host comes back: one host, no new enrollment.
func TestHostInstallerEndToEnd(t *testing.T) {
	runsc := buildtest.RequireTools(t)
	runner, err := os.ReadFile(sandboxtest.BuildRunner(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := buildtest.DataDir(t)
	srv := startServer(t, nil, "--data-dir", dir, "--listen", "127.0.0.1:0", "--no-local-host")
	admin := func(args ...string) string { return runAdmin(t, []string{"--data-dir", dir}, args...) }
	key := admin("create-key", "--account", "inst")
	admin("grant-credit", "--account", "inst", "--usd", "5")
	code := admin("create-enrollment", "--name", "garage")

	// Short, as runsc's sockets under the host's data dir must be.
	prefix := buildtest.DataDir(t)
	codeFile := filepath.Join(t.TempDir(), "code")
	if err := os.WriteFile(codeFile, []byte(code+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	host := runInstaller(t, srv.URL, "--code-file", codeFile, "--cpus", "1", "--memory-gb", "1", "--image-cache-gb", "5", "--prefix", prefix, "--foreground")

	// What it installed: the controller's binaries, byte for byte, and a
	// unit that starts the host with the owner's share.
	self, _ := os.ReadFile(os.Args[0])
	installed, err := os.ReadFile(filepath.Join(prefix, "bin", "skiff"))
	if err != nil || !bytes.Equal(installed, self) {
		t.Fatalf("installed skiff: %d bytes, %v; want the controller's own binary (%d bytes)", len(installed), err, len(self))
	}
	runscSum := func(path string) [32]byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return sha256.Sum256(b)
	}
	if runscSum(filepath.Join(prefix, "lib", "skiff", "runsc")) != runscSum(runsc) {
		t.Errorf("installed runsc is not the controller's")
	}
	dataDir := filepath.Join(prefix, "var", "lib", "skiff-host")
	unit, err := os.ReadFile(filepath.Join(prefix, "etc", "systemd", "system", "skiff-host.service"))
	wantExec := "ExecStart=" + filepath.Join(prefix, "bin", "skiff") + " host --controller " + srv.URL + " --data-dir " + dataDir +
		" --runsc " + filepath.Join(prefix, "lib", "skiff", "runsc") + " --cpus 1 --memory-gb 1 --image-cache-gb 5 --code-file " + filepath.Join(dataDir, "enrollment-code") + "\n"
	if err != nil || !strings.Contains(string(unit), wantExec) {
		t.Fatalf("unit %v:\n%s\nwant the line %q", err, unit, wantExec)
	}
	if fi, err := os.Stat(filepath.Join(dataDir, "host-credential.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("credential file: %v, %v; want mode 0600", fi, err)
	}
	if strings.Contains(string(unit), code) {
		t.Errorf("the unit holds the code:\n%s", unit)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "enrollment-code")); err == nil {
		t.Errorf("the code file is still there after the code was redeemed")
	}

	c := srv.client(t, key)
	pushRunner(t, c, "inst", runner)
	hostID := runOneTask(t, c, "first")
	hosts := admin("hosts", "--json")
	if n := strings.Count(hosts, `"id":`); n != 1 || !strings.Contains(hosts, `"id":"`+hostID+`"`) || !strings.Contains(hosts, `"name":"garage"`) {
		t.Fatalf("admin hosts after the task on %s:\n%s", hostID, hosts)
	}

	// Again, as an upgrade would: no code this time. The same host.
	host.stop(t, 30*time.Second)
	runInstaller(t, srv.URL, "--cpus", "1", "--memory-gb", "1", "--prefix", prefix, "--foreground")
	unit, _ = os.ReadFile(filepath.Join(prefix, "etc", "systemd", "system", "skiff-host.service"))
	if strings.Contains(string(unit), "--code") {
		t.Errorf("the rewritten unit still passes the used code:\n%s", unit)
	}
	if again := runOneTask(t, c, "second"); again != hostID {
		t.Errorf("after reinstalling, the task ran on %s, want the same host %s", again, hostID)
	}
	if hosts := admin("hosts", "--json"); strings.Count(hosts, `"id":`) != 1 {
		t.Errorf("reinstalling made another host:\n%s", hosts)
	}
}

// runOneTask runs a task that prints out and returns the worker handle of
// the attempt that ran it, checking that the attempt shows a measured
// single-core score.
func runOneTask(t *testing.T, c *apitest.Client, out string) string {
	t.Helper()
	jid := c.Post(t, "/api/v1/jobs", map[string]any{"project": "inst", "runner_command": []string{"/runner"},
		"payload":      json.RawMessage(sandboxtest.Payload{Stdout: out}.Encode(t)),
		"requirements": map[string]any{"cpu": 1, "memory_mb": 256}}).Object(t, http.StatusCreated)["id"].(string)
	if got := waitJSON(t, c, "/api/v1/jobs/"+jid, 2*time.Minute, jobEnded); got["status"] != "completed" {
		t.Fatalf("job %s: %v", out, got)
	}
	task := c.Get(t, "/api/v1/jobs/"+jid+"/tasks").Object(t, http.StatusOK)["tasks"].([]any)[0].(map[string]any)
	atts := task["attempts"].([]any)
	att := atts[len(atts)-1].(map[string]any)
	if score, _ := att["resource_profile"].(map[string]any)["single_core_score"].(float64); !(score > 0) {
		t.Errorf("the attempt's resource_profile %v has no measured single_core_score", att["resource_profile"])
	}
	return att["worker_handle"].(string)
}
