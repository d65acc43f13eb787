package cli_test

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
	// A sparse file: 2 GiB to read and send, little to write here.
	if err := f.Truncate(2 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	put, rss := measured(t, user, "artifacts", "put", big)
	t.Logf("artifacts put of 2 GiB: max RSS %d MiB", rss>>20)
	id := strings.TrimSpace(put)
	if rss > maxRSSBound {
		t.Errorf("artifacts put of 2 GiB: max RSS %d MiB, want at most %d", rss>>20, maxRSSBound>>20)
	}
	copyPath := filepath.Join(dir, "copy.bin")
	_, rss = measured(t, user, "artifacts", "get", id, "-o", copyPath)
	t.Logf("artifacts get of 2 GiB: max RSS %d MiB", rss>>20)
	if st, err := os.Stat(copyPath); err != nil || st.Size() != 2<<30 {
		t.Errorf("downloaded: %v %v", st, err)
	}
	if rss > maxRSSBound {
		t.Errorf("artifacts get of 2 GiB: max RSS %d MiB, want at most %d", rss>>20, maxRSSBound>>20)
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
