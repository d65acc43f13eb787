package cli

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/server"
)

// rateFlags set the operator's market rates (billing.Rates) and an
// optional price feed that overrides them while it answers.
type rateFlags struct {
	cpuCoreHour      usdFlag
	memoryGBHour     usdFlag
	gpuHour          usdFlag
	dedicatedPercent int64
	feedURL          string
	feedInterval     time.Duration
}

// minFeedInterval keeps a misconfigured interval from hammering the feed.
const minFeedInterval = 10 * time.Second

func (f *rateFlags) register(fs *flag.FlagSet) {
	d := billing.DefaultRates
	f.cpuCoreHour, f.memoryGBHour, f.gpuHour = usdFlag(d.CPUCoreHourMicros), usdFlag(d.MemoryGBHourMicros), usdFlag(d.GPUHourMicros)
	fs.Var(&f.cpuCoreHour, "rate-cpu-core-hour-usd", "market rate of one CPU core per hour in USD, at most 6 decimals; the billed rate adds the 35% markup (env SKIFF_RATE_CPU_CORE_HOUR_USD)")
	fs.Var(&f.memoryGBHour, "rate-memory-gb-hour-usd", "market rate of one GiB of memory per hour in USD (env SKIFF_RATE_MEMORY_GB_HOUR_USD)")
	fs.Var(&f.gpuHour, "rate-gpu-hour-usd", "market rate of one GPU per hour in USD (env SKIFF_RATE_GPU_HOUR_USD)")
	fs.Int64Var(&f.dedicatedPercent, "rate-dedicated-percent", d.DedicatedPercent, "what placement_policy dedicated costs relative to shared, 100 to 1000 (env SKIFF_RATE_DEDICATED_PERCENT)")
	fs.StringVar(&f.feedURL, "price-feed-url", "", "http(s) URL of a JSON rate table polled for live market rates; the rate flags apply until it first answers and whenever it fails (env SKIFF_PRICE_FEED_URL)")
	fs.DurationVar(&f.feedInterval, "price-feed-interval", 5*time.Minute, "how often --price-feed-url is polled, at least 10s (env SKIFF_PRICE_FEED_INTERVAL)")
}

// validate checks every rate flag and returns the flags' rate table.
func (f *rateFlags) validate() (billing.Rates, error) {
	r := billing.Rates{CPUCoreHourMicros: int64(f.cpuCoreHour), MemoryGBHourMicros: int64(f.memoryGBHour),
		GPUHourMicros: int64(f.gpuHour), DedicatedPercent: f.dedicatedPercent}
	if err := r.Validate(); err != nil {
		return r, fmt.Errorf("--rate-* flags: %w", err)
	}
	if f.feedURL == "" {
		return r, nil
	}
	u, err := url.Parse(f.feedURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return r, fmt.Errorf("--price-feed-url %q: want an http:// or https:// URL", f.feedURL)
	}
	if f.feedInterval < minFeedInterval {
		return r, fmt.Errorf("--price-feed-interval %s: at least %s", f.feedInterval, minFeedInterval)
	}
	return r, nil
}

// config is the rates part of the server's configuration.
func (f *rateFlags) config() (server.RatesConfig, error) {
	table, err := f.validate()
	if err != nil {
		return server.RatesConfig{}, err
	}
	return server.RatesConfig{Table: table, FeedURL: f.feedURL, FeedInterval: f.feedInterval}, nil
}

// usdFlag is an amount of USD given as a decimal with at most 6 decimals,
// parsed exactly (apiv1.ParseUSD); negative amounts are refused here, zero
// and out-of-range ones by billing.Rates.Validate.
type usdFlag apiv1.USD

func (u *usdFlag) String() string { return apiv1.USD(*u).String() }

func (u *usdFlag) Set(s string) error {
	v, err := apiv1.ParseUSD(s)
	if err != nil {
		return err
	}
	if v < 0 {
		return errors.New("must not be negative")
	}
	*u = usdFlag(v)
	return nil
}
