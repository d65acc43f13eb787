package gvisor

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
)

func TestZZWarmStages(t *testing.T) {
	if os.Getenv("ZZ") == "" {
		t.Skip()
	}
	d, f := newTestDriver(t)
	ctx := context.Background()
	var total, sb, kill []float64
	for i := 0; i < 15; i++ {
		spec := f.Spec(t, sandboxtest.Payload{})
		key, _ := sandbox.KeyOf(&spec)
		d.Warm(ctx, key, 1)
		waitWarm(ctx, d, key, 1, time.Minute)
		time.Sleep(100 * time.Millisecond)
		t0 := time.Now()
		out := run(t, d, spec)
		total = append(total, ms(time.Since(t0)))
		sb = append(sb, ms(out.Stages.Sandbox))
		kill = append(kill, ms(out.Stages.Teardown))
		d.DropWarm(key.CacheDir)
		d.warm.wg.Wait()
		d.later.Wait()
	}
	for _, x := range []struct {
		n string
		v []float64
	}{{"total", total}, {"sandbox(exec)", sb}, {"stop", kill}} {
		slices.Sort(x.v)
		t.Logf("%s p50 %.1f min %.1f max %.1f", x.n, x.v[len(x.v)/2], x.v[0], x.v[len(x.v)-1])
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
