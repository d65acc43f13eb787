package billing

import (
	"errors"
	"time"
)

// MarkupPercent is the service markup over the live market rate (spec 1).
const MarkupPercent = 35

// MinBilledSeconds is the least an attempt is billed (spec 1, 8).
const MinBilledSeconds = 60

// Rates is the market price of capacity, in micro-USD per hour. A task's
// market rate is the sum of its parts: cpu cores, memory and GPUs of its
// requirements, times the placement multiplier; the billed rate adds the
// markup.
type Rates struct {
	CPUCoreHourMicros  int64 `json:"cpu_core_hour_micros"`
	MemoryGBHourMicros int64 `json:"memory_gb_hour_micros"` // per GiB (1024 MB)
	GPUHourMicros      int64 `json:"gpu_hour_micros"`       // per GPU
	// DedicatedPercent is what placement_policy "dedicated" costs relative
	// to "shared" (150: half as much again).
	DedicatedPercent int64 `json:"dedicated_percent"`
}

// DefaultRates is the built-in rate table: what the operator charges when
// no feed says otherwise. 0.02 USD per core-hour, 0.0025 USD per GiB-hour,
// 0.60 USD per GPU-hour; dedicated placement costs 1.5 times shared.
var DefaultRates = Rates{CPUCoreHourMicros: 20_000, MemoryGBHourMicros: 2_500, GPUHourMicros: 600_000, DedicatedPercent: 150}

// Validate checks a rate table (from config or a feed).
func (r Rates) Validate() error {
	if r.CPUCoreHourMicros <= 0 || r.MemoryGBHourMicros < 0 || r.GPUHourMicros <= 0 {
		return errors.New("rates: cpu and gpu rates must be positive, memory not negative")
	}
	if r.DedicatedPercent < 100 || r.DedicatedPercent > 1000 {
		return errors.New("rates: dedicated_percent must be 100 to 1000")
	}
	const max = 1_000_000_000 // 1000 USD per unit-hour: a typo, not a price
	if r.CPUCoreHourMicros > max || r.MemoryGBHourMicros > max || r.GPUHourMicros > max {
		return errors.New("rates: a unit rate above 1000 USD per hour")
	}
	return nil
}

// Capacity is what a task asks for, as billing sees it.
type Capacity struct {
	CPU       float64
	MemoryMB  int64
	GPUs      int64
	Dedicated bool
}

// MarketMicrosPerHour is the market rate of c, rounded up to a micro-USD.
func (r Rates) MarketMicrosPerHour(c Capacity) int64 {
	// Millicores and MB keep the arithmetic in integers.
	milli := int64(c.CPU*1000 + 0.5)
	m := ceilDiv(milli*r.CPUCoreHourMicros, 1000) + ceilDiv(c.MemoryMB*r.MemoryGBHourMicros, 1024) + c.GPUs*r.GPUHourMicros
	if c.Dedicated {
		m = ceilDiv(m*r.DedicatedPercent, 100)
	}
	return m
}

// BilledMicrosPerHour is the market rate plus the markup.
func (r Rates) BilledMicrosPerHour(c Capacity) int64 {
	return ceilDiv(r.MarketMicrosPerHour(c)*(100+MarkupPercent), 100)
}

// AttemptCost is what an attempt that ran for runtime costs at rate
// (micro-USD per hour): billed per second, rounded up, at least
// MinBilledSeconds and at most timeoutS (when timeoutS is at least the
// minimum), rounded up to a whole micro-USD.
func AttemptCost(rate int64, runtime time.Duration, timeoutS int64) (billedSeconds, micros int64) {
	secs := int64((runtime + time.Second - 1) / time.Second)
	if timeoutS > 0 && secs > timeoutS {
		secs = timeoutS
	}
	secs = max(secs, MinBilledSeconds)
	return secs, ceilDiv(rate*secs, 3600)
}

func ceilDiv(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	return (a + b - 1) / b
}

// PriceSource gives the current rates: StaticRates, or a feed the
// composition root polls (internal/pricefeed).
type PriceSource interface {
	Rates() Rates
}

// StaticRates is a fixed rate table.
type StaticRates Rates

func (s StaticRates) Rates() Rates { return Rates(s) }
