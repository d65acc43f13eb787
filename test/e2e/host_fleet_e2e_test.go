package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/build/buildtest"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
	"github.com/skiffhq/skiff/internal/store/postgres/pgtest"
)

// fleet is a controller without a local host, on its own data dir, and
// the enrolled `skiff host` processes the test started.
type fleet struct {
	t   *testing.T
	dir string
	// store is --data-dir, and --database-url on PostgreSQL: what the
	// server and the admin commands are given.
	store      []string
	serverArgs []string
	srv        *server
	c          *apitest.Client
	hosts      map[string]*server // by host id
}

// newFleet starts a controller on engine (sqlite or postgres), a funded
// account with the runner pushed as project "fleet", and one enrolled host
// per name, each lending 2 CPUs in 2 slots. It returns the host ids in
// the order of names.
func newFleet(t *testing.T, engine string, names ...string) (*fleet, []string) {
	t.Helper()
	return newFleetAt(t, engine, "127.0.0.1", nil, names...)
}

// newFleetAt is newFleet with the controller listening on ip, started
// with serverArgs too.
func newFleetAt(t *testing.T, engine, ip string, serverArgs []string, names ...string) (*fleet, []string) {
	t.Helper()
	buildtest.RequireTools(t)
	f := &fleet{t: t, dir: buildtest.DataDir(t), hosts: map[string]*server{}, serverArgs: serverArgs}
	f.store = []string{"--data-dir", f.dir}
	if engine == "postgres" {
		f.store = append(f.store, "--database-url", pgtest.NewDatabase(t))
	}
	runner, err := os.ReadFile(sandboxtest.BuildRunner(t))
	if err != nil {
		t.Fatal(err)
	}
	f.srv = f.startServer(ip + ":0")
	key := f.admin("create-key", "--account", "fleet")
	f.admin("grant-credit", "--account", "fleet", "--usd", "20")
	var ids []string
	for _, name := range names {
		ids = append(ids, f.addHost(name, ""))
	}
	f.c = f.srv.client(t, key)
	pushRunner(t, f.c, "fleet", runner)
	return f, ids
}

// addHost enrolls and starts a host named name, in network namespace netns
// unless that is "", and returns its id.
func (f *fleet) addHost(name, netns string) string {
	f.t.Helper()
	hostDir := filepath.Join(f.t.TempDir(), name)
	args := []string{"--controller", f.srv.URL, "--data-dir", hostDir, "--cpus", "2", "--memory-gb", "2",
		"--slots", "2", "--lease-wait", "2s", "--code-file", codeFile(f.t, f.admin("create-enrollment", "--name", name))}
	if !strings.Contains(f.srv.URL, "://127.0.0.1:") {
		// A controller in another network namespace is off loopback:
		// plain http only because this test network is the machine's own.
		args = append(args, "--insecure-http")
	}
	cmd := skiffCmd(f.t, nil, append([]string{"host"}, args...)...)
	if netns != "" {
		// nsenter joins the network namespace only; `ip netns exec` would
		// also mount a fresh /sys, hiding the cgroup file system runsc needs.
		nsenter, err := exec.LookPath("nsenter")
		if err != nil {
			f.t.Fatal(err)
		}
		cmd.Args = append([]string{"nsenter", "--net=/run/netns/" + netns, cmd.Path}, cmd.Args[1:]...)
		cmd.Path = nsenter
	}
	h := startHostCmd(f.t, cmd, args)
	var id struct {
		HostID string `json:"host_id"`
	}
	b, err := os.ReadFile(filepath.Join(hostDir, "host-credential.json"))
	if err != nil || json.Unmarshal(b, &id) != nil || id.HostID == "" {
		f.t.Fatalf("host %s kept no identity: %s, %v", name, b, err)
	}
	f.hosts[id.HostID] = h
	return id.HostID
}

