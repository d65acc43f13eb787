package pricefeed_test

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/pricefeed"
	"github.com/skiffhq/skiff/internal/store/sqlite"
)

// With several controllers on one database, the one holding the
// price-feed duty polls and shares each good table through the store; the
// others adopt it (never an older one), and keep their last good table
// while the store has nothing newer.
func TestSharedThroughTheStore(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "skiff.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(t.Context(), time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	first := billing.Rates{CPUCoreHourMicros: 40_000, MemoryGBHourMicros: 1_000, GPUHourMicros: 1, DedicatedPercent: 150}
	second := billing.Rates{CPUCoreHourMicros: 50_000, MemoryGBHourMicros: 2_000, GPUHourMicros: 2, DedicatedPercent: 150}
	srv := &feedServer{answers: []feedAnswer{{http.StatusOK, ratesJSON(t, first)}, {http.StatusOK, ratesJSON(t, second)}}}
	clk := clock.NewFake(time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC))
	cfg := pricefeed.Config{URL: "http://feed.test/rates", Interval: time.Minute, Fallback: billing.DefaultRates,
		Client: inMemory(srv), Clock: clk, Shared: db}
	poller, follower := pricefeed.New(cfg), pricefeed.New(cfg)

	if err := follower.Refresh(t.Context()); err != nil || follower.Rates() != billing.DefaultRates {
		t.Fatalf("follower before any poll: %+v, %v; want the fallback", follower.Rates(), err)
	}
	if err := poller.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := follower.Refresh(t.Context()); err != nil || follower.Rates() != first || !follower.Updated().Equal(clk.Now()) {
		t.Fatalf("follower after the first poll: %+v at %s, %v; want %+v", follower.Rates(), follower.Updated(), err, first)
	}
	clk.Advance(time.Minute)
	if err := poller.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := follower.Refresh(t.Context()); err != nil || follower.Rates() != second {
		t.Fatalf("follower after the second poll: %+v, %v; want %+v", follower.Rates(), err, second)
	}
	if srv.count() != 2 {
		t.Errorf("the feed was polled %d times, want 2: followers never poll", srv.count())
	}
	// A holder that lost its duty and writes late, with an older clock
	// reading, rolls nothing back.
	if err := db.SharedValuePut(t.Context(), "price_feed.rates", []byte(ratesJSON(t, first)), clk.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := follower.Refresh(t.Context()); err != nil || follower.Rates() != second {
		t.Fatalf("follower after a late stale write: %+v, %v; want %+v", follower.Rates(), err, second)
	}
	// A corrupt shared value is an error and keeps the last good table.
	if err := db.SharedValuePut(t.Context(), "price_feed.rates", []byte(`{"cpu_core_hour_micros": -1}`), clk.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := follower.Refresh(t.Context()); err == nil || follower.Rates() != second {
		t.Fatalf("follower after an invalid shared table: %+v, %v; want an error and %+v", follower.Rates(), err, second)
	}
}
