package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/store"
)

// A queued job whose tasks no host of the service could take says so in
// its recommended_action, naming what it asks for beyond every host; one a
// host could take (or one on a service with no host yet) says nothing; the
// advice goes once the requirements are lowered.
func testPlacementAdvice(t *testing.T, f *fixture) {
	plain := submitJob(t, f.member, nil)
	if a := getJob(t, f.member, plain.ID).RecommendedAction; a != nil {
		t.Errorf("with no host known, a queued job advises %q, want nothing", *a)
	}
	// One enrolled GPU host: 8 cores, 64 GiB, one GPU of 24 GB.
	ctx := t.Context()
	if _, err := f.e.Store.HostCreate(ctx, &store.HostCreateParams{ID: "wkr_gpu1", Name: "gpu1", WorkKinds: "cpu,gpu", RatePercent: 100,
		CPUs: 8, MemoryMB: 64 << 10, GPUs: 1, Profile: json.RawMessage(`{"gpu_count":1,"gpu_memory_mb":24000,"single_core_score":1.1}`),
		CredentialHash: "h1", Now: f.e.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := f.e.Store.HostSeen(ctx, "wkr_gpu1", f.e.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	f.e.Clock.Advance(3 * time.Second) // past the views' cache of the hosts' shapes

	for name, c := range map[string]struct {
		reqs map[string]any
		want []string // "" entries: no advice
	}{
		"fits":          {map[string]any{"gpu_count": 1, "gpu_memory_mb": 20000, "cpu": 4}, nil},
		"two GPUs":      {map[string]any{"gpu_count": 2}, []string{"gpu_count 2 (the most any host has is 1)", "PATCH /api/v1/jobs/"}},
		"a larger GPU":  {map[string]any{"gpu_count": 1, "gpu_memory_mb": 40000}, []string{"gpu_memory_mb 40000 (the largest GPU has 24000)"}},
		"more cores":    {map[string]any{"cpu": 16}, []string{"cpu 16 (the most any host has is 8)"}},
		"a faster core": {map[string]any{"min_single_core_score": 2.5}, []string{"min_single_core_score 2.5"}},
	} {
		j := submitJob(t, f.member, map[string]any{"requirements": c.reqs})
		got := getJob(t, f.member, j.ID)
		switch {
		case c.want == nil && got.RecommendedAction != nil:
			t.Errorf("%s: advises %q, want nothing", name, *got.RecommendedAction)
		case c.want != nil && got.RecommendedAction == nil:
			t.Errorf("%s: no advice, want one naming %q", name, c.want)
		case c.want != nil:
			for _, w := range c.want {
				if !strings.Contains(*got.RecommendedAction, w) {
					t.Errorf("%s: advice %q does not say %q", name, *got.RecommendedAction, w)
				}
			}
			if got.Status != "queued" {
				t.Errorf("%s: status %s, want queued (a larger host may join)", name, got.Status)
			}
		}
	}

	// Lowering the requirements takes the advice away.
	j := submitJob(t, f.member, map[string]any{"requirements": map[string]any{"gpu_count": 2}})
	f.member.Do(t, apitest.Request{Method: "PATCH", Path: jobPath(j.ID, "/requirements"), Body: map[string]any{"gpu_count": 1}}).
		Want(t, http.StatusOK)
	if a := getJob(t, f.member, j.ID).RecommendedAction; a != nil {
		t.Errorf("after lowering gpu_count to 1: advises %q, want nothing", *a)
	}
}
