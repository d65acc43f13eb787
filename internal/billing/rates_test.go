package billing_test

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
)

func TestBilledRate(t *testing.T) {
	t.Parallel()
	r := billing.DefaultRates
	for _, tc := range []struct {
		name           string
		c              billing.Capacity
		market, billed int64
	}{
		{"default task", billing.Capacity{CPU: 1, MemoryMB: 2048}, 25_000, 33_750},
		{"half a core", billing.Capacity{CPU: 0.5, MemoryMB: 512}, 10_000 + 1_250, 15_188}, // 15187.5 rounds up
		{"one GPU", billing.Capacity{CPU: 8, MemoryMB: 32768, GPUs: 1}, 840_000, 1_134_000},
		{"dedicated", billing.Capacity{CPU: 1, MemoryMB: 2048, Dedicated: true}, 37_500, 50_625},
		{"memory rounds up", billing.Capacity{CPU: 1, MemoryMB: 1}, 20_003, 27_005},
	} {
		if got := r.MarketMicrosPerHour(tc.c); got != tc.market {
			t.Errorf("%s: got market %d, want %d", tc.name, got, tc.market)
		}
		if got := r.BilledMicrosPerHour(tc.c); got != tc.billed {
			t.Errorf("%s: got billed %d, want %d", tc.name, got, tc.billed)
		}
	}
}

func TestAttemptCost(t *testing.T) {
	t.Parallel()
	const rate = 33_750 // micro-USD per hour
	for _, tc := range []struct {
		name        string
		runtime     time.Duration
		timeoutS    int64
		secs, micro int64
	}{
		{"instant: the 60 s minimum", 0, 3600, 60, 563},
		{"under a minute", 59*time.Second + time.Millisecond, 3600, 60, 563},
		{"a fraction of a second rounds up", 90*time.Second + time.Nanosecond, 3600, 91, 854},
		{"an hour", time.Hour, 3600, 3600, 33_750},
		{"past the timeout: capped", 2 * time.Hour, 600, 600, 5625},
		{"a timeout under the minimum still bills 60 s", 30 * time.Second, 10, 60, 563},
	} {
		secs, micro := billing.AttemptCost(rate, tc.runtime, tc.timeoutS)
		if secs != tc.secs || micro != tc.micro {
			t.Errorf("%s: got %d s, %d micro-USD; want %d s, %d", tc.name, secs, micro, tc.secs, tc.micro)
		}
	}
}

// The estimate is tasks x (1 + max_retries) x rate x max(60, cap), the cap
// being timeout_s or a smaller runtime_hint_s.
func TestQuote(t *testing.T) {
	t.Parallel()
	s := billing.New(nil, clock.NewFake(time.Unix(0, 0)))
	for _, tc := range []struct {
		name           string
		shape          billing.JobShape
		capS, perAtt   int64
		total, rate    int64
		class, runtime string
	}{
		{"default", billing.JobShape{Tasks: 1, TimeoutS: 3600, Capacity: billing.Capacity{CPU: 1, MemoryMB: 2048}},
			3600, 33_750, 33_750, 33_750, "cpu-1c-2048mb", "standard"},
		{"retries and tasks", billing.JobShape{Tasks: 3, MaxRetries: 2, TimeoutS: 600, Capacity: billing.Capacity{CPU: 1, MemoryMB: 2048}},
			600, 5625, 9 * 5625, 33_750, "cpu-1c-2048mb", "standard"},
		{"hint below timeout", billing.JobShape{Tasks: 1, TimeoutS: 3600, RuntimeHintS: 120, Capacity: billing.Capacity{CPU: 1, MemoryMB: 2048}},
			120, 1125, 1125, 33_750, "cpu-1c-2048mb", "short"},
		{"hint above timeout is ignored", billing.JobShape{Tasks: 1, TimeoutS: 60, RuntimeHintS: 600, Capacity: billing.Capacity{CPU: 1, MemoryMB: 2048}},
			60, 563, 563, 33_750, "cpu-1c-2048mb", "short"},
		{"gpu dedicated", billing.JobShape{Tasks: 1, TimeoutS: 86400 * 2, Profile: "gpu", Capacity: billing.Capacity{CPU: 8, MemoryMB: 32768, GPUs: 1, Dedicated: true}},
			172800, 81_648_000, 81_648_000, 1_701_000, "gpu-1x-8c-32768mb-dedicated", "extended"},
	} {
		b, rate := s.Quote(tc.shape)
		e := b.Estimate
		if rate != tc.rate || e.RuntimeCapS != tc.capS || int64(e.PerAttemptUSD) != tc.perAtt || int64(e.TotalUSD) != tc.total ||
			b.Admission.EstimatedHoldUSD != e.TotalUSD || b.Admission.ResourceClass != tc.class || b.Admission.RuntimeClass != tc.runtime ||
			e.MarkupPercent != 35 || !e.Authoritative {
			t.Errorf("%s: got rate %d, %+v %+v", tc.name, rate, e, b.Admission)
		}
	}
}

