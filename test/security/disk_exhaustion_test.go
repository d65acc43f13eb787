package security_test

// The attack: a task fills the host's disk, which is the disk the
// controller's database lives on (issue 28, part 3). It asks for
// requirements.storage_gb 1 and writes 2 GiB into its scratch and artifact
// directories. What stops it: each attempt's writable directories are a
// filesystem of their own of storage_gb (a loop-mounted ext4 image), so the
// writes past 1 GiB fail with ENOSPC inside the sandbox, the attempt ends
// with failure_kind storage_exceeded, and the host's disk grows by at most
// the quota. The next job still runs.
//
// The same through a manifest's cache mount (TestDiskExhaustionCacheMount):
// the project's cache mounts are a filesystem of their own of
// --project-cache-mounts-gb, so the writes past it fail with ENOSPC, the
// attempt ends storage_exceeded naming the cache mount, and what the task
// wrote below the cap is still there for the project's next task.

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// diskFiller is the attacker's runner. {"mode":"fill"} allocates 1 GiB in
// its scratch directory and 1 GiB in its artifact directory (fallocate in
// 64 MiB steps, then 1 MiB writes, which also covers a filesystem without
// fallocate), prints how much it got, holds it for a few seconds and exits
// 1 on the first error, 0 when all 2 GiB fitted. {"mode":"ok"} writes a
// result and exits 0.
const diskFiller = `package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

func fill(path string, total int64) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var off int64
	for off < total {
		if err := syscall.Fallocate(int(f.Fd()), 0, off, 64<<20); err != nil {
			break
		}
		off += 64 << 20
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = 0xa5
	}
	for off < total {
		n, err := f.WriteAt(buf, off)
		off += int64(n)
		if err != nil {
			return off, err
		}
	}
	return off, f.Sync()
}

func main() {
	raw, _ := os.ReadFile(os.Getenv("SKIFF_TASK_PAYLOAD"))
	var p struct{ Mode string }
	_ = json.Unmarshal(raw, &p)
	if p.Mode != "fill" {
		_ = os.WriteFile(os.Getenv("SKIFF_TASK_RESULT"), []byte("{\"ok\":true}"), 0o644)
		return
	}
	var got int64
	code := 0
	for _, dir := range []string{os.Getenv("SKIFF_TASK_SCRATCH_DIR"), os.Getenv("SKIFF_ARTIFACT_DIR")} {
		n, err := fill(filepath.Join(dir, "fill.bin"), 1<<30)
		got += n
		if err != nil {
			fmt.Fprintf(os.Stderr, "fill %s: %v\n", dir, err)
			code = 1
			break
		}
	}
	fmt.Printf("allocated %d bytes\n", got)
	time.Sleep(4 * time.Second) // hold it while the test looks at the host
	os.Exit(code)
}
`

// diskAllocated is the bytes allocated to regular files below root
// (sparse files count what they hold), skipping what vanishes meanwhile.
func diskAllocated(root string) int64 {
	var n int64
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) == nil {
			n += st.Blocks * 512
		}
		return nil
	})
	return n
}

// diskAllocatedOneFS is diskAllocated without crossing into the
// filesystems mounted below root: what root's own disk holds (a volume
// counts as its image's allocated blocks, not twice).
func diskAllocatedOneFS(root string) int64 {
	var top syscall.Stat_t
	if syscall.Stat(root, &top) != nil {
		return 0
	}
	var n int64
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) != nil {
			return nil
		}
		if st.Dev != top.Dev {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			n += st.Blocks * 512
		}
		return nil
	})
	return n
}

// diskPeak samples diskAllocated(root) until stop is closed and returns
// the largest reading.
func diskPeak(root string, stop <-chan struct{}) func() int64 {
	return diskPeakOf(func() int64 { return diskAllocated(root) }, stop)
}

