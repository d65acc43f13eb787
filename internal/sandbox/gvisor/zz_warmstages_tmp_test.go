package gvisor

import (
	"context"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
)

func TestTmpWarmStages(t *testing.T) {
	d, f := newTestDriver(t)
	spec0 := f.Spec(t, sandboxtest.Payload{})
	key, _ := sandbox.KeyOf(&spec0)
	ctx := context.Background()
	d.Warm(ctx, key, 2)
	for i := range 8 {
		waitWarm(ctx, d, key, 2, time.Minute)
		spec := f.Spec(t, sandboxtest.Payload{})
		spec.CacheDir = spec0.CacheDir
		t0 := time.Now()
		out := run(t, d, spec)
		t.Logf("run %d: total %v prepare %v sandbox %v kill %v collect %v", i, time.Since(t0), out.Stages.Prepare, out.Stages.Sandbox, out.Stages.Teardown, out.Stages.Collect)
	}
	d.DropWarm(key.CacheDir)
	d.warm.wg.Wait()
}