// startServer starts the controller on its store, listening on addr.
func (f *fleet) startServer(addr string) *server {
	f.t.Helper()
	args := append(append([]string{}, f.store...), "--listen", addr, "--no-local-host")
	return startServer(f.t, nil, append(args, f.serverArgs...)...)
}

func (f *fleet) admin(args ...string) string {
	f.t.Helper()
	return runAdmin(f.t, f.store, args...)
}

// submit submits a job of the runner: a fan-out of sleepMS-long tasks
// printing out-<index>, of 1 CPU each.
func (f *fleet) submit(n, sleepMS int, out string) string {
	f.t.Helper()
	items := make([]json.RawMessage, n)
	for i := range items {
		items[i] = sandboxtest.Payload{SleepMS: sleepMS, Stdout: fmt.Sprintf("%s-%d", out, i)}.Encode(f.t)
	}
	return f.c.Post(f.t, "/api/v1/jobs", map[string]any{"project": "fleet", "runner_command": []string{"/runner"},
		"fan_out": map[string]any{"items": items}, "requirements": map[string]any{"cpu": 1, "memory_mb": 256}}).
		Object(f.t, http.StatusCreated)["id"].(string)
}

func (f *fleet) tasks(jobID string) []apiv1.Task {
	f.t.Helper()
	var tl apiv1.TaskList
	f.c.Get(f.t, "/api/v1/jobs/"+jobID+"/tasks").JSON(f.t, http.StatusOK, &tl)
	return tl.Tasks
}

// waitRunning waits until at least n of the job's tasks run.
func (f *fleet) waitRunning(jobID string, n int) {
	f.t.Helper()
	waitJSON(f.t, f.c, "/api/v1/jobs/"+jobID+"/tasks", 2*time.Minute, func(m map[string]any) bool {
		running := 0
		for _, tk := range m["tasks"].([]any) {
			if tk.(map[string]any)["status"] == "running" {
				running++
			}
		}
		return running >= n
	})
}

// waitCompleted waits until the job ends and fails unless it completed.
func (f *fleet) waitCompleted(jobID string) {
	f.t.Helper()
	if got := waitJSON(f.t, f.c, "/api/v1/jobs/"+jobID, 3*time.Minute, jobEnded); got["status"] != "completed" {
		f.t.Fatalf("job %s ended %v, want completed", jobID, got)
	}
}

// checkOnceEach checks what a user sees of a completed job whose attempts
// may have been disturbed: each task succeeded exactly once with its own
// output, every other attempt was lost and billed nothing, and the job
// was charged once, exactly what its attempts were metered. It returns
// the hosts (worker handles) each task's successful attempt ran on.
func (f *fleet) checkOnceEach(jobID, out string) []string {
	f.t.Helper()
	var ran []string
	var metered apiv1.USD
	attempts, lost := 0, 0
	defer func() { f.t.Logf("job %s: %d attempts, %d of them lost", jobID, attempts, lost) }()
	for _, tk := range f.tasks(jobID) {
		succeeded := 0
		for _, a := range tk.Attempts {
			attempts++
			metered += a.CostUSD
			switch a.Status {
			case "succeeded":
				succeeded++
				ran = append(ran, a.WorkerHandle)
			case "lost":
				lost++
				if a.BilledSeconds != 0 || a.CostUSD != 0 {
					f.t.Errorf("task %d: a lost attempt was billed %d s, %s", tk.Index, a.BilledSeconds, a.CostUSD)
				}
			default:
				f.t.Errorf("task %d: attempt %d is %s", tk.Index, a.AttemptNumber, a.Status)
			}
		}
		if want := fmt.Sprintf("%s-%d", out, tk.Index); succeeded != 1 || strings.TrimSpace(tk.Output) != want {
			f.t.Errorf("task %d: %d successful attempts, output %q; want one, %q", tk.Index, succeeded, tk.Output, want)
		}
	}
	var ledger apiv1.LedgerPage
	f.c.Get(f.t, "/api/v1/account/ledger?entry_type=job_charge&limit=200").JSON(f.t, http.StatusOK, &ledger)
	var charges []apiv1.USD
	for _, e := range ledger.Entries {
		if e.Reference == jobID {
			charges = append(charges, e.AmountUSD)
		}
	}
	if len(charges) != 1 || charges[0] != -metered {
		f.t.Errorf("job %s was charged %v; want once, -%s (its attempts' metered cost)", jobID, charges, metered)
	}
	return ran
}

