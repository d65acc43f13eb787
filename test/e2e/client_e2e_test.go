package e2e_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/client"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/testenv"
)

// clientEnv is a server (on one engine), an account with credit and a
// published project "p", and the environment a user's shell would have.
type clientEnv struct {
	e    *apitest.Env
	acct *apitest.Account
	c    *client.Client
	env  []string // XDG_CONFIG_HOME and SKIFF_URL
	cfg  string   // the config file
}

func newClientEnv(t *testing.T, eng apitest.Engine) *clientEnv {
	t.Helper()
	e := apitest.Start(t, apitest.Options{Store: eng.Open(t)})
	a := e.FundedAccount(t, "acme", "p", 10_000_000)
	c := client.New(e.URL, a.Member)
	home := t.TempDir()
	return &clientEnv{e: e, acct: a, c: c, env: []string{"XDG_CONFIG_HOME=" + home, "SKIFF_URL=" + e.URL},
		cfg: filepath.Join(home, "skiff", "config.json")}
}

// run runs skiff with the user's environment plus extra.
func (ce *clientEnv) run(t *testing.T, extra []string, args ...string) result {
	t.Helper()
	return skiff(t, append(append([]string{}, ce.env...), extra...), args...)
}

// want fails t unless the command exited with code and its stdout has
// every one of wants.
func (r result) want(t *testing.T, code int, wants ...string) result {
	t.Helper()
	if r.code != code {
		t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	for _, w := range wants {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("stdout lacks %q:\n%s\nstderr: %s", w, r.stdout, r.stderr)
		}
	}
	return r
}

func forEngines(t *testing.T, fn func(t *testing.T, eng apitest.Engine)) {
	t.Parallel()
	for _, eng := range apitest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			t.Parallel()
			if eng.Skip != "" {
				testenv.Skip(t, eng.Skip)
			}
			fn(t, eng)
		})
	}
}

