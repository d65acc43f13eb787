package httpapi_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/skiffhq/skiff/internal/diskfree"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/testenv"
)

// Under the data dir's free-disk watermark the writes that store more
// answer 507 with the envelope and change nothing; reads, deletions and
// cancels still work; over it again, writes work. The low reading is
// faked through the checker's Stat: filling the real disk is not an option.
func TestWritesRefusedUnderTheDiskWatermark(t *testing.T) {
	t.Parallel()
	for _, eng := range apitest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			t.Parallel()
			if eng.Skip != "" {
				testenv.Skip(t, eng.Skip)
			}
			var free atomic.Uint64
			free.Store(50 << 30)
			disk := &diskfree.Checker{Dir: "/data", Min: diskfree.Watermark{Percent: 5},
				Stat: func(string) (diskfree.Reading, error) {
					return diskfree.Reading{Free: free.Load(), Total: 100 << 30}, nil
				}}
			f := setupWith(t, eng, apitest.Options{DiskFree: disk})
			funded(100_000_000)(t, f)
			c := f.member

			free.Store(1 << 30) // 1% free, under the 5% watermark
			before := f.state(t)
			writes := []struct {
				method, path string
				body         any
				header       http.Header
			}{
				{"PUT", kvPath(fixtureProject, "new"), map[string]any{"value": 2}, nil},
				{"POST", "/api/v1/jobs", map[string]any{"project": fixtureProject, "runner_command": []string{"/r"}, "fan_out": map[string]any{"items": []any{map[string]any{}}}}, nil},
				{"POST", "/api/v1/projects", map[string]any{"name": "beta"}, nil},
				{"POST", "/api/v1/artifacts", "some bytes", http.Header{"Content-Type": {"application/octet-stream"}}},
			}
			for _, w := range writes {
				r := c.Do(t, apitest.Request{Method: w.method, Path: w.path, Body: w.body, Header: w.header})
				env := r.Fail(t, http.StatusInsufficientStorage)
				if env.Code != "insufficient_storage" || !strings.Contains(env.RecommendedAction, "retry later") ||
					env.Details["reason"] != "disk_below_watermark" {
					t.Errorf("%s %s: envelope %+v, want insufficient_storage saying what to do", w.method, w.path, env.Raw)
				}
				if strings.Contains(string(r.Body), "/data") {
					t.Errorf("%s %s: the answer names the operator's data dir: %s", w.method, w.path, r.Body)
				}
			}
			f.unchanged(t, before, "writes refused under the watermark")
			// Reads and what frees space still work.
			c.Get(t, "/api/v1/projects/"+fixtureProject).Want(t, http.StatusOK)
			c.Delete(t, kvPath(fixtureProject, fixtureKey)).Want(t, http.StatusOK)

			free.Store(10 << 30) // over the watermark again
			c.Put(t, kvPath(fixtureProject, "new"), map[string]any{"value": 2}).Want(t, http.StatusOK)
		})
	}
}
