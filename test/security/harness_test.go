// Package security_test holds the attacks of docs/security.md, one file per
// kind of attack, each a test that runs the real `skiff` binary (built once
// in TestMain), real buildah and gVisor, on both stores where a store is
// involved. A newcomer who wants to know what a stranger with a wallet
// cannot do here reads this directory beside docs/security.md.
//
// Attacker programs are small static Go programs that a test compiles
// (program) and packs into a FROM scratch project (push): no registry is
// reachable here.
package security_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/build/buildtest"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/store/postgres/pgtest"
	"github.com/skiffhq/skiff/internal/testenv"
	"github.com/skiffhq/skiff/internal/testproc"
)

// skiffBin is the real binary, built by TestMain from ./cmd/skiff.
var skiffBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "skiffsec")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	skiffBin = filepath.Join(dir, "skiff")
	cmd := exec.Command("go", "build", "-o", skiffBin, "github.com/skiffhq/skiff/cmd/skiff")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building skiff: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// engines runs fn once per store engine as subtests named sqlite and
// postgres (scripts/testreport counts them by those names).
func engines(t *testing.T, fn func(t *testing.T, engine string)) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) { fn(t, engine) })
	}
}

// skiffCmd is the binary with args and an environment free of the
// caller's SKIFF_ variables.
func skiffCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(skiffBin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SKIFF_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd
}

// instance is a running `skiff server` with its store flags.
type instance struct {
	*testproc.Proc
	URL   string
	Dir   string   // --data-dir
	Store []string // the flags that name the store, for `skiff admin`
}

// startServer starts `skiff server` on a fresh data dir (and a fresh
// PostgreSQL database when engine is postgres) with extra flags, and waits
// until /ready answers. It needs root, buildah and the pinned runsc.
func startServer(t *testing.T, engine string, extra ...string) *instance {
	t.Helper()
	buildtest.RequireTools(t)
	dir := buildtest.DataDir(t)
	store := []string{"--data-dir", dir}
	if engine == "postgres" {
		store = append(store, "--database-url", pgtest.NewDatabase(t))
	}
	args := append(append([]string{"server", "--listen", "127.0.0.1:0"}, store...), extra...)
	p := testproc.Start(t, skiffCmd(args...))
	line := p.WaitLog(t, "skiff server started", 60*time.Second)
	addr, _ := line["listen"].(string)
	if addr == "" {
		t.Fatalf("start log %v has no listen address", line)
	}
	s := &instance{Proc: p, URL: "http://" + addr, Dir: dir, Store: store}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.URL + "/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /ready: not 200 within 30s (%v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// admin runs `skiff admin args...` on s's store and returns its trimmed
// stdout, failing t unless it exits 0.
func (s *instance) admin(t *testing.T, args ...string) string {
	t.Helper()
	cmd := skiffCmd(append(append([]string{"admin"}, args...), s.Store...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("skiff admin %v: %v\n%s", args, err, stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// account creates an account with usd of credit and returns a validating
// client with its key.
func (s *instance) account(t *testing.T, name string, usd string) *apitest.Client {
	t.Helper()
	key := s.admin(t, "create-key", "--account", name)
	if usd != "" {
		s.admin(t, "grant-credit", "--account", name, "--usd", usd)
	}
	c, err := apitest.ServiceContract()
	if err != nil {
		t.Fatal(err)
	}
	return &apitest.Client{BaseURL: s.URL, Token: key, Contract: c}
}

// program compiles a static Go program (package main, standard library
// only) from source and returns its bytes.
func program(t *testing.T, source string) []byte {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		testenv.Skip(t, "no go toolchain to compile the attacker's program")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module attacker\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "prog")
	cmd := exec.Command(goBin, "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compiling the attacker's program: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// file is one entry of a project tarball.
type file struct {
	Body []byte
	Mode int64 // 0644 when zero
}

// tarball is a gzip tar of files.
func tarball(t *testing.T, files map[string]file) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, f := range files {
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(f.Body)),
			Typeflag: tar.TypeReg, ModTime: time.Unix(1_700_000_000, 0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.Body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// manifest is a skiff.project.json for a FROM scratch image whose runner
// is /runner.
const manifest = `{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/"}, "entrypoint": {"command": ["/runner"]}}`

// push creates project name, uploads files (a skiff.project.json is added
// when absent) and waits up to within for the push to end; it returns the
// final push record (status published or failed, with its log).
func push(t *testing.T, c *apitest.Client, name string, files map[string]file, within time.Duration) map[string]any {
	t.Helper()
	c.Post(t, "/api/v1/projects", map[string]any{"name": name}).Want(t, http.StatusCreated)
	if _, ok := files["skiff.project.json"]; !ok {
		files["skiff.project.json"] = file{Body: []byte(manifest)}
	}
	var rec struct {
		StatusURL string `json:"status_url"`
	}
	c.Do(t, apitest.Request{Method: http.MethodPost, Path: "/api/v1/projects/" + name + "/push",
		Body: tarball(t, files), Header: http.Header{"Content-Type": {"application/gzip"}}}).
		JSON(t, http.StatusAccepted, &rec)
	return waitFor(t, c, rec.StatusURL, within, func(m map[string]any) bool {
		return m["status"] == "published" || m["status"] == "failed"
	})
}

// waitFor polls path until ok holds for its JSON object and returns it.
func waitFor(t *testing.T, c *apitest.Client, path string, within time.Duration, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		m := c.Get(t, path).Object(t, http.StatusOK)
		if ok(m) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: not there within %s; last %v", path, within, m)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