// TestClientCommands runs every client command as a user would, against a
// real server: login saves a 0600 config, each command's text and JSON,
// and the documented exit codes.
func TestClientCommands(t *testing.T) {
	forEngines(t, func(t *testing.T, eng apitest.Engine) {
		ce := newClientEnv(t, eng)
		ctx := t.Context()

		// Not logged in: exit 3 and what to do.
		r := ce.run(t, nil, "whoami").want(t, 3)
		if !strings.Contains(r.stderr, "skiff login") {
			t.Errorf("whoami before login: %q", r.stderr)
		}
		ce.run(t, nil, "login", "--token", "flk_wrong").want(t, 3)
		ce.run(t, nil, "login", "--token", ce.acct.Member).want(t, 0, "Logged in to "+ce.e.URL+" as acme")
		st, err := os.Stat(ce.cfg)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("config: %v %v, want mode 0600", st, err)
		}
		var cfg map[string]any
		b, _ := os.ReadFile(ce.cfg)
		if json.Unmarshal(b, &cfg) != nil || cfg["token"] != ce.acct.Member || cfg["url"] != ce.e.URL {
			t.Errorf("config: %s", b)
		}
		// The saved login works without SKIFF_URL; SKIFF_TOKEN overrides it.
		skiff(t, []string{"XDG_CONFIG_HOME=" + filepath.Dir(filepath.Dir(ce.cfg))}, "whoami").want(t, 0, "acme on "+ce.e.URL)
		ce.run(t, []string{"SKIFF_TOKEN=" + ce.acct.Viewer}, "whoami").want(t, 0, "role viewer")
		var who struct {
			Account apiv1.Account `json:"account"`
			Balance apiv1.Balance `json:"balance"`
		}
		decode(t, ce.run(t, nil, "whoami", "--json").want(t, 0).stdout, &who)
		if who.Account.ID != ce.acct.ID || who.Balance.AvailableUSD != 10_000_000 {
			t.Errorf("whoami --json: %+v", who)
		}

		// Projects.
		ce.run(t, nil, "project", "create", "q", "--env", "A=1").want(t, 0, "Created project q")
		ce.run(t, nil, "project", "create", "q").want(t, 1)
		ce.run(t, nil, "project", "ls").want(t, 0, "p ", "q ")
		var shown struct {
			Project apiv1.Project `json:"project"`
		}
		decode(t, ce.run(t, nil, "project", "show", "q", "--json").want(t, 0).stdout, &shown)
		if shown.Project.Env["A"] != "1" {
			t.Errorf("project show: %+v", shown.Project)
		}
		ce.run(t, nil, "status").want(t, 0, "PROJECT", "p ")
		ce.run(t, nil, "status", "p").want(t, 0, "project   p", "published")
		ce.run(t, nil, "project", "rm", "q").want(t, 0, "Deleted project q")
		ce.run(t, nil, "project", "show", "q").want(t, 1)

		// push: the tarball honours .dockerignore; the build is left to a
		// builder this server does not run (--no-wait).
		dir := filepath.Join(t.TempDir(), "newproj")
		ce.run(t, nil, "init", dir).want(t, 0, "wrote "+filepath.Join(dir, "main.py"))
		r = ce.run(t, nil, "push", dir, "--no-wait").want(t, 0, "is queued")
		if !strings.Contains(r.stderr, "Created project newproj") {
			t.Errorf("push of a new project: %s", r.stderr)
		}
		ce.run(t, nil, "push", t.TempDir(), "--project", "p").want(t, 1)

		// Shared state.
		ce.run(t, nil, "kv", "put", "p", "best/lr", `{"lr": 0.1}`).want(t, 0)
		ce.run(t, nil, "kv", "put", "p", "mode", "fast").want(t, 0, `p/mode = "fast"`)
		ce.run(t, nil, "kv", "get", "p", "best/lr").want(t, 0, `"lr": 0.1`)
		ce.run(t, nil, "kv", "ls", "p").want(t, 0, "best/lr", "mode")
		ce.run(t, nil, "kv", "rm", "p", "mode").want(t, 0)
		ce.run(t, nil, "kv", "get", "p", "mode").want(t, 1)

		// run: detached, then followed to its end (plain lines: stdout is
		// not a terminal), then a failure (exit 1).
		payload := filepath.Join(t.TempDir(), "payload.json")
		if err := os.WriteFile(payload, []byte(`{"name": "Ada"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		id := strings.TrimSpace(ce.run(t, nil, "run", "--project", "p", "--detach", payload).want(t, 0).stdout)
		j, err := ce.c.Job(ctx, id)
		if err != nil || string(j.Status) != "queued" {
			t.Fatalf("detached job %q: %+v %v", id, j, err)
		}
		w := ce.e.Worker()
		w.RunAll(t, 0, `{"greeting": "hello, Ada"}`)
		ce.run(t, nil, "jobs", "watch", id).want(t, 0, "Result of "+id, "hello, Ada")

		// The worker moves only once the command shows the step before, so
		// that each state is on screen when the next begins.
		follow := ce.start(t, "run", "--project", "p", "--fan-out", "2", payload)
		id2 := ce.waitNewJob(t, id)
		follow.waitFor(t, "job "+id2+": queued, 2 tasks")
		w.Claim(t)
		follow.waitFor(t, "task 0: running")
		w.Progress(t, `{"pct": 50, "stage": "half"}`, "working\n")
		follow.waitFor(t, "task 0: progress 50% half")
		follow.waitFor(t, "task 0 | working")
		w.Finish(t, 2*time.Second, 0, `{"i": 0}`, "working\ndone\n", "")
		w.Claim(t)
		w.Finish(t, time.Second, 0, `{"i": 1}`, "ok\n", "")
		r = follow.wait(t)
		r.want(t, 0, "task 0: succeeded", "task 1: succeeded", "job "+id2+": completed  cost $", "Result of "+id2, `"i": 1`)

		failing := ce.start(t, "run", "--project", "p", payload)
		id3 := ce.waitNewJob(t, id, id2)
		failing.waitFor(t, "job "+id3+": queued, 1 tasks")
		w.Claim(t)
		w.Finish(t, time.Second, 3, "", "", "Traceback: boom")
		r = failing.wait(t)
		r.want(t, 1, "task 0: failed: Traceback: boom")
		if !strings.Contains(r.stderr, "job "+id3+" failed") {
			t.Errorf("failed run stderr: %s", r.stderr)
		}

		// jobs and results.
		ce.run(t, nil, "jobs", "ls").want(t, 0, id, id2, id3)
		ce.run(t, nil, "jobs", "ls", "--status", "failed", "--json").want(t, 0, id3)
		ce.run(t, nil, "jobs", "show", id3).want(t, 0, "status     failed")
		ce.run(t, nil, "jobs", "tasks", id2).want(t, 0, "INDEX", "succeeded")
		ce.run(t, nil, "jobs", "events", id3).want(t, 0, "POSITION", "job.submitted", "job.failed")
		if r := ce.run(t, nil, "jobs", "events", id3, "--newest", "--limit", "1").want(t, 0, "job.failed"); strings.Contains(r.stdout, "job.submitted") {
			t.Errorf("jobs events --newest --limit 1 printed more than the newest event:\n%s", r.stdout)
		}
		ce.run(t, nil, "jobs", "logs", id2).want(t, 0, "done")
		r = ce.run(t, nil, "jobs", "logs", id3).want(t, 0)
		if !strings.Contains(r.stderr, "boom") {
			t.Errorf("logs of the failed job: %s", r.stderr)
		}
		ce.run(t, nil, "results", id).want(t, 0, "hello, Ada")
		ce.run(t, nil, "results").want(t, 0, id, id2)
		id4 := strings.TrimSpace(ce.run(t, nil, "run", "--project", "p", "--detach", payload).want(t, 0).stdout)
		ce.run(t, nil, "jobs", "cancel", id4).want(t, 0, id4+": cancelled")
		ce.run(t, nil, "jobs", "cancel", id4).want(t, 1)

		// Artifacts, streamed both ways.
		src := filepath.Join(t.TempDir(), "data.bin")
		body := bytes.Repeat([]byte("0123456789"), 100_000)
		if err := os.WriteFile(src, body, 0o644); err != nil {
			t.Fatal(err)
		}
		art := strings.TrimSpace(ce.run(t, nil, "artifacts", "put", src).want(t, 0).stdout)
		ce.run(t, nil, "artifacts", "ls").want(t, 0, art, "data.bin", "quota")
		dst := filepath.Join(t.TempDir(), "copy.bin")
		ce.run(t, nil, "artifacts", "get", art, "-o", dst).want(t, 0)
		if got, _ := os.ReadFile(dst); !bytes.Equal(got, body) {
			t.Errorf("downloaded %d bytes, want the %d uploaded", len(got), len(body))
		}
		ce.run(t, nil, "artifacts", "rm", art).want(t, 0, "Deleted "+art)

		// Money.
		ce.run(t, nil, "balance").want(t, 0, "available")
		ce.run(t, nil, "ledger").want(t, 0, "beta_credit_grant", "job_charge")
		ce.run(t, nil, "topup", "5").want(t, 5) // payments are off on this server

		// Usage and unreachable servers.
		ce.run(t, nil, "jobs", "show").want(t, 2)
		ce.run(t, nil, "kv", "frob").want(t, 2)
		ce.run(t, []string{"SKIFF_URL=http://127.0.0.1:1"}, "whoami", "--token", "x").want(t, 5)
		var out struct {
			LoggedOut bool `json:"logged_out"`
		}
		decode(t, ce.run(t, nil, "logout", "--json").want(t, 0).stdout, &out)
		if !out.LoggedOut {
			t.Error("logout --json: not logged_out")
		}
		ce.run(t, nil, "whoami").want(t, 3)
	})
}

func decode(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
}

// running is a skiff command started in the background.
type running struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
}

// syncBuffer is a buffer the command writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until the command's stdout holds want.
func (r *running) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(r.stdout.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("skiff %v never printed %q; stdout:\n%s\nstderr:\n%s", r.cmd.Args[1:], want, r.stdout, r.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (ce *clientEnv) start(t *testing.T, args ...string) *running {
	t.Helper()
	cmd := skiffCmd(t, ce.env, args...)
	r := &running{cmd: cmd, stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = r.stdout, r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return r
}

func (r *running) wait(t *testing.T) result {
	t.Helper()
	done := make(chan struct{})
	go func() { _ = r.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = r.cmd.Process.Kill()
		<-done
		t.Fatalf("skiff %v did not end; stdout:\n%s\nstderr:\n%s", r.cmd.Args[1:], r.stdout, r.stderr)
	}
	return result{r.cmd.ProcessState.ExitCode(), r.stdout.String(), r.stderr.String()}
}

// waitNewJob waits until a job other than known exists and returns its id.
func (ce *clientEnv) waitNewJob(t *testing.T, known ...string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		jobs, err := client.Collect(ce.c.Jobs(t.Context(), client.JobFilter{}))
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if !contains(known, j.ID) {
				return j.ID
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no new job within 30s")
	return ""
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func clientJobFilter() client.JobFilter { return client.JobFilter{} }
