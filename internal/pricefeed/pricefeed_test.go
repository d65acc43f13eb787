package pricefeed_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/pricefeed"
)

// feedServer answers each GET with the next of its answers (the last one
// repeated), counting requests.
type feedServer struct {
	mu      sync.Mutex
	answers []feedAnswer
	hits    int
}

type feedAnswer struct {
	status int
	body   string
}

func (s *feedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	a := s.answers[min(s.hits, len(s.answers)-1)]
	s.hits++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	_, _ = w.Write([]byte(a.body))
}

func ratesJSON(t *testing.T, r billing.Rates) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The feed adopts a good table and keeps it through every kind of bad
// answer: invalid JSON, an error status, values that fail validation, an
// unknown field, a server that is gone.
func TestKeepsLastGood(t *testing.T) {
	t.Parallel()
	good := billing.Rates{CPUCoreHourMicros: 30_000, MemoryGBHourMicros: 3_000, GPUHourMicros: 900_000, DedicatedPercent: 200}
	better := good
	better.CPUCoreHourMicros = 25_000
	srv := &feedServer{answers: []feedAnswer{
		{http.StatusInternalServerError, `{}`},
		{http.StatusOK, ratesJSON(t, good)},
		{http.StatusOK, `{"cpu_core_hour_micros": 1`},
		{http.StatusInternalServerError, ratesJSON(t, better)},
		{http.StatusOK, `{"cpu_core_hour_micros": 0, "memory_gb_hour_micros": 1, "gpu_hour_micros": 1}`},
		{http.StatusOK, `{"cpu_core_hour_micros": -5, "memory_gb_hour_micros": 1, "gpu_hour_micros": 1}`},
		{http.StatusOK, `{"cpu_core_hour_usd": 0.03, "memory_gb_hour_micros": 1, "gpu_hour_micros": 1}`},
		{http.StatusOK, `{"cpu_core_hour_micros": "30000", "memory_gb_hour_micros": 1, "gpu_hour_micros": 1}`},
		{http.StatusOK, `[]`},
		{http.StatusOK, ratesJSON(t, better)},
	}}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	clk := clock.NewFake(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	f := pricefeed.New(pricefeed.Config{URL: ts.URL, Interval: time.Minute, Fallback: billing.DefaultRates, Clock: clk})
	ctx := t.Context()

	if err := f.Poll(ctx); err == nil || f.Rates() != billing.DefaultRates || !f.Updated().IsZero() {
		t.Fatalf("failing before any good answer: got %v, rates %+v, updated %v; want an error, the fallback and no update",
			err, f.Rates(), f.Updated())
	}
	adopted := clk.Now()
	if err := f.Poll(ctx); err != nil || f.Rates() != good || !f.Updated().Equal(adopted) {
		t.Fatalf("good answer: got %v, rates %+v, updated %v; want %+v at %v", err, f.Rates(), f.Updated(), good, adopted)
	}
	for i := range 7 {
		clk.Advance(time.Minute)
		if err := f.Poll(ctx); err == nil {
			t.Errorf("bad answer %d: got no error", i)
		}
		if f.Rates() != good || !f.Updated().Equal(adopted) {
			t.Errorf("bad answer %d replaced the last good rates: got %+v, updated %v", i, f.Rates(), f.Updated())
		}
	}
	clk.Advance(time.Minute)
	if err := f.Poll(ctx); err != nil || f.Rates() != better || !f.Updated().Equal(clk.Now()) {
		t.Errorf("next good answer: got %v, rates %+v, updated %v; want %+v at %v", err, f.Rates(), f.Updated(), better, clk.Now())
	}
	ts.Close()
	if err := f.Poll(ctx); err == nil || f.Rates() != better {
		t.Errorf("server gone: got %v, rates %+v; want an error and the last good rates", err, f.Rates())
	}
}

// A table without dedicated_percent keeps the fallback's.
func TestDedicatedDefault(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(&feedServer{answers: []feedAnswer{
		{http.StatusOK, `{"cpu_core_hour_micros": 1, "memory_gb_hour_micros": 0, "gpu_hour_micros": 2}`}}})
	t.Cleanup(ts.Close)
	f := pricefeed.New(pricefeed.Config{URL: ts.URL, Interval: time.Minute, Fallback: billing.DefaultRates})
	if err := f.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	if want := (billing.Rates{CPUCoreHourMicros: 1, GPUHourMicros: 2, DedicatedPercent: 150}); f.Rates() != want {
		t.Errorf("got %+v, want %+v", f.Rates(), want)
	}
}

// Run polls at once and then once per interval until its context ends; a
// billing service reading from it prices at the feed's rates. The test runs
// in a synctest bubble: the feed's ticker runs on fake time and the feed
// server is called in memory, so every poll is counted exactly.
func TestRun(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		good := billing.Rates{CPUCoreHourMicros: 40_000, MemoryGBHourMicros: 0, GPUHourMicros: 1, DedicatedPercent: 100}
		srv := &feedServer{answers: []feedAnswer{{http.StatusOK, ratesJSON(t, good)}}}
		const interval = time.Minute
		f := pricefeed.New(pricefeed.Config{URL: "http://feed.test/rates", Interval: interval, Fallback: billing.DefaultRates,
			Client: inMemory(srv)})
		svc := billing.New(nil, clock.NewFake(time.Unix(0, 0)), f)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { f.Run(ctx); close(done) }()

		synctest.Wait()
		if hits := srv.count(); hits != 1 || svc.Rates() != good {
			t.Fatalf("at start: %d polls, rates %+v; want 1 poll and %+v", hits, svc.Rates(), good)
		}
		time.Sleep(interval - time.Nanosecond)
		synctest.Wait()
		if hits := srv.count(); hits != 1 {
			t.Fatalf("just before the first interval ends: %d polls, want 1", hits)
		}
		for want := 2; want <= 3; want++ {
			time.Sleep(interval)
			synctest.Wait()
			if hits := srv.count(); hits != want {
				t.Fatalf("after %d intervals: %d polls, want %d", want-1, hits, want)
			}
		}
		if _, rate := svc.Quote(billing.JobShape{Tasks: 1, TimeoutS: 3600, Capacity: billing.Capacity{CPU: 1, MemoryMB: 2048}}); rate != 54_000 {
			t.Errorf("priced at %d micro-USD per hour, want the feed's 40000 + 35%%", rate)
		}
		cancel()
		<-done // a Run that ignored its context would leave the bubble deadlocked, failing the test
	})
}

