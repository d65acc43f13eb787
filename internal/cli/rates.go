package cli

import (
	"flag"

	"github.com/skiffhq/skiff/internal/server"
)

func registerRates(fs *flag.FlagSet, f *server.RateConfig) {
	fs.Var(&f.CPUCoreHour, "rate-cpu-core-hour-usd", "market rate of one CPU core per hour in USD, at most 6 decimals; the billed rate adds the 35% markup (env SKIFF_RATE_CPU_CORE_HOUR_USD)")
	fs.Var(&f.MemoryGBHour, "rate-memory-gb-hour-usd", "market rate of one GiB of memory per hour in USD (env SKIFF_RATE_MEMORY_GB_HOUR_USD)")
	fs.Var(&f.GPUHour, "rate-gpu-hour-usd", "market rate of one GPU per hour in USD (env SKIFF_RATE_GPU_HOUR_USD)")
	fs.Int64Var(&f.DedicatedPercent, "rate-dedicated-percent", f.DedicatedPercent, "what placement_policy dedicated costs relative to shared, 100 to 1000 (env SKIFF_RATE_DEDICATED_PERCENT)")
	fs.StringVar(&f.FeedURL, "price-feed-url", f.FeedURL, "http(s) URL of a JSON rate table polled for live market rates; the rate flags apply until it first answers and whenever it fails (env SKIFF_PRICE_FEED_URL)")
	fs.DurationVar(&f.FeedInterval, "price-feed-interval", f.FeedInterval, "how often --price-feed-url is polled, at least 10s (env SKIFF_PRICE_FEED_INTERVAL)")
}
