package e2e_test

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/build/buildtest"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
)

// TestImagesStayBounded pushes 20 revisions of a project to the real
// binary with a short --image-retention, running a job on each: the
// controller's image layouts stay bounded (the latest revision's, and the
// one a running attempt uses), its local host's image cache stays under
// --image-cache-gb, and the image of the revision an attempt still runs is
// never deleted under it, however many sweeps pass; once that job is over
// its image goes too.
func TestImagesStayBounded(t *testing.T) {
	runner := realRunner(t)
	dir := buildtest.DataDir(t)
	const hostLimit = 12 << 20 // its local host's image cache: three images
	srv := startServer(t, nil, "--data-dir", dir, "--listen", "127.0.0.1:0", "--host-slots", "2", "--host-warm", "0",
		"--image-retention", "2s", "--image-sweep-interval", "200ms", "--image-cache-gb", fmt.Sprint(float64(hostLimit)/(1<<30)))
	key := strings.TrimSpace(skiff(t, nil, "admin", "create-key", "--data-dir", dir, "--account", "img").stdout)
	skiff(t, nil, "admin", "grant-credit", "--data-dir", dir, "--account", "img", "--usd", "20")
	c := srv.client(t, key)
	c.Post(t, "/api/v1/projects", map[string]any{"name": "img"}).Want(t, http.StatusCreated)
	images := filepath.Join(dir, "images")

	first := pushRevision(t, c, runner, 1)
	job, running := startLongJob(t, c)

	one := dirBytes(t, filepath.Join(images, hexOf(first)))
	hostCache := filepath.Join(dir, "host", "images")
	var last string
	most, mostHost := int64(0), int64(0)
	for i := 2; i <= 20; i++ {
		last = pushRevision(t, c, runner, i)
		runQuickJob(t, c, "img") // the local host unpacks it
		most = max(most, dirBytes(t, images))
		mostHost = max(mostHost, dirBytes(t, hostCache))
		if _, err := os.Stat(filepath.Join(images, hexOf(first), "index.json")); err != nil {
			t.Fatalf("after revision %d: the running attempt's image: %v", i, err)
		}
		if _, err := os.Stat(filepath.Join(hostCache, hexOf(first), "rootfs")); err != nil {
			t.Fatalf("after revision %d: the running attempt's unpacked image: %v", i, err)
		}
	}
	t.Logf("one image: %d bytes; most under %s while pushing: %d bytes (%.1f images); most in the local host's cache: %d of %d",
		one, images, most, float64(most)/float64(one), mostHost, hostLimit)
	if mostHost > hostLimit+1<<16 {
		t.Errorf("the local host's image cache held %d bytes, over its %d", mostHost, hostLimit)
	}
	// The sweep removes the 18 between; the first stays while its attempt runs.
	waitFor(t, time.Minute, "only the latest revision's and the running attempt's images to remain", func() bool {
		return slices.Equal(layouts(t, images), sortedHex(first, last))
	})
	if n := dirBytes(t, images); n > 3*one {
		entries, _ := os.ReadDir(images)
		var sizes []string
		for _, e := range entries {
			sizes = append(sizes, fmt.Sprintf("%s: %d", e.Name(), dirBytes(t, filepath.Join(images, e.Name()))))
		}
		t.Errorf("%d bytes under %s with two images of %d bytes: %v", n, images, one, sizes)
	}
	if !running() {
		t.Fatal("the job's task no longer runs: the check above did not happen under a running attempt")
	}
	c.Put(t, "/api/v1/jobs/"+job+"/cancel", map[string]any{}).Want(t, http.StatusOK)
	waitJSON(t, c, "/api/v1/jobs/"+job, time.Minute, jobEnded)
	waitFor(t, time.Minute, "the finished job's image to be deleted", func() bool {
		return slices.Equal(layouts(t, images), []string{hexOf(last)})
	})
	if code := srv.stop(t, 30*time.Second); code != 0 {
		t.Errorf("exit: %d", code)
	}
}

// startLongJob submits a job of project "img" whose one task sleeps two
// minutes, waits until the task runs and returns the job's id and a check
// that it still runs.
func startLongJob(t *testing.T, c *apitest.Client) (string, func() bool) {
	t.Helper()
	job := c.Post(t, "/api/v1/jobs", map[string]any{"project": "img", "runner_command": []string{"/runner"},
		"payload":      json.RawMessage(sandboxtest.Payload{SleepMS: 120_000}.Encode(t)),
		"requirements": map[string]any{"cpu": 1, "memory_mb": 256}}).Object(t, http.StatusCreated)["id"].(string)
	running := func() bool {
		ts := c.Get(t, "/api/v1/jobs/"+job+"/tasks").Object(t, http.StatusOK)["tasks"].([]any)
		return len(ts) == 1 && ts[0].(map[string]any)["status"] == "running"
	}
	waitFor(t, time.Minute, "the job's task to run", running)
	return job, running
}

