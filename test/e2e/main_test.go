// Package e2e_test holds Skiff's system tests: the real skiff binary as a
// subprocess (server, host, client, admin), kill -9 and restarts, networks
// cut between hosts and controllers, several controllers on one database,
// and the measurements that need all of it. They are the slow tier: `make
// test-e2e` runs them, `make test` runs them after the unit tier.
package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/build/buildtest"
	"github.com/skiffhq/skiff/internal/cli"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
	"github.com/skiffhq/skiff/internal/testproc"
)

// asSkiff makes the test binary act as the skiff binary: tests start it as
// a subprocess with this variable set, so the real process, its signals,
// stdout and exit code are under test without a separate build.
const asSkiff = "SKIFF_CLI_TEST_RUN_AS_SKIFF"

func TestMain(m *testing.M) {
	if os.Getenv(asSkiff) == "1" {
		os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// skiffCmd is the skiff binary with args and an environment free of the
// caller's SKIFF_ variables, plus env.
func skiffCmd(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SKIFF_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, asSkiff+"=1")
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// result is a finished command.
type result struct {
	code           int
	stdout, stderr string
}

// skiff runs a command to completion.
func skiff(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := skiffCmd(t, env, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start skiff %v: %v", args, err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("skiff %v did not finish in 60s", args)
	}
	return result{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

// server is a running `skiff server` or `skiff host` subprocess, its JSON
// log read by testproc.
type server struct {
	*testproc.Proc
	URL string
}

// startServer starts `skiff server` with args and env, waits until it
// listens and /ready answers 200, and stops it when the test ends.
func startServer(t *testing.T, env []string, args ...string) *server {
	t.Helper()
	return serve(t, skiffCmd(t, env, append([]string{"server"}, args...)...))
}

// serve starts cmd, a `skiff server`, waits until it listens and /ready
// answers 200, and stops it when the test ends.
func serve(t *testing.T, cmd *exec.Cmd) *server {
	t.Helper()
	s := &server{Proc: testproc.Start(t, cmd)}
	line := s.waitLog(t, "skiff server started", 30*time.Second)
	addr, _ := line["listen"].(string)
	if addr == "" {
		t.Fatalf("got start log %v without a listen address", line)
	}
	s.URL = "http://" + addr
	s.waitReady(t, 30*time.Second)
	return s
}

func (s *server) logText() string { return s.Log() }

// waitLog waits for a JSON log line whose msg is msg.
func (s *server) waitLog(t *testing.T, msg string, timeout time.Duration) map[string]any {
	t.Helper()
	return s.WaitLog(t, msg, timeout)
}

func (s *server) waitReady(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(s.URL + "/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s/ready: not 200 within %s (last: %v)", s.URL, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM and returns the exit code, failing t unless the
// process exits within timeout.
func (s *server) stop(t *testing.T, timeout time.Duration) int {
	t.Helper()
	return s.Stop(t, timeout)
}

func (s *server) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	return s.Wait(t, timeout)
}

// client is a validating API client for the server, with token.
func (s *server) client(t *testing.T, token string) *apitest.Client {
	t.Helper()
	c, err := apitest.ServiceContract()
	if err != nil {
		t.Fatal(err)
	}
	return &apitest.Client{BaseURL: s.URL, Token: token, Contract: c}
}

func envList(kv ...string) []string {
	if len(kv)%2 != 0 {
		panic("envList wants pairs")
	}
	var out []string
	for i := 0; i < len(kv); i += 2 {
		out = append(out, fmt.Sprintf("%s=%s", kv[i], kv[i+1]))
	}
	return out
}

// runAdmin runs `skiff admin args... storeArgs...` (the data dir or the
// database flags), fails the test unless it exits 0, and returns its
// trimmed stdout.
func runAdmin(t *testing.T, storeArgs []string, args ...string) string {
	t.Helper()
	r := skiff(t, nil, append(append([]string{"admin"}, args...), storeArgs...)...)
	if r.code != 0 {
		t.Fatalf("admin %v: exit %d, stderr %q", args, r.code, r.stderr)
	}
	return strings.TrimSpace(r.stdout)
}

// realRunner skips the test where buildah or runsc is missing (failing it
// under SKIFF_TEST_REQUIRE_ALL) and returns the test runner's static
// binary, for projects the real builder packs.
func realRunner(t *testing.T) []byte {
	t.Helper()
	buildtest.RequireTools(t)
	runner, err := os.ReadFile(sandboxtest.BuildRunner(t))
	if err != nil {
		t.Fatal(err)
	}
	return runner
}
