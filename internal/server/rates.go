package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/pricefeed"
)

// RateConfig set the operator's market rates (billing.Rates) and an
// optional price feed that overrides them while it answers.
type RateConfig struct {
	CPUCoreHour      USDValue
	MemoryGBHour     USDValue
	GPUHour          USDValue
	DedicatedPercent int64
	FeedURL          string
	FeedInterval     time.Duration
}

// minFeedInterval keeps a misconfigured interval from hammering the feed.
const minFeedInterval = 10 * time.Second

// validate checks every rate flag and returns the flags' rate table.
func (f *RateConfig) validate() (billing.Rates, error) {
	r := billing.Rates{CPUCoreHourMicros: int64(f.CPUCoreHour), MemoryGBHourMicros: int64(f.MemoryGBHour),
		GPUHourMicros: int64(f.GPUHour), DedicatedPercent: f.DedicatedPercent}
	if err := r.Validate(); err != nil {
		return r, fmt.Errorf("--rate-* flags: %w", err)
	}
	if f.FeedURL == "" {
		return r, nil
	}
	u, err := url.Parse(f.FeedURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return r, fmt.Errorf("--price-feed-url %q: want an http:// or https:// URL", f.FeedURL)
	}
	if f.FeedInterval < minFeedInterval {
		return r, fmt.Errorf("--price-feed-interval %s: at least %s", f.FeedInterval, minFeedInterval)
	}
	return r, nil
}

// source is where the billing service takes its rates from: the flags'
// table, or a feed falling back to it. The feed is polled under the
// price-feed duty (by one controller at a time on PostgreSQL, which shares
// each good table through the store for the others to follow) until ctx
// ends.
func (f *RateConfig) source(ctx context.Context, log *slog.Logger, d *duties, db pricefeed.Shared) (billing.PriceSource, error) {
	table, err := f.validate()
	if err != nil {
		return nil, err
	}
	if f.FeedURL == "" {
		return billing.StaticRates(table), nil
	}
	cfg := pricefeed.Config{URL: f.FeedURL, Interval: f.FeedInterval, Fallback: table,
		Client: &http.Client{Timeout: 30 * time.Second}, Clock: clock.System{}, Log: log}
	if d.shared {
		cfg.Shared = db
	}
	feed := pricefeed.New(cfg)
	d.run(ctx, dutyPriceFeed, feed.Run)
	if d.shared {
		go feed.Follow(ctx, min(f.FeedInterval, followPriceFeedEvery))
	}
	log.Info("price feed configured", "url", pricefeed.RedactURL(f.FeedURL), "interval", f.FeedInterval.String(), "shared", d.shared)
	return feed, nil
}

// followPriceFeedEvery bounds how long a controller charges the previous
// table after the price-feed duty's holder adopted a new one.
const followPriceFeedEvery = 10 * time.Second

// USDValue is an amount of USD given as a decimal with at most 6 decimals,
// parsed exactly (apiv1.ParseUSD); negative amounts are refused here, zero
// and out-of-range ones by billing.Rates.Validate.
type USDValue apiv1.USD

func (u *USDValue) String() string { return apiv1.USD(*u).String() }

func (u *USDValue) Set(s string) error {
	v, err := apiv1.ParseUSD(s)
	if err != nil {
		return err
	}
	if v < 0 {
		return errors.New("must not be negative")
	}
	*u = USDValue(v)
	return nil
}
