package gvisor

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
)

// warmFirst is the driver as a host with a warm pool uses it: before each
// attempt it asks for one warm sandbox of the attempt's key and waits for
// it, so that the attempt runs in it; afterwards it drops the pool. The
// pool's refill may still be booting then, so the caches move to cacheRoot,
// which outlives the subtests' directories.
type warmFirst struct {
	*Driver
	cacheRoot string
}

func (w warmFirst) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Outcome, error) {
	if spec.CacheDir != "" {
		spec.CacheDir = filepath.Join(w.cacheRoot, strings.NewReplacer("/", "_").Replace(spec.CacheDir))
	}
	key, ok := sandbox.KeyOf(&spec)
	if ok && spec.Validate() == nil {
		w.Warm(ctx, key, 1)
		defer w.DropWarm(key.CacheDir)
		waitWarm(ctx, w.Driver, key, 1, 30*time.Second)
	}
	return w.Driver.Run(ctx, spec)
}

// waitWarm waits until n sandboxes of key are ready, or gives up after d.
func waitWarm(ctx context.Context, d *Driver, key sandbox.WarmKey, n int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for d.WarmReady(key) < n {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

func skipWithoutWarm(t *testing.T) {
	if !WarmSupported() {
		t.Skip("warm sandboxes need an x86-64 host (the launcher is x86-64 code)")
	}
}

// TestWarmConformance runs the drivers' conformance suite with every
// attempt in a warm sandbox: exit codes, streams, payload and environment,
// results, artifacts, timeouts, cancellation and the cache behave as in a
// cold start.
func TestWarmConformance(t *testing.T) {
	skipWithoutWarm(t)
	d, f := newTestDriver(t)
	t.Run("suite", func(t *testing.T) { sandboxtest.Run(t, warmFirst{Driver: d, cacheRoot: t.TempDir()}, f) })
	d.warm.wg.Wait()
	// Most cases ran warm (InvalidSpec and the refused second run of
	// WorkDirNotReused cannot).
	if used := d.warm.used.Load(); used < 12 {
		t.Errorf("attempts run in a warm sandbox: %d, want at least 12", used)
	}
}

// TestWarmIsolation: a warm sandbox runs as a cold one does (nobody, no
// capabilities, read-only root and payload, no network), runs one attempt
// and is destroyed; the pool is refilled with new sandboxes, and what one
// attempt left in its scratch directory is not there for the next.
func TestWarmIsolation(t *testing.T) {
	skipWithoutWarm(t)
	d, f := newTestDriver(t)
	dirs := sandbox.ContainerDirs()
	first := f.Spec(t, sandboxtest.Payload{
		Interfaces: true,
		WriteFile:  []string{sandboxtest.RunnerPath + ".new", dirs.PayloadFile(), dirs.Scratch + "/left-behind"},
		ReadFile:   []string{"/proc/self/status", "/proc/self/stat"},
	})
	key, _ := sandbox.KeyOf(&first)
	ctx := context.Background()
	d.Warm(ctx, key, 2)
	if !waitWarm(ctx, d, key, 2, time.Minute) {
		t.Fatal("the pool did not fill to 2 within a minute")
	}
	before := containerIDs(t, d)
	if len(before) != 2 {
		t.Fatalf("containers of a pool of 2: %q", before)
	}

	called := time.Now()
	out := run(t, d, first)
	if out.ExitCode != 0 {
		t.Fatalf("exit code %d (%s)", out.ExitCode, out.SandboxError)
	}
	if d.warm.used.Load() != 1 {
		t.Fatalf("the attempt did not run warm")
	}
	// Metered from the runner's start, not from the sandbox's boot.
	if out.StartedAt.Before(called) {
		t.Errorf("started_at %v is before Run was called (%v): the idle pool time would be billed", out.StartedAt, called)
	}
	r := sandboxtest.DecodeReport(t, out.Result)
	if r.UID != RunnerUID || r.GID != RunnerGID {
		t.Errorf("uid:gid %d:%d, want %d:%d", r.UID, r.GID, RunnerUID, RunnerGID)
	}
	if !slices.Equal(r.Interfaces, []string{"lo"}) {
		t.Errorf("interfaces %q, want only lo", r.Interfaces)
	}
	for path, wantOK := range map[string]bool{sandboxtest.RunnerPath + ".new": false, dirs.PayloadFile(): false, dirs.Scratch + "/left-behind": true} {
		if gotOK := r.WriteErrors[path] == ""; gotOK != wantOK {
			t.Errorf("write %s: error %q, want writable=%v", path, r.WriteErrors[path], wantOK)
		}
	}
	if status := r.Reads["/proc/self/status"]; !strings.Contains(status, "CapEff:\t0000000000000000") {
		t.Errorf("capabilities: want none effective, got:\n%s", status)
	}
	// The runner is the sandbox's init, as in a cold start: the launcher
	// exec'd it in its own place.
	if stat := r.Reads["/proc/self/stat"]; !strings.HasPrefix(stat, "1 (") {
		t.Errorf("the runner is not the sandbox's process 1: /proc/self/stat %q", stat)
	}
	// The result and the scratch file are in the attempt's own WorkDir.
	if _, err := os.Stat(filepath.Join(first.WorkDir, sandbox.ScratchDirName, "left-behind")); err != nil {
		t.Errorf("the attempt's scratch file is not in its WorkDir: %v", err)
	}

	// The used sandbox is gone; the pool is refilled with a new one.
	if !waitWarm(ctx, d, key, 2, time.Minute) {
		t.Fatal("the pool was not refilled to 2 within a minute")
	}
	d.later.Wait()
	after := containerIDs(t, d)
	if len(after) != 2 {
		t.Fatalf("containers after one attempt and the refill: %q", after)
	}
	if n := len(slices.DeleteFunc(slices.Clone(after), func(id string) bool { return !slices.Contains(before, id) })); n != 1 {
		t.Errorf("containers before %q, after %q: want exactly one of the first pool left and one new", before, after)
	}

	second := f.Spec(t, sandboxtest.Payload{ReadFile: []string{dirs.Scratch + "/left-behind"}})
	second.CacheDir = first.CacheDir
	out = run(t, d, second)
	if out.ExitCode != 0 || d.warm.used.Load() != 2 {
		t.Fatalf("second attempt: exit %d, warm runs %d", out.ExitCode, d.warm.used.Load())
	}
	if r := sandboxtest.DecodeReport(t, out.Result); !strings.HasPrefix(r.Reads[dirs.Scratch+"/left-behind"], "error:") {
		t.Errorf("the second attempt found the first one's scratch file: %+v", r)
	}
	d.DropWarm(key.CacheDir)
	d.warm.wg.Wait()
}

// TestWarmPoolReplacedAndDropped: asking for another revision's pool of
// the same project replaces the old one, an attempt of another revision
// drops a stale pool, and DropWarm (project deleted, invalidated) and
// Cleanup leave nothing.
func TestWarmPoolReplacedAndDropped(t *testing.T) {
	skipWithoutWarm(t)
	d, f := newTestDriver(t)
	spec := f.Spec(t, sandboxtest.Payload{})
	key, _ := sandbox.KeyOf(&spec)
	ctx := context.Background()
	d.Warm(ctx, key, 1)
	if !waitWarm(ctx, d, key, 1, time.Minute) {
		t.Fatal("the pool did not fill")
	}
	old := containerIDs(t, d)

	// A new revision: another root filesystem, the same project cache.
	newRoot := sandboxtest.RunnerRootFS(t)
	next := key
	next.RootFS = newRoot
	d.Warm(ctx, next, 1)
	if !waitWarm(ctx, d, next, 1, time.Minute) {
		t.Fatal("the new revision's pool did not fill")
	}
	d.warm.wg.Wait()
	if d.WarmReady(key) != 0 {
		t.Errorf("the old revision's pool is still ready")
	}
	now := containerIDs(t, d)
	if len(now) != 1 || slices.Contains(old, now[0]) {
		t.Errorf("containers: old pool %q, now %q; want only a new one", old, now)
	}

	// An attempt of the old revision does not use the new pool; it drops
	// it as stale, and runs cold.
	out := run(t, d, spec)
	if out.ExitCode != 0 || d.warm.used.Load() != 0 {
		t.Fatalf("old-revision attempt: exit %d, warm runs %d (want a cold run)", out.ExitCode, d.warm.used.Load())
	}
	d.warm.wg.Wait()
	d.later.Wait()
	if ids := containerIDs(t, d); len(ids) != 0 {
		t.Errorf("the stale pool was not dropped: %q", ids)
	}

	d.Warm(ctx, key, 2)
	if !waitWarm(ctx, d, key, 2, time.Minute) {
		t.Fatal("the pool did not fill")
	}
	d.DropWarm(key.CacheDir)
	d.warm.wg.Wait()
	if ids := containerIDs(t, d); len(ids) != 0 {
		t.Errorf("DropWarm left containers: %q", ids)
	}
	if entries, _ := os.ReadDir(d.warmDir()); len(entries) != 0 {
		t.Errorf("DropWarm left slot directories: %d", len(entries))
	}
	// Cleanup with a pool still warm (shutdown) leaves nothing either;
	// newTestDriver's cleanup checks for leaks after it.
	d.Warm(ctx, key, 1)
	if !waitWarm(ctx, d, key, 1, time.Minute) {
		t.Fatal("the pool did not fill")
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := d.Cleanup(cctx); err != nil {
		t.Fatal(err)
	}
	if ids := containerIDs(t, d); len(ids) != 0 {
		t.Errorf("Cleanup left containers: %q", ids)
	}
}

func containerIDs(t *testing.T, d *Driver) []string {
	t.Helper()
	cs, err := d.runsc.list(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	slices.Sort(ids)
	return ids
}
