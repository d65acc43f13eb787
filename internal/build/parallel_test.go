package build_test

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

	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/build/buildtest"
)

// floodSource is a RUN step that says it runs, then writes a MiB: more than
// the pipes between it and the builder hold, so while the build's log
// writer is held the step stays alive, blocked on its output.
const floodSource = `package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	fmt.Printf("%s is running\n", os.Args[1])
	line := strings.Repeat("x", 1023) + "\n"
	for range 1024 {
		fmt.Print(line)
	}
}
`

// sideBySideProject is a build context whose RUN steps flood their log
// under name, then write name to /name.txt. Every project of it shares its
// first layers, so concurrent builds make and reuse the same cached layers
// in the one storage.
func sideBySideProject(t *testing.T, flood []byte, name string) string {
	t.Helper()
	dir := buildtest.ScratchProject(t, `FROM scratch
COPY runner /usr/local/bin/runner
COPY flood /flood
RUN ["/flood", "`+name+`"]
RUN ["/usr/local/bin/runner", "write", "/name.txt", "`+name+`"]
`)
	buildtest.WriteFile(t, dir, "flood", string(flood), 0o755)
	return dir
}

// gateLog is a build's log that, once the build prints "<name> is running",
// holds the build there (Write blocks, so the RUN step stalls on its output)
// until open is closed. A build whose turn never comes is given up on after
// patience, and the gate says so.
type gateLog struct {
	name     string
	running  chan struct{} // closed once the marker is seen
	open     <-chan struct{}
	patience time.Duration

	mu      sync.Mutex
	buf     bytes.Buffer
	seen    bool
	gaveUp  bool
	waitErr string
}

func newGateLog(name string, open <-chan struct{}) *gateLog {
	return &gateLog{name: name, running: make(chan struct{}), open: open, patience: 3 * time.Minute}
}

func (g *gateLog) Write(p []byte) (int, error) {
	g.mu.Lock()
	g.buf.Write(p)
	hold := !g.seen && strings.Contains(g.buf.String(), g.name+" is running")
	if hold {
		g.seen = true
		close(g.running)
	}
	g.mu.Unlock()
	if hold {
		select {
		case <-g.open:
		case <-time.After(g.patience):
			g.mu.Lock()
			g.gaveUp = true
			g.mu.Unlock()
		}
	}
	return len(p), nil
}

func (g *gateLog) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.String()
}

func (g *gateLog) heldInVain() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.gaveUp
}

// wantNoWorkingContainers fails when buildah's storage still holds a working
// container.
func wantNoWorkingContainers(t *testing.T, b *build.Builder) {
	t.Helper()
	path, args, env := b.BareBuildah("containers", "--json")
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("buildah containers: %v", err)
	}
	var containers []map[string]any
	if s := strings.TrimSpace(string(out)); s != "" && s != "null" {
		if err := json.Unmarshal(out, &containers); err != nil {
			t.Fatalf("buildah containers --json: %v: %s", err, out)
		}
	}
	if len(containers) > 0 {
		t.Errorf("working containers left in storage: %s", out)
	}
}

// wantEmptyDirs fails when a directory under dir holds anything.
func wantEmptyDirs(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}

func TestBuildsRunSideBySide(t *testing.T) {
	b, cfg := newBuilder(t, func(c *build.Config) { c.Workers = 2 })
	flood, err := os.ReadFile(buildtest.StaticProgram(t, "flood", floodSource))
	if err != nil {
		t.Fatal(err)
	}
	// Each build waits, inside its running RUN step, for the other's RUN
	// step to run: builds that took turns would never both get there.
	alphaOpen, betaOpen := make(chan struct{}), make(chan struct{})
	logs := map[string]*gateLog{"alpha": newGateLog("alpha", alphaOpen), "beta": newGateLog("beta", betaOpen)}
	go func() { <-logs["beta"].running; close(alphaOpen) }()
	go func() { <-logs["alpha"].running; close(betaOpen) }()

	results := make(map[string]*build.Result)
	errs := make(map[string]error)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, log := range logs {
		dir := sideBySideProject(t, flood, name)
		wg.Go(func() {
			res, err := b.Build(t.Context(), build.Request{ContextDir: dir, Tag: name, Log: log, Timeout: 5 * time.Minute})
			mu.Lock()
			defer mu.Unlock()
			results[name], errs[name] = res, err
		})
	}
	wg.Wait()

	for name, log := range logs {
		if log.heldInVain() {
			t.Errorf("%s's RUN step ran, but the other build's never did meanwhile: builds took turns", name)
		}
		if errs[name] != nil {
			t.Fatalf("building %s: %v\n%s", name, errs[name], log)
		}
		if got, ok := readImageFile(t, results[name].LayoutDir, "/name.txt"); !ok || got != name {
			t.Errorf("%s's image has /name.txt %q (found %v), want %q", name, got, ok, name)
		}
	}
	if results["alpha"].ImageDigest == results["beta"].ImageDigest {
		t.Error("the two projects published one image")
	}
	wantNoWorkingContainers(t, b)
	wantEmptyDirs(t, cfg.TmpDir)
}

func TestKilledBuildSparesItsNeighbour(t *testing.T) {
	b, cfg := newBuilder(t, func(c *build.Config) { c.Workers = 2 })
	dataDir := filepath.Dir(filepath.Dir(cfg.StorageRoot))
	flood, err := os.ReadFile(buildtest.StaticProgram(t, "flood", floodSource))
	if err != nil {
		t.Fatal(err)
	}

	// beta's RUN step stays alive, blocked on its output, until the build
	// beside it has been killed and cleaned up after.
	killedDone := make(chan struct{})
	betaLog := newGateLog("beta", killedDone)
	betaDir := sideBySideProject(t, flood, "beta")
	var beta *build.Result
	var betaErr error
	betaReturned := make(chan struct{})
	go func() {
		defer close(betaReturned)
		beta, betaErr = b.Build(t.Context(), build.Request{ContextDir: betaDir, Tag: "beta", Log: betaLog, Timeout: 5 * time.Minute})
	}()
	select {
	case <-betaLog.running:
	case <-betaReturned:
		t.Fatalf("beta ended before its RUN step ran: %v\n%s", betaErr, betaLog)
	}

	sleeper := buildtest.ScratchProject(t, `FROM scratch
COPY runner /usr/local/bin/runner
RUN ["/usr/local/bin/runner", "sleep", "600"]
`)
	sleeperLog := build.NewTailWriter(build.DefaultLogTailBytes)
	_, err = b.Build(t.Context(), build.Request{ContextDir: sleeper, Tag: "sleeps", Timeout: 10 * time.Second, Log: sleeperLog})
	wantUserError(t, err, build.FailureTimeout)
	if !strings.Contains(sleeperLog.String(), "RUN") {
		t.Errorf("the killed build never reached its RUN step:\n%s", sleeperLog)
	}
	close(killedDone)
	<-betaReturned

	if betaLog.heldInVain() {
		t.Error("beta's gate gave up before the other build's timeout")
	}
	if betaErr != nil {
		t.Fatalf("beta, running beside the killed build: %v\n%s", betaErr, betaLog)
	}
	if got, ok := readImageFile(t, beta.LayoutDir, "/name.txt"); !ok || got != "beta" {
		t.Errorf("beta's image has /name.txt %q (found %v), want beta", got, ok)
	}
	buildtest.WantNothingLeft(t, dataDir)
	wantNoWorkingContainers(t, b)
	wantEmptyDirs(t, cfg.TmpDir)
}