// pushRevision pushes revision i of project "img" (the test runner and a
// MiB of its own random bytes), waits until it is published and returns
// its image digest.
func pushRevision(t *testing.T, c *apitest.Client, runner []byte, i int) string {
	t.Helper()
	body := tarball(t, map[string]string{
		"Dockerfile":         "FROM scratch\nCOPY runner /runner\nCOPY pad /pad\nWORKDIR /app\n",
		"skiff.project.json": `{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"}, "entrypoint": {"command": ["/runner"]}}`,
		"runner":             string(runner),
		"pad":                fmt.Sprintf("revision %d\n%s", i, rand.Text()+strings.Repeat(rand.Text(), 1<<15)),
	})
	var rec struct {
		StatusURL string `json:"status_url"`
	}
	c.Do(t, apitest.Request{Method: http.MethodPost, Path: "/api/v1/projects/img/push", Body: body,
		Header: http.Header{"Content-Type": {"application/gzip"}}}).JSON(t, http.StatusAccepted, &rec)
	m := waitJSON(t, c, rec.StatusURL, time.Minute, func(m map[string]any) bool { return m["terminal"] == true })
	d, _ := m["image_digest"].(string)
	if m["status"] != "published" || !strings.HasPrefix(d, "sha256:") {
		t.Fatalf("revision %d: %v", i, m)
	}
	return d
}

func hexOf(digest string) string { return strings.TrimPrefix(digest, "sha256:") }

func sortedHex(digests ...string) []string {
	out := make([]string, len(digests))
	for i, d := range digests {
		out[i] = hexOf(d)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// layouts lists the image layouts under dir, sorted.
func layouts(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && len(e.Name()) == 64 {
			out = append(out, e.Name())
		}
	}
	return out
}

// dirBytes is the size of the regular files under dir, each file once
// however many hard links it has (layouts link the builder's blob pool).
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	seen := map[uint64]bool{}
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		n += info.Size()
		return nil
	})
	return n
}

// waitFor polls ok until it holds, failing t after within.
func waitFor(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHostImageCacheStaysBounded: an enrolled host (the real `skiff host`)
// with --image-cache-gb runs a job on each of 20 revisions while a task of
// the first runs on: its image cache stays under the limit, least recently
// used images go, and the running task's image stays.
func TestHostImageCacheStaysBounded(t *testing.T) {
	runner := realRunner(t)
	dir := buildtest.DataDir(t)
	srv := startServer(t, nil, "--data-dir", dir, "--listen", "127.0.0.1:0", "--no-local-host")
	admin := func(args ...string) string { return runAdmin(t, []string{"--data-dir", dir}, args...) }
	key := admin("create-key", "--account", "img")
	admin("grant-credit", "--account", "img", "--usd", "20")
	const limit = 12 << 20 // three images of the runner and a MiB of their own
	hostDir := filepath.Join(t.TempDir(), "host")
	startHost(t, "--controller", srv.URL, "--data-dir", hostDir, "--cpus", "2", "--memory-gb", "2", "--slots", "2",
		"--lease-wait", "5s", "--image-cache-gb", fmt.Sprint(float64(limit)/(1<<30)),
		"--code-file", codeFile(t, admin("create-enrollment", "--name", "h")))
	c := srv.client(t, key)
	c.Post(t, "/api/v1/projects", map[string]any{"name": "img"}).Want(t, http.StatusCreated)
	cache := filepath.Join(hostDir, "images")

	first := pushRevision(t, c, runner, 1)
	job, running := startLongJob(t, c)
	most := int64(0)
	for i := 2; i <= 20; i++ {
		pushRevision(t, c, runner, i)
		runQuickJob(t, c, "img")
		n := dirBytes(t, cache)
		most = max(most, n)
		if n > limit+1<<16 {
			t.Errorf("after revision %d: %d bytes in the host's image cache, over its %d", i, n, limit)
		}
		if _, err := os.Stat(filepath.Join(cache, hexOf(first), "rootfs")); err != nil {
			t.Fatalf("after revision %d: the running task's image: %v", i, err)
		}
	}
	t.Logf("most in the host's image cache: %d bytes of %d", most, limit)
	if !running() {
		t.Fatal("the first job no longer runs: the checks above did not happen under a running task")
	}
	c.Put(t, "/api/v1/jobs/"+job+"/cancel", map[string]any{}).Want(t, http.StatusOK)
}
