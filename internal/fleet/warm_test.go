package fleet_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/agent"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/fleet"
	"github.com/skiffhq/skiff/internal/sandbox/gvisor"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
	"github.com/skiffhq/skiff/internal/store"
)

// TestWarmStartsAfterPrepare: once the local host has prepared a revision
// (POST /projects/:name/init), its tasks run in warm sandboxes: each in a
// sandbox of its own, with the project's environment and working
// directory, billed from the runner's start (not for the time the sandbox
// waited), and the pool is refilled; dropping the project's pool
// (invalidate, delete) leaves none ready.
func TestWarmStartsAfterPrepare(t *testing.T) {
	if !gvisor.WarmSupported() {
		t.Skip("warm sandboxes need an x86-64 host")
	}
	h := newHarness(t, harnessOptions{})
	d, ok := h.driver.(*gvisor.Driver)
	if !ok {
		t.Fatalf("harness driver is %T", h.driver)
	}
	ctx := context.Background()
	cacheRoot := t.TempDir()
	local, err := fleet.NewLocal(t.TempDir(), h.imagesDir, h.images)
	if err != nil {
		t.Fatal(err)
	}
	// The agent sets its default pids limit on every attempt; the pool
	// must be of that shape.
	local.UseWarm(fleet.WarmConfig{Warmer: d, CacheRoot: cacheRoot, Size: 2, CPU: 1, MemoryMB: 256, PidsLimit: agent.DefaultPidsLimit})
	p, err := h.st.ProjectGetByName(ctx, h.accountID, "runner")
	if err != nil {
		t.Fatal(err)
	}
	pu, err := h.st.PushLatestPublished(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ready, target := local.WarmCapacity(ctx, p.ID, pu); ready != 0 || target != 0 {
		t.Errorf("warm capacity before init: %d of %d, want none kept", ready, target)
	}
	if err := local.Prepare(ctx, local.ID(), pu); err != nil {
		t.Fatal(err)
	}
	layoutDir := filepath.Join(h.imagesDir, pu.ImageDigest[len("sha256:"):])
	img, err := h.images.Unpack(ctx, layoutDir, pu.ImageDigest)
	if err != nil {
		t.Fatal(err)
	}
	waitReady := func(n int) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for local.WarmReady(p.ID, img.RootFS) < n {
			if time.Now().After(deadline) {
				t.Fatalf("warm sandboxes ready: %d, want %d within a minute", local.WarmReady(p.ID, img.RootFS), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitReady(2)
	// What GET /projects/:name reports as init_status.warm_sandboxes_*.
	if ready, target := local.WarmCapacity(ctx, p.ID, pu); ready != 2 || target != 2 {
		t.Errorf("warm capacity after init: %d of %d, want 2 of 2", ready, target)
	}
	h.hostWithCache(2, cacheRoot)

	for i := range 3 {
		j := h.submit(apiv1.JobSubmit{Payload: payload(t, sandboxtest.Payload{Env: []string{"SKIFF_TASK_ID", "PROJECT_VAR"}, Cwd: true})})
		j = h.wait(j, time.Minute)
		if j.Status != store.JobCompleted {
			t.Fatalf("job %d: %s (%s)", i, j.Status, j.Error)
		}
		tasks, atts := h.tasks(j)
		r := sandboxtest.DecodeReport(t, tasks[0].Result)
		if r.Cwd != "/app" || r.Env["SKIFF_TASK_ID"] != tasks[0].ID || r.Env["PROJECT_VAR"] != "from-project" {
			t.Errorf("job %d: runner saw cwd %q, env %v", i, r.Cwd, r.Env)
		}
		// Metered from the runner's start, after the submission: the
		// sandbox's boot and wait before it are not billed.
		if len(atts) != 1 || atts[0].StartedAt == nil || atts[0].StartedAt.Before(j.SubmittedAt) ||
			atts[0].BilledSeconds != billing.MinBilledSeconds {
			t.Errorf("job %d submitted at %v: attempts %d, the last started at %v and billed %d s; want one, started after the submission, billed the minimum",
				i, j.SubmittedAt, len(atts), atts[len(atts)-1].StartedAt, atts[len(atts)-1].BilledSeconds)
		}
		if used := d.WarmUsed(); used != int64(i+1) {
			t.Fatalf("job %d: attempts run warm so far: %d, want %d", i, used, i+1)
		}
		waitReady(2) // refilled before the next job
	}

	local.Drop(ctx, local.ID(), p.ID)
	if n := local.WarmReady(p.ID, img.RootFS); n != 0 {
		t.Errorf("warm sandboxes ready after Drop: %d", n)
	}
	if ready, target := local.WarmCapacity(ctx, p.ID, pu); ready != 0 || target != 0 {
		t.Errorf("warm capacity after Drop (invalidate): %d of %d, want none kept", ready, target)
	}
	// A job after the drop starts cold and still completes.
	j := h.wait(h.submit(apiv1.JobSubmit{Payload: payload(t, sandboxtest.Payload{})}), time.Minute)
	if j.Status != store.JobCompleted || d.WarmUsed() != 3 {
		t.Errorf("job after the drop: %s, warm runs %d (want completed, cold)", j.Status, d.WarmUsed())
	}
}