func (s *feedServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits
}

// inMemory is a client that hands each request straight to h, so that
// tests in a synctest bubble need no real network.
func inMemory(h http.Handler) *http.Client {
	return &http.Client{Transport: handlerTransport{h}}
}

type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A failing feed is logged without its token.
func TestLogRedactsURL(t *testing.T) {
	t.Parallel()
	// Run's first poll fails and is logged; in a synctest bubble it is
	// logged by the time every goroutine waits.
	synctest.Test(t, func(t *testing.T) {
		var logs strings.Builder
		lw := &lockedWriter{w: &logs}
		f := pricefeed.New(pricefeed.Config{URL: "http://user:secret@feed.test/rates?token=s3cr3t", Interval: time.Hour,
			Fallback: billing.DefaultRates, Log: slog.New(slog.NewTextHandler(lw, nil)),
			Client: inMemory(&feedServer{answers: []feedAnswer{{http.StatusBadGateway, ``}}})})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { f.Run(ctx); close(done) }()
		synctest.Wait()
		lw.mu.Lock()
		out := logs.String()
		lw.mu.Unlock()
		if !strings.Contains(out, "price feed failed") {
			t.Errorf("no failure logged: %q", out)
		}
		if strings.Contains(out, "s3cr3t") || strings.Contains(out, "secret") || !strings.Contains(out, "/rates") {
			t.Errorf("log shows the feed's credentials or no path: %s", out)
		}
		cancel()
		<-done
	})
	// Unreachable: the transport error must not carry the URL either.
	f := pricefeed.New(pricefeed.Config{URL: "http://user:secret@127.0.0.1:1/rates?token=s3cr3t", Interval: time.Hour,
		Fallback: billing.DefaultRates})
	if err := f.Poll(t.Context()); err == nil || strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "secret") {
		t.Errorf("unreachable feed: got %v, want an error without the credentials", err)
	}
}