func TestRatesValidate(t *testing.T) {
	t.Parallel()
	ok := billing.DefaultRates
	if err := ok.Validate(); err != nil {
		t.Fatalf("DefaultRates: %v", err)
	}
	free := ok
	free.MemoryGBHourMicros = 0
	if err := free.Validate(); err != nil {
		t.Errorf("free memory: %v, want valid", err)
	}
	for name, mod := range map[string]func(*billing.Rates){
		"zero cpu":            func(r *billing.Rates) { r.CPUCoreHourMicros = 0 },
		"negative cpu":        func(r *billing.Rates) { r.CPUCoreHourMicros = -1 },
		"negative memory":     func(r *billing.Rates) { r.MemoryGBHourMicros = -1 },
		"zero gpu":            func(r *billing.Rates) { r.GPUHourMicros = 0 },
		"huge gpu":            func(r *billing.Rates) { r.GPUHourMicros = 1_000_000_001 },
		"dedicated under 100": func(r *billing.Rates) { r.DedicatedPercent = 99 },
		"dedicated over 1000": func(r *billing.Rates) { r.DedicatedPercent = 1001 },
	} {
		r := ok
		mod(&r)
		if err := r.Validate(); err == nil {
			t.Errorf("%s: got valid, want an error", name)
		}
	}
}

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
func TestFeedKeepsLastGood(t *testing.T) {
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
	f := &billing.Feed{URL: ts.URL, Interval: time.Minute, Fallback: billing.DefaultRates}
	ctx := t.Context()

	if err := f.Poll(ctx); err == nil || f.Rates() != billing.DefaultRates {
		t.Fatalf("failing before any good answer: got %v, rates %+v; want an error and the fallback", err, f.Rates())
	}
	if err := f.Poll(ctx); err != nil || f.Rates() != good {
		t.Fatalf("good answer: got %v, rates %+v; want %+v", err, f.Rates(), good)
	}
	for i := range 7 {
		if err := f.Poll(ctx); err == nil {
			t.Errorf("bad answer %d: got no error", i)
		}
		if f.Rates() != good {
			t.Errorf("bad answer %d replaced the last good rates: got %+v", i, f.Rates())
		}
	}
	if err := f.Poll(ctx); err != nil || f.Rates() != better {
		t.Errorf("next good answer: got %v, rates %+v; want %+v", err, f.Rates(), better)
	}
	ts.Close()
	if err := f.Poll(ctx); err == nil || f.Rates() != better {
		t.Errorf("server gone: got %v, rates %+v; want an error and the last good rates", err, f.Rates())
	}
}

// A table without dedicated_percent keeps the fallback's.
func TestFeedDedicatedDefault(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(&feedServer{answers: []feedAnswer{
		{http.StatusOK, `{"cpu_core_hour_micros": 1, "memory_gb_hour_micros": 0, "gpu_hour_micros": 2}`}}})
	t.Cleanup(ts.Close)
	f := &billing.Feed{URL: ts.URL, Interval: time.Minute, Fallback: billing.DefaultRates}
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
func TestFeedRun(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		good := billing.Rates{CPUCoreHourMicros: 40_000, MemoryGBHourMicros: 0, GPUHourMicros: 1, DedicatedPercent: 100}
		srv := &feedServer{answers: []feedAnswer{{http.StatusOK, ratesJSON(t, good)}}}
		const interval = time.Minute
		f := &billing.Feed{URL: "http://feed.test/rates", Interval: interval, Fallback: billing.DefaultRates,
			Client: inMemory(srv)}
		svc := billing.New(nil, clock.NewFake(time.Unix(0, 0)))
		svc.SetRates(f)
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
func TestFeedLogRedactsURL(t *testing.T) {
	t.Parallel()
	// Run's first poll fails and is logged; in a synctest bubble it is
	// logged by the time every goroutine waits.
	var f *billing.Feed
	synctest.Test(t, func(t *testing.T) {
		var logs strings.Builder
		lw := &lockedWriter{w: &logs}
		f = &billing.Feed{URL: "http://user:secret@feed.test/rates?token=s3cr3t", Interval: time.Hour,
			Fallback: billing.DefaultRates, Log: slog.New(slog.NewTextHandler(lw, nil)),
			Client: inMemory(&feedServer{answers: []feedAnswer{{http.StatusBadGateway, ``}}})}
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
	f.Client = nil
	// Unreachable: the transport error must not carry the URL either.
	f.URL = "http://user:secret@127.0.0.1:1/rates?token=s3cr3t"
	if err := f.Poll(t.Context()); err == nil || strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "secret") {
		t.Errorf("unreachable feed: got %v, want an error without the credentials", err)
	}
}
