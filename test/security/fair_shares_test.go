package security_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/httpapi/apitest"
)

// The attack: free accounts starve everyone. Account "hog" fills the build
// queue with slow builds (each RUN step sleeps), sends pushes side by side,
// makes projects and shared-state keys without end; account "late" then
// pushes one project. Before the fix one FIFO worker built all of hog's
// queue before late's push, and nothing capped hog. Now the queue takes
// turns across accounts over --build-workers and each cap answers 429 (or
// 507 for bytes) with what to do, before anything is staged.
//
// The order is read from the push records (started_at, finished_at), never
// from wall-clock durations.

// fairSleeper sleeps in a build's RUN step, and is the image's runner.
const fairSleeper = `package main

import "time"

func main() { time.Sleep(2 * time.Second) }
`

// fairDockerfile copies a file unique to each push before the slow step, so
// that no build is a layer-cache hit of another.
const fairDockerfile = "FROM scratch\nCOPY sleeper /sleeper\nCOPY n.txt /n.txt\nRUN [\"/sleeper\"]\nCOPY sleeper /runner\n"

// fairFlags make the caps small enough to reach in a test: three queued
// builds, one upload at a time, four projects, three keys of at most 100
// bytes in all. Two workers, at most one build per account (the defaults).
var fairFlags = []string{"--no-local-host", "--build-max-queued-per-account", "3", "--push-max-concurrent-per-account", "1",
	"--max-projects-per-account", "4", "--kv-max-keys-per-account", "3", "--kv-max-bytes-per-account", "100"}

func TestFairSharesAttack(t *testing.T) {
	sleeper := program(t, fairSleeper)
	engines(t, func(t *testing.T, engine string) {
		s := startServer(t, engine, fairFlags...)
		hog := s.account(t, "hog", "")
		late := s.account(t, "late", "")
		tarballOf := func(n string) []byte {
			return tarball(t, map[string]file{"Dockerfile": {Body: []byte(fairDockerfile)}, "sleeper": {Body: sleeper, Mode: 0o755},
				"n.txt": {Body: []byte(n)}, "skiff.project.json": {Body: []byte(manifest)}})
		}
		for _, name := range []string{"a0", "a1", "a2", "a3"} {
			hog.Post(t, "/api/v1/projects", map[string]any{"name": name}).Want(t, http.StatusCreated)
		}

		// Pushes side by side: while a0's body is still being sent, a1 is
		// refused before its body is read.
		body := tarballOf("a0")
		pr, pw := io.Pipe()
		first := make(chan *http.Response, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/v1/projects/a0/push", pr)
			req.Header.Set("Authorization", "Bearer "+hog.Token)
			req.Header.Set("Content-Type", "application/gzip")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Errorf("push a0: %v", err)
			}
			first <- resp
		}()
		if _, err := pw.Write(body[:len(body)/2]); err != nil {
			t.Fatal(err)
		}
		fairWaitStaged(t, s, 1)
		fairRefused(t, fairPushRaw(t, hog, "a1", tarballOf("a1")), http.StatusTooManyRequests, "too_many_uploads",
			"Wait for your other pushes to finish uploading")
		if _, err := pw.Write(body[len(body)/2:]); err != nil {
			t.Fatal(err)
		}
		pw.Close()
		resp := <-first
		if resp == nil || resp.StatusCode != http.StatusAccepted {
			t.Fatalf("push a0 answered %v, want 202", resp)
		}
		resp.Body.Close()
		hogPushes := []string{"/api/v1/projects/a0/push"}

		// The queue: three builds at most, the fourth refused unstaged.
		for _, name := range []string{"a1", "a2"} {
			fairPushRaw(t, hog, name, tarballOf(name)).Want(t, http.StatusAccepted)
			hogPushes = append(hogPushes, "/api/v1/projects/"+name+"/push")
		}
		fairRefused(t, fairPushRaw(t, hog, "a3", tarballOf("a3")), http.StatusTooManyRequests, "build_queue_full",
			"Wait for one of your queued or running builds to finish")
		hog.Get(t, "/api/v1/projects/a3/push").Fail(t, http.StatusNotFound)
		var refs []string
		for _, p := range hogPushes {
			refs = append(refs, hog.Get(t, p).Object(t, http.StatusOK)["push_ref"].(string))
		}
		fairOnlyStaged(t, s, refs)

		// Another account's single push is not held behind hog's queue.
		late.Post(t, "/api/v1/projects", map[string]any{"name": "mine"}).Want(t, http.StatusCreated)
		fairPushRaw(t, late, "mine", tarballOf("mine")).Want(t, http.StatusAccepted)

		// Projects and shared state, while the builds run.
		fairRefused(t, hog.Post(t, "/api/v1/projects", map[string]any{"name": "a4"}), http.StatusTooManyRequests,
			"project_quota_exceeded", "Delete a project")
		for _, k := range []string{"k1", "k2", "k3"} {
			hog.Put(t, "/api/v1/projects/a0/kv/"+k, map[string]any{"value": k}).Want(t, http.StatusOK)
		}
		fairRefused(t, hog.Put(t, "/api/v1/projects/a1/kv/k4", map[string]any{"value": 4}), http.StatusTooManyRequests,
			"kv_key_quota_exceeded", "Delete keys")
		fairRefused(t, hog.Put(t, "/api/v1/projects/a0/kv/k1", map[string]any{"value": strings.Repeat("x", 100)}),
			http.StatusInsufficientStorage, "kv_storage_quota_exceeded", "artifact")
		late.Put(t, "/api/v1/projects/mine/kv/k1", map[string]any{"value": strings.Repeat("y", 90)}).Want(t, http.StatusOK)

		// The order of the builds, from the push records.
		mine := fairWaitBuilt(t, late, "/api/v1/projects/mine/push")
		var hogs []map[string]any
		for _, p := range hogPushes {
			hogs = append(hogs, fairWaitBuilt(t, hog, p))
		}
		lastHog := hogs[len(hogs)-1]
		if !fairTime(t, mine, "started_at").Before(fairTime(t, lastHog, "started_at")) ||
			!fairTime(t, mine, "finished_at").Before(fairTime(t, lastHog, "finished_at")) {
			t.Errorf("late's single build ran %s..%s, hog's last queued one %s..%s: late's waited behind hog's whole queue",
				mine["started_at"], mine["finished_at"], lastHog["started_at"], lastHog["finished_at"])
		}
	})
}

