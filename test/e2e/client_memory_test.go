package e2e_test

import (
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/skiffhq/skiff/internal/httpapi/apitest"
)

// maxRSSBound is what a streaming transfer may hold at most: the process's
// own footprint and its buffers, whatever the size moved.
const maxRSSBound = 96 << 20

// TestTransfersStreamFlat moves a 2 GiB artifact both ways and pushes a
// project holding 90 MB of incompressible data through the CLI, and checks
// the CLI's peak memory (its maximum resident set) stays flat.
func TestTransfersStreamFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: moves 2 GiB in -short mode")
	}
	ce := newClientEnv(t, apitest.Engines()[0])
	user := append(append([]string{}, ce.env...), "SKIFF_TOKEN="+ce.acct.Member)
	dir := t.TempDir()

	big := filepath.Join(dir, "big.bin")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// A sparse file: 2 GiB to read and send, little to write here; the
	// server and the download write it twice, so a machine short of disk
	// moves 256 MiB instead (still far past what the bound could hold).
	size := transferSize(t, dir)
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	put, rss := measured(t, user, "artifacts", "put", big)
	t.Logf("artifacts put of %d MiB: max RSS %d MiB", size>>20, rss>>20)
	id := strings.TrimSpace(put)
	if rss > maxRSSBound {
		t.Errorf("artifacts put of %d MiB: max RSS %d MiB, want at most %d", size>>20, rss>>20, maxRSSBound>>20)
	}
	copyPath := filepath.Join(dir, "copy.bin")
	_, rss = measured(t, user, "artifacts", "get", id, "-o", copyPath)
	t.Logf("artifacts get of %d MiB: max RSS %d MiB", size>>20, rss>>20)
	if st, err := os.Stat(copyPath); err != nil || st.Size() != size {
		t.Errorf("downloaded: %v %v", st, err)
	}
	if rss > maxRSSBound {
		t.Errorf("artifacts get of %d MiB: max RSS %d MiB, want at most %d", size>>20, rss>>20, maxRSSBound>>20)
	}
	os.Remove(copyPath)

	proj := filepath.Join(dir, "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"Dockerfile": "FROM scratch\nCOPY data.bin /data.bin\n",
		"skiff.project.json": `{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"}, "entrypoint": {"command": ["/runner"]}}`} {
		if err := os.WriteFile(filepath.Join(proj, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	df, err := os.Create(filepath.Join(proj, "data.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(df, rand.Reader, 90<<20); err != nil {
		t.Fatal(err)
	}
	df.Close()
	_, rss = measured(t, user, "push", proj, "--project", "big", "--no-wait")
	t.Logf("push of a 90 MB project: max RSS %d MiB", rss>>20)
	if rss > maxRSSBound {
		t.Errorf("push of 90 MB: max RSS %d MiB, want at most %d", rss>>20, maxRSSBound>>20)
	}
	// For scale: the same binary doing next to nothing.
	_, rss = measured(t, user, "whoami")
	t.Logf("whoami: max RSS %d MiB", rss>>20)
}

// measured runs skiff to completion (exit 0) and returns its stdout and
// peak resident set in bytes.
func measured(t *testing.T, env []string, args ...string) (string, int64) {
	t.Helper()
	cmd := skiffCmd(t, env, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("skiff %v: %v\n%s\n%s", args, err, stdout.String(), stderr.String())
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if ru == nil {
		t.Fatal("no resource usage")
	}
	return stdout.String(), ru.Maxrss << 10 // kilobytes on Linux
}

// transferSize is 2 GiB, the upload limit, where the disk holding dir has
// room for the two copies with margin, and 256 MiB elsewhere.
func transferSize(t *testing.T, dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err == nil && int64(st.Bavail)*int64(st.Bsize) > 16<<30 {
		return 2 << 30
	}
	t.Logf("less than 16 GiB free under %s: moving 256 MiB instead of 2 GiB", dir)
	return 256 << 20
}
