package billing_test

import (
	"testing"
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
	s := billing.New(nil, clock.NewFake(time.Unix(0, 0)), nil)
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