// diskPeakOf samples measure until stop is closed and returns the largest
// reading.
func diskPeakOf(measure func() int64, stop <-chan struct{}) func() int64 {
	var mu sync.Mutex
	var peak int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if n := measure(); n > 0 {
				mu.Lock()
				peak = max(peak, n)
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() int64 { <-done; mu.Lock(); defer mu.Unlock(); return peak }
}

func TestDiskExhaustion(t *testing.T) {
	engines(t, func(t *testing.T, engine string) {
		s := startServer(t, engine)
		c := s.account(t, "filler", "50")
		runner := program(t, diskFiller)
		rec := push(t, c, "filler", map[string]file{
			"Dockerfile": {Body: []byte("FROM scratch\nCOPY runner /runner\n")},
			"runner":     {Body: runner, Mode: 0o755},
		}, 3*time.Minute)
		if rec["status"] != "published" {
			t.Fatalf("push: %v", rec)
		}

		stop := make(chan struct{})
		peak := diskPeak(filepath.Join(s.Dir, "host", "work"), stop)
		job := c.Post(t, "/api/v1/jobs", map[string]any{"project": "filler", "runner_command": []string{"/runner"},
			"payload": map[string]any{"mode": "fill"}, "timeout_s": 300, "max_retries": 0,
			"requirements": map[string]any{"storage_gb": 1}}).Object(t, http.StatusCreated)["id"].(string)
		final := waitFor(t, c, "/api/v1/jobs/"+job, 4*time.Minute, diskTerminal)
		close(stop)
		grew := peak()

		task := c.Get(t, "/api/v1/jobs/"+job+"/tasks").Object(t, http.StatusOK)["tasks"].([]any)[0].(map[string]any)
		result, _ := json.Marshal(task["result"])
		if final["status"] != "failed" || !strings.Contains(string(result), `"failure_kind":"storage_exceeded"`) ||
			!strings.Contains(string(result), "storage quota of 1 GiB") {
			t.Errorf("the filler's job ended %v with task result %s; want failed with failure_kind storage_exceeded naming the quota", final["status"], result)
		}
		if !strings.Contains(string(result), "no space left on device") {
			t.Errorf("the runner did not meet ENOSPC: task result %s", result)
		}
		// The quota is 1 GiB; the filesystem's own metadata is a few MiB.
		if grew > 1<<30+32<<20 {
			t.Errorf("the host's work dir held up to %d MiB for a task with storage_gb 1; want at most the quota", grew>>20)
		}
		t.Logf("peak allocation in the host's work dir: %d MiB", grew>>20)

		// The host is fine: the next job runs.
		next := c.Post(t, "/api/v1/jobs", map[string]any{"project": "filler", "runner_command": []string{"/runner"},
			"payload": map[string]any{"mode": "ok"}}).Object(t, http.StatusCreated)["id"].(string)
		done := waitFor(t, c, "/api/v1/jobs/"+next, 2*time.Minute, diskTerminal)
		if done["status"] != "completed" {
			t.Errorf("the job after the filler ended %v, want completed", done["status"])
		}
	})
}

// diskTerminal holds for a job in a terminal status.
func diskTerminal(m map[string]any) bool {
	switch m["status"] {
	case "completed", "partial", "failed", "cancelled":
		return true
	}
	return false
}

// diskCacheFiller is the attacker's runner for the cache mount.
// {"mode":"fill"} writes "kept" to /cache/deps/kept, then 256 MiB to
// /cache/deps/fill.bin in 1 MiB writes, and exits 1 on the first error;
// {"mode":"read"} puts what /cache/deps/kept holds in its result.
const diskCacheFiller = `package main

import (
	"encoding/json"
	"fmt"
	"os"
)

func fill() error {
	if err := os.WriteFile("/cache/deps/kept", []byte("kept"), 0o644); err != nil {
		return err
	}
	f, err := os.Create("/cache/deps/fill.bin")
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = 0x5a
	}
	for range 256 {
		if _, err := f.Write(buf); err != nil {
			return err
		}
	}
	return f.Sync()
}

func main() {
	raw, _ := os.ReadFile(os.Getenv("SKIFF_TASK_PAYLOAD"))
	var p struct{ Mode string }
	_ = json.Unmarshal(raw, &p)
	if p.Mode == "read" {
		b, err := os.ReadFile("/cache/deps/kept")
		out, _ := json.Marshal(map[string]string{"kept": string(b), "err": fmt.Sprint(err)})
		_ = os.WriteFile(os.Getenv("SKIFF_TASK_RESULT"), out, 0o644)
		return
	}
	if err := fill(); err != nil {
		fmt.Fprintln(os.Stderr, "fill the cache mount:", err)
		os.Exit(1)
	}
	fmt.Println("wrote 256 MiB to the cache mount")
}
`

func TestDiskExhaustionCacheMount(t *testing.T) {
	engines(t, func(t *testing.T, engine string) {
		// 64 MiB for each project's cache mounts.
		s := startServer(t, engine, "--project-cache-mounts-gb", "0.0625")
		c := s.account(t, "cachefiller", "50")
		m := `{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/"}, "entrypoint": {"command": ["/runner"]},
			"cache_mounts": [{"name": "deps", "path": "/cache/deps"}]}`
		rec := push(t, c, "cachefiller", map[string]file{
			"Dockerfile":         {Body: []byte("FROM scratch\nCOPY runner /runner\n")},
			"runner":             {Body: program(t, diskCacheFiller), Mode: 0o755},
			"skiff.project.json": {Body: []byte(m)},
		}, 3*time.Minute)
		if rec["status"] != "published" {
			t.Fatalf("push: %v", rec)
		}

		root := filepath.Join(s.Dir, "host", "cache-mounts")
		stop := make(chan struct{})
		peak := diskPeakOf(func() int64 { return diskAllocatedOneFS(root) }, stop)
		job := c.Post(t, "/api/v1/jobs", map[string]any{"project": "cachefiller", "runner_command": []string{"/runner"},
			"payload": map[string]any{"mode": "fill"}, "max_retries": 0}).Object(t, http.StatusCreated)["id"].(string)
		final := waitFor(t, c, "/api/v1/jobs/"+job, 4*time.Minute, diskTerminal)
		close(stop)
		grew := peak()

		task := c.Get(t, "/api/v1/jobs/"+job+"/tasks").Object(t, http.StatusOK)["tasks"].([]any)[0].(map[string]any)
		result, _ := json.Marshal(task["result"])
		if final["status"] != "failed" || !strings.Contains(string(result), `"failure_kind":"storage_exceeded"`) ||
			!strings.Contains(string(result), "cache mount /cache/deps") || !strings.Contains(string(result), "64 MiB") {
			t.Errorf("the cache filler's job ended %v with task result %s; want failed with failure_kind storage_exceeded naming the cache mount and its 64 MiB", final["status"], result)
		}
		if !strings.Contains(string(result), "no space left on device") {
			t.Errorf("the runner did not meet ENOSPC in its cache mount: task result %s", result)
		}
		if grew > 64<<20+8<<20 {
			t.Errorf("the host's cache mounts held up to %d MiB for a project capped at 64 MiB", grew>>20)
		}
		t.Logf("peak allocation of the host's cache mounts: %d MiB", grew>>20)

		// The cache persists: the next task of the project reads what the
		// filler wrote below the cap.
		next := c.Post(t, "/api/v1/jobs", map[string]any{"project": "cachefiller", "runner_command": []string{"/runner"},
			"payload": map[string]any{"mode": "read"}}).Object(t, http.StatusCreated)["id"].(string)
		done := waitFor(t, c, "/api/v1/jobs/"+next, 2*time.Minute, diskTerminal)
		task = c.Get(t, "/api/v1/jobs/"+next+"/tasks").Object(t, http.StatusOK)["tasks"].([]any)[0].(map[string]any)
		result, _ = json.Marshal(task["result"])
		if done["status"] != "completed" || !strings.Contains(string(result), `"kept":"kept"`) {
			t.Errorf("the job after the cache filler ended %v with task result %s; want completed, reading what the filler kept", done["status"], result)
		}
	})
}