// fairPushRaw sends a push body as it is.
func fairPushRaw(t *testing.T, c *apitest.Client, name string, body []byte) *apitest.Response {
	t.Helper()
	return c.Do(t, apitest.Request{Method: http.MethodPost, Path: "/api/v1/projects/" + name + "/push", Body: body,
		Header: http.Header{"Content-Type": {"application/gzip"}}})
}

// fairRefused checks a cap's answer: the status, its code and a
// recommended_action that says what to do.
func fairRefused(t *testing.T, r *apitest.Response, status int, code, action string) {
	t.Helper()
	env := r.Fail(t, status)
	if env.Code != code || !strings.Contains(env.RecommendedAction, action) || len(env.Details) == 0 {
		t.Errorf("%s %s: %v; want %d %s with details and a recommended_action saying %q", r.Method, r.Path, env.Raw, status, code, action)
	}
}

// fairStaged lists <data-dir>/pushes: each push's staging dir.
func fairStaged(t *testing.T, s *instance) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(s.Dir, "pushes"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// fairWaitStaged waits until n pushes are being staged.
func fairWaitStaged(t *testing.T, s *instance, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(fairStaged(t, s)) != n {
		if time.Now().After(deadline) {
			t.Fatalf("staged pushes %v, want %d", fairStaged(t, s), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fairOnlyStaged checks that nothing but the accepted pushes is staged.
func fairOnlyStaged(t *testing.T, s *instance, accepted []string) {
	t.Helper()
	for _, name := range fairStaged(t, s) {
		if !slices.Contains(accepted, name) {
			t.Errorf("%s is staged under <data-dir>/pushes; only the accepted pushes %v may be", name, accepted)
		}
	}
}

// fairWaitBuilt polls a push until it is published.
func fairWaitBuilt(t *testing.T, c *apitest.Client, path string) map[string]any {
	t.Helper()
	rec := waitFor(t, c, path, 3*time.Minute, func(m map[string]any) bool { return m["terminal"] == true })
	if rec["status"] != "published" {
		t.Fatalf("%s: %s (%v)\n%v", path, rec["status"], rec["error"], rec["log_tail"])
	}
	return rec
}

func fairTime(t *testing.T, rec map[string]any, field string) time.Time {
	t.Helper()
	v, _ := rec[field].(string)
	at, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		t.Fatalf("push %v: %s %q: %v", rec["push_ref"], field, v, err)
	}
	return at
}
