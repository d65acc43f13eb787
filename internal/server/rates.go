package server

import (
	"context"
	"net/http"
	"time"

	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/pricefeed"
)

// followPriceFeedEvery bounds how long a controller charges the previous
// table after the price-feed duty's holder adopted a new one.
const followPriceFeedEvery = 10 * time.Second

// priceSource is where the billing service takes its rates from: the
// configured table, or a feed falling back to it. The feed is polled under
// the price-feed duty (by one controller at a time on PostgreSQL, which
// shares each good table through the store for the others to follow)
// until the server stops.
func (s *Server) priceSource() (billing.PriceSource, error) {
	rc := s.cfg.Rates
	table := rc.Table
	if table == (billing.Rates{}) {
		table = billing.DefaultRates
	}
	if err := table.Validate(); err != nil {
		return nil, err
	}
	if rc.FeedURL == "" {
		return billing.StaticRates(table), nil
	}
	log, d := s.log.With("component", "billing"), s.duties
	cfg := pricefeed.Config{URL: rc.FeedURL, Interval: rc.FeedInterval, Fallback: table,
		Client: &http.Client{Timeout: 30 * time.Second}, Clock: s.clk, Log: log}
	if d.shared {
		cfg.Shared = s.db
	}
	feed := pricefeed.New(cfg)
	s.runDuty(dutyPriceFeed, feed.Run)
	if d.shared {
		s.goBG(func(ctx context.Context) { feed.Follow(ctx, min(rc.FeedInterval, followPriceFeedEvery)) })
	}
	log.Info("price feed configured", "url", pricefeed.RedactURL(rc.FeedURL), "interval", rc.FeedInterval.String(), "shared", d.shared)
	return feed, nil
}