// Real processes: a controller and two enrolled hosts. The controller is
// killed (kill -9) while the hosts run a fan-out and started again on the
// same address: the hosts reconnect on their own, register again, and the
// job finishes with each task's result once and nothing billed twice.
// Then an operator drains the host that runs a long task: that task
// finishes there, and the host takes nothing new while the other host runs
// the next job.
func TestHostsControllerRestartAndDrain(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) { testHostsControllerRestartAndDrain(t, engine) })
	}
}

func testHostsControllerRestartAndDrain(t *testing.T, engine string) {
	f, ids := newFleet(t, engine, "a", "b")

	// Four run at once on the two hosts, two wait queued.
	fan := f.submit(6, 4000, "r")
	f.waitRunning(fan, 2)
	addr := strings.TrimPrefix(f.srv.URL, "http://")
	if err := f.srv.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	f.srv.wait(t, 10*time.Second)
	f.srv = f.startServer(addr)
	f.waitCompleted(fan)
	f.checkOnceEach(fan, "r")
	for _, id := range ids {
		if !f.srv.logged("host registered", "host_id", id) {
			t.Errorf("host %s did not register with the restarted controller", id)
		}
	}

	// Drain the host that runs a long task.
	long := f.submit(1, 5000, "long")
	f.waitRunning(long, 1)
	atts := f.tasks(long)[0].Attempts
	drained := atts[len(atts)-1].WorkerHandle
	if f.hosts[drained] == nil {
		t.Fatalf("the long task runs on %s, not one of the hosts %v", drained, ids)
	}
	if got := f.admin("drain-host", drained); got != "draining" {
		t.Fatalf("drain-host: %q", got)
	}
	// The drained host has a slot and a CPU free: only the drain keeps
	// these from it.
	next := f.submit(4, 300, "next")
	f.waitCompleted(next)
	for _, w := range f.checkOnceEach(next, "next") {
		if w == drained {
			t.Errorf("the drained host %s ran a task of the job submitted after the drain", drained)
		}
	}
	f.waitCompleted(long)
	if ran := f.checkOnceEach(long, "long"); len(ran) != 1 || ran[0] != drained {
		t.Errorf("the long task succeeded on %v, want on the drained host %s where it ran", ran, drained)
	}
	var view struct {
		ID              string `json:"id"`
		State           string `json:"state"`
		RunningAttempts int    `json:"running_attempts"`
	}
	for _, line := range strings.Split(f.admin("hosts", "--json"), "\n") {
		if err := json.Unmarshal([]byte(line), &view); err == nil && view.ID == drained {
			break
		}
	}
	if view.ID != drained || view.State != "draining" || view.RunningAttempts != 0 {
		t.Errorf("admin hosts shows the drained host as %+v, want draining with nothing running", view)
	}
}

// logged reports whether the process logged msg with key equal to val.
func (s *server) logged(msg, key, val string) bool {
	return s.Find(func(l map[string]any) bool { return l["msg"] == msg && l[key] == val }) != nil
}

// waitLogged waits until the process logs msg with key equal to val.
func (s *server) waitLogged(t *testing.T, msg, key, val string, timeout time.Duration) {
	t.Helper()
	s.WaitMatch(t, fmt.Sprintf("%s with %s %s", msg, key, val), func(l map[string]any) bool { return l["msg"] == msg && l[key] == val }, timeout)
}
