package e2e_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
)

// The rate flags and the price feed set what GET /api/v1/presets (and so
// every admission) charges.
func TestServerRatesAndFeed(t *testing.T) {
	t.Parallel()
	presets := func(t *testing.T, srv *server, key string) apiv1.PresetList {
		t.Helper()
		var l apiv1.PresetList
		srv.client(t, key).Get(t, "/api/v1/presets").JSON(t, http.StatusOK, &l)
		return l
	}
	newKey := func(t *testing.T, dir string) string {
		t.Helper()
		r := skiff(t, nil, "admin", "create-key", "--data-dir", dir, "--account", "acme")
		if r.code != 0 {
			t.Fatalf("create-key: %d %s", r.code, r.stderr)
		}
		return strings.TrimSpace(r.stdout)
	}

	t.Run("flags", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "data")
		srv := startServer(t, envList("SKIFF_RATE_GPU_HOUR_USD", "2"), "--data-dir", dir, "--listen", "127.0.0.1:0",
			"--no-local-host", "--rate-cpu-core-hour-usd", "0.05", "--rate-memory-gb-hour-usd", "0", "--rate-dedicated-percent", "200")
		l := presets(t, srv, newKey(t, dir))
		p := l.Pricing
		if p.MarketRates != (apiv1.UnitRates{CPUCoreHourUSD: 50_000, MemoryGBHourUSD: 0, GPUHourUSD: 2_000_000}) || p.DedicatedPercent != 200 {
			t.Errorf("pricing: got %+v", p)
		}
		// cpu-small: 1 core at 0.05, memory free: 0.0675 billed, 0.135 dedicated.
		if s := l.Presets[0]; s.Name != "cpu-small" || s.RateUSDPerHour != 67_500 || s.DedicatedRateUSDPerHour != 135_000 {
			t.Errorf("cpu-small: got %+v", s)
		}
		srv.stop(t, 10*time.Second)
	})

	t.Run("feed", func(t *testing.T) {
		t.Parallel()
		var polls atomic.Int64
		feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			polls.Add(1)
			_ = json.NewEncoder(w).Encode(map[string]int64{"cpu_core_hour_micros": 100_000, "memory_gb_hour_micros": 10_000,
				"gpu_hour_micros": 1_000_000, "dedicated_percent": 120})
		}))
		t.Cleanup(feed.Close)
		dir := filepath.Join(t.TempDir(), "data")
		srv := startServer(t, nil, "--data-dir", dir, "--listen", "127.0.0.1:0", "--no-local-host",
			"--price-feed-url", feed.URL+"/rates?token=t0k3n", "--price-feed-interval", "10s")
		key := newKey(t, dir)
		deadline := time.Now().Add(10 * time.Second)
		for {
			l := presets(t, srv, key)
			if l.Pricing.MarketRates.CPUCoreHourUSD == 100_000 {
				// 1 core + 2 GiB = 0.12 market, 0.162 billed.
				if s := l.Presets[0]; s.RateUSDPerHour != 162_000 || l.Pricing.DedicatedPercent != 120 {
					t.Errorf("priced from the feed: got %+v %+v", s, l.Pricing)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 10 s (%d polls) the presets show %+v, not the feed's rates", polls.Load(), l.Pricing)
			}
			time.Sleep(50 * time.Millisecond)
		}
		srv.stop(t, 10*time.Second)
		if strings.Contains(srv.logText(), "t0k3n") {
			t.Errorf("the log shows the feed's token:\n%s", srv.logText())
		}
	})
}
