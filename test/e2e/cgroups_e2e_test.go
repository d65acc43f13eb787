package e2e_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/build/buildtest"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
	skiffserver "github.com/skiffhq/skiff/internal/server"
)

// TestServerLeavesNoCgroups counts the cgroup directories of a server's
// local host (skiff-<hash of its data dir>, in every hierarchy) through
// the real binary: none after a clean stop, none after a server killed
// with SIGKILL is followed by another server's start on another data dir
// (which finds the dead one's directories and removes them), and none
// after that one restarts on its own data dir and stops.
func TestServerLeavesNoCgroups(t *testing.T) {
	runner := realRunner(t)
	dir := buildtest.DataDir(t)
	args := []string{"--data-dir", dir, "--listen", "127.0.0.1:0", "--host-slots", "1"}
	if n := cgroupDirs(t, dir); n != 0 {
		t.Fatalf("before the first start: %d cgroup dirs", n)
	}

	// A clean stop, with warm sandboxes (the default) and one job run.
	srv := startServer(t, nil, args...)
	key := strings.TrimSpace(skiff(t, nil, "admin", "create-key", "--data-dir", dir, "--account", "cg").stdout)
	skiff(t, nil, "admin", "grant-credit", "--data-dir", dir, "--account", "cg", "--usd", "5")
	c := srv.client(t, key)
	publishRunner(t, c, "cg", runner)
	runQuickJob(t, c, "cg")
	if n := cgroupDirs(t, dir); n == 0 {
		t.Fatal("no cgroup dirs while the server ran a job: is this test counting the right ones?")
	}
	if code := srv.stop(t, 30*time.Second); code != 0 {
		t.Errorf("exit: %d", code)
	}
	if n := cgroupDirs(t, dir); n != 0 {
		t.Errorf("after a clean stop: %d cgroup dirs, want 0", n)
	}

	// SIGKILL after a job, without warm sandboxes: a killed server's
	// sandboxes run on (only a restart on its own data dir stops them),
	// and they would keep its cgroups busy.
	killArgs := append(args, "--host-warm", "0")
	srv = startServer(t, nil, killArgs...)
	runQuickJob(t, srv.client(t, key), "cg")
	if err := srv.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	srv.wait(t, 10*time.Second)
	if n := cgroupDirs(t, dir); n == 0 {
		t.Fatal("no cgroup dirs left by the killed server: nothing to find")
	}
	other := buildtest.DataDir(t)
	srv2 := startServer(t, nil, "--data-dir", other, "--listen", "127.0.0.1:0", "--host-warm", "0")
	if n := cgroupDirs(t, dir); n != 0 {
		t.Errorf("after another server started: %d cgroup dirs of the killed one, want 0", n)
	}
	if code := srv2.stop(t, 30*time.Second); code != 0 {
		t.Errorf("exit: %d", code)
	}

	// And the killed server restarts on its data dir and stops cleanly.
	srv = startServer(t, nil, killArgs...)
	runQuickJob(t, srv.client(t, key), "cg")
	if code := srv.stop(t, 30*time.Second); code != 0 {
		t.Errorf("exit: %d", code)
	}
	for _, d := range []string{dir, other} {
		if n := cgroupDirs(t, d); n != 0 {
			t.Errorf("after the restarted server stopped: %d cgroup dirs for %s, want 0", n, d)
		}
	}
}

// runQuickJob runs one job of project's published runner to completion.
func runQuickJob(t *testing.T, c *apitest.Client, project string) {
	t.Helper()
	job := c.Post(t, "/api/v1/jobs", map[string]any{"project": project, "runner_command": []string{"/runner"},
		"payload": json.RawMessage(sandboxtest.Payload{Stdout: "hi"}.Encode(t)), "requirements": map[string]any{"cpu": 1, "memory_mb": 256}}).
		Object(t, http.StatusCreated)
	done := waitJSON(t, c, "/api/v1/jobs/"+job["id"].(string), time.Minute, jobEnded)
	if done["status"] != "completed" {
		t.Fatalf("job: %v", done)
	}
}

// cgroupDirs counts the cgroup directories, children included, that the
// local host of a server on dataDir makes: /sys/fs/cgroup/<parent> on a
// cgroup v2 machine, /sys/fs/cgroup/<controller>/<parent> on v1 (and the
// hybrid's unified/<parent>).
func cgroupDirs(t *testing.T, dataDir string) int {
	t.Helper()
	parent := "skiff-" + skiffserver.CgroupSuffix(dataDir)
	var roots []string
	for _, pat := range []string{"/sys/fs/cgroup/" + parent, "/sys/fs/cgroup/*/" + parent} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		roots = append(roots, m...)
	}
	n := 0
	for _, r := range roots {
		_ = filepath.WalkDir(r, func(_ string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				n++
			}
			return nil
		})
	}
	return n
}
