package e2e_test

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/build/buildtest"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
	"github.com/skiffhq/skiff/internal/testproc"
)

// startHost starts `skiff host` with args; it stops when the test ends.
// The server type reads its JSON log like the server's.
func startHost(t *testing.T, args ...string) *server {
	t.Helper()
	return startHostCmd(t, skiffCmd(t, nil, append([]string{"host"}, args...)...), args)
}

// startHostCmd starts cmd, a `skiff host` command (perhaps wrapped, as in
// another network namespace), as startHost does.
func startHostCmd(t *testing.T, cmd *exec.Cmd, args []string) *server {
	t.Helper()
	h := &server{Proc: testproc.Start(t, cmd)}
	h.waitLog(t, "host started", 30*time.Second)
	return h
}

// codeFile writes an enrollment code to a fresh 0600 file, as a host's
// owner does (the code never goes on a command line), and returns its path.
func codeFile(t *testing.T, code string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "code")
	if err := os.WriteFile(p, []byte(code+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// pushRunner creates project name whose image is the sandbox test runner
// and waits until its push is published.
func pushRunner(t *testing.T, c *apitest.Client, name string, runner []byte) {
	t.Helper()
	c.Post(t, "/api/v1/projects", map[string]any{"name": name}).Want(t, http.StatusCreated)
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
	waitJSON(t, c, rec.StatusURL, 2*time.Minute, func(m map[string]any) bool { return m["status"] == "published" })
}

// Real processes on one machine: a controller without a local host and two
// `skiff host` processes (separate data dirs) that enrolled with codes. A
// fan-out spreads over both; kill -9 of a host mid-task requeues its
// attempt on the other, unbilled; a restarted host needs no code and comes
// back as the same host; a removed host's credential stops working.
func TestHostsEndToEnd(t *testing.T) {
	runner := realRunner(t)
	dir := buildtest.DataDir(t)
	srv := startServer(t, nil, "--data-dir", dir, "--listen", "127.0.0.1:0", "--no-local-host")
	admin := func(args ...string) string { return runAdmin(t, []string{"--data-dir", dir}, args...) }
	key := admin("create-key", "--account", "e2e")
	admin("grant-credit", "--account", "e2e", "--usd", "20")

	hostArgs := func(hostDir string) []string {
		return []string{"--controller", srv.URL, "--data-dir", hostDir, "--cpus", "2", "--memory-gb", "2", "--slots", "2", "--lease-wait", "5s"}
	}
	dirA, dirB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	procs := map[string]*server{
		"a": startHost(t, append(hostArgs(dirA), "--code-file", codeFile(t, admin("create-enrollment", "--name", "a")))...),
		"b": startHost(t, append(hostArgs(dirB), "--code-file", codeFile(t, admin("create-enrollment", "--name", "b")))...),
	}
	dirs := map[string]string{"a": dirA, "b": dirB}
	fi, err := os.Stat(filepath.Join(dirA, "host-credential.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("credential file: %v, %v; want mode 0600", fi, err)
	}

	c := srv.client(t, key)
	pushRunner(t, c, "e2e", runner)

	// A fan-out of 8 tasks of 1 CPU that each sleep: two hosts of 2 CPUs
	// run 4 at a time, so both take part.
	items := make([]json.RawMessage, 8)
	for i := range items {
		items[i] = sandboxtest.Payload{SleepMS: 1500, Stdout: "x"}.Encode(t)
	}
	job := c.Post(t, "/api/v1/jobs", map[string]any{"project": "e2e", "runner_command": []string{"/runner"},
		"fan_out": map[string]any{"items": items}, "requirements": map[string]any{"cpu": 1, "memory_mb": 256}}).
		Object(t, http.StatusCreated)
	jid := job["id"].(string)
	if got := waitJSON(t, c, "/api/v1/jobs/"+jid, 3*time.Minute, jobEnded); got["status"] != "completed" {
		t.Fatalf("fan-out: %v", got)
	}
	workers := map[string]int{}
	for _, tk := range c.Get(t, "/api/v1/jobs/"+jid+"/tasks?limit=100").Object(t, http.StatusOK)["tasks"].([]any) {
		for _, a := range tk.(map[string]any)["attempts"].([]any) {
			workers[a.(map[string]any)["worker_handle"].(string)]++
		}
	}
	if len(workers) != 2 {
		t.Errorf("fan-out ran on %v, want both hosts", workers)
	}
	// Enrolled hosts share no filesystem with the controller as far as it
	// knows: each fetched the image over the host protocol, checked it and
	// unpacked it once.
	for name, p := range procs {
		if n := strings.Count(p.logText(), `"msg":"image fetched from the controller"`); n != 1 {
			t.Errorf("host %s fetched the image %d times, want once", name, n)
		}
	}

	// kill -9 the host that runs a task: lost, requeued on the other,
	// unbilled.
	hosts := admin("hosts", "--json")
	names := map[string]string{} // host id -> name
	for _, line := range strings.Split(hosts, "\n") {
		var v map[string]any
		_ = json.Unmarshal([]byte(line), &v)
		id, _ := v["id"].(string)
		name, _ := v["name"].(string)
		names[id] = name
	}
	if len(names) != 2 {
		t.Fatalf("admin hosts --json: %s", hosts)
	}
	long := c.Post(t, "/api/v1/jobs", map[string]any{"project": "e2e", "runner_command": []string{"/runner"},
		"payload":      json.RawMessage(sandboxtest.Payload{SleepMS: 60000, Stdout: "long"}.Encode(t)),
		"requirements": map[string]any{"cpu": 2, "memory_mb": 256}}).Object(t, http.StatusCreated)["id"].(string)
	var idA string
	waitJSON(t, c, "/api/v1/jobs/"+long+"/tasks", time.Minute, func(m map[string]any) bool {
		ts := m["tasks"].([]any)
		if len(ts) != 1 || ts[0].(map[string]any)["status"] != "running" {
			return false
		}
		atts := ts[0].(map[string]any)["attempts"].([]any)
		idA = atts[len(atts)-1].(map[string]any)["worker_handle"].(string)
		return true
	})
	victimName := names[idA]
	victim := procs[victimName]
	if victim == nil {
		t.Fatalf("the task runs on %s, which is not an enrolled host %v", idA, names)
	}
	dirA = dirs[victimName]
	if err := victim.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	victim.wait(t, 10*time.Second)
	waitJSON(t, c, "/api/v1/jobs/"+long+"/tasks", 2*time.Minute, func(m map[string]any) bool {
		atts := m["tasks"].([]any)[0].(map[string]any)["attempts"].([]any)
		return len(atts) == 2 && atts[0].(map[string]any)["status"] == "lost" && atts[1].(map[string]any)["worker_handle"] != idA
	})
	// Cancel the 60-second task: what matters is where it went and that
	// the lost attempt costs nothing.
	c.Put(t, "/api/v1/jobs/"+long+"/cancel", map[string]any{}).Want(t, http.StatusOK)
	atts := c.Get(t, "/api/v1/jobs/"+long+"/tasks").Object(t, http.StatusOK)["tasks"].([]any)[0].(map[string]any)["attempts"].([]any)
	lost := atts[0].(map[string]any)
	if cost, _ := json.Marshal(lost["cost_usd"]); lost["billed_seconds"] != 0.0 || strings.Trim(string(cost), `"0.`) != "" {
		t.Errorf("the lost attempt: billed %v s, cost %s; want nothing", lost["billed_seconds"], cost)
	}

	// Host A restarts without a code: the same host, its leftovers reaped.
	startHost(t, hostArgs(dirA)...)
	waitJSON(t, srv.client(t, admin("create-key", "--account", "ops", "--role", "admin")), "/api/v1/admin/hosts/"+idA, time.Minute,
		func(m map[string]any) bool { return m["state"] == "active" && m["last_seen_at"] != nil })

	// Removed: the credential stops working at once.
	if got := admin("remove-host", idA); got != "removed" {
		t.Fatalf("remove-host: %q", got)
	}
	cred, _ := os.ReadFile(filepath.Join(dirA, "host-credential.json"))
	var id struct{ Credential string }
	_ = json.Unmarshal(cred, &id)
	req, _ := http.NewRequest("POST", srv.URL+"/agent/v1/lease", strings.NewReader(`{"host_id":"`+idA+`"}`))
	req.Header.Set("Authorization", "Bearer "+id.Credential)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("lease with a removed host's credential: %d, want 401", resp.StatusCode)
	}
	// Nor does it fetch images: the credential is refused before the
	// attempt is looked at (the public API does not show attempt ids).
	req, _ = http.NewRequest("GET", srv.URL+"/agent/v1/attempts/att_any/image", nil)
	req.Header.Set("Authorization", "Bearer "+id.Credential)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("image with a removed host's credential: %d, want 401", resp.StatusCode)
	}
}
