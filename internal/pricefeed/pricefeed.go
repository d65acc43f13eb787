// Package pricefeed polls an operator's HTTP price feed for the market
// rates billing charges from. It is an adapter: billing owns the rate table
// and its rules (billing.Rates, billing.PriceSource) and never does I/O for
// them; the composition root starts a Feed and hands it to billing.
package pricefeed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/store"
)

var _ billing.PriceSource = (*Feed)(nil)

// Config configures a Feed.
type Config struct {
	// URL answers GET with a JSON rate table (billing.Rates' fields). It may
	// carry a token; it is logged only through RedactURL.
	URL string
	// Interval is the time between polls. Required (positive).
	Interval time.Duration
	// Fallback is given until the first good answer, and fills in a table's
	// missing dedicated_percent.
	Fallback billing.Rates
	// Client defaults to http.DefaultClient; each poll is also bounded by
	// a 10 s timeout of its own.
	Client *http.Client
	// Clock stamps adopted tables (Updated). Default clock.System.
	Clock clock.Clock
	// Log receives failed polls. Default: discarded.
	Log *slog.Logger
	// Shared, when set, is where the controller polling the feed (the one
	// holding the price-feed duty) leaves each good table for the other
	// controllers on the database, which Follow it.
	Shared Shared
}

// Shared is the store's table of values shared between controllers.
type Shared interface {
	SharedValuePut(ctx context.Context, name string, value []byte, at time.Time) error
	SharedValueGet(ctx context.Context, name string) (*store.SharedValue, error)
}

// sharedName is the shared value holding the last good table.
const sharedName = "price_feed.rates"

// Feed keeps the last good rate table of a feed: until the first good
// answer it gives the fallback, and a failing or invalid answer never
// replaces a good one.
type Feed struct {
	cfg Config

	mu      sync.Mutex
	current billing.Rates
	good    bool
	updated time.Time
}

// New returns a feed with cfg's defaults filled in; it polls once Run runs.
func New(cfg Config) *Feed {
	if cfg.Client == nil {
		cfg.Client = http.DefaultClient
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Feed{cfg: cfg}
}

// Rates is the last good table, or the fallback.
func (f *Feed) Rates() billing.Rates {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.good {
		return f.current
	}
	return f.cfg.Fallback
}

// Updated is when the current table was adopted; zero while the fallback
// is given.
func (f *Feed) Updated() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.updated
}

// Run polls at once and then every interval until ctx is done.
func (f *Feed) Run(ctx context.Context) {
	t := time.NewTicker(f.cfg.Interval)
	defer t.Stop()
	for {
		if err := f.Poll(ctx); err != nil && ctx.Err() == nil {
			f.cfg.Log.Warn("price feed failed; keeping the last good rates", "url", RedactURL(f.cfg.URL), "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RedactURL is u without its user info and query, fit for logs: a feed URL
// may carry a token.
func RedactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	p.User, p.RawQuery, p.Fragment = nil, "", ""
	return p.String()
}

// Poll fetches the feed once.
func (f *Feed) Poll(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.cfg.URL, nil)
	if err != nil {
		return fmt.Errorf("feed request: %w", stripURL(err))
	}
	resp, err := f.cfg.Client.Do(req)
	if err != nil {
		return fmt.Errorf("get %s: %w", RedactURL(f.cfg.URL), stripURL(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("feed answered %s", resp.Status)
	}
	var r billing.Rates
	dec := json.NewDecoder(io.LimitReader(resp.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return fmt.Errorf("decode feed: %w", err)
	}
	if r.DedicatedPercent == 0 {
		r.DedicatedPercent = f.cfg.Fallback.DedicatedPercent
	}
	if err := r.Validate(); err != nil {
		return err
	}
	now := f.cfg.Clock.Now()
	f.adopt(r, now)
	if f.cfg.Shared != nil {
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode rates: %w", err)
		}
		if err := f.cfg.Shared.SharedValuePut(ctx, sharedName, b, now); err != nil {
			return fmt.Errorf("share rates: %w", err)
		}
	}
	return nil
}

// adopt makes r the current table unless a newer one is current already.
func (f *Feed) adopt(r billing.Rates, at time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.good && at.Before(f.updated) {
		return false
	}
	f.current, f.good, f.updated = r, true, at
	return true
}

// Follow adopts the table the polling controller shared, at once and then
// every interval until ctx is done: every controller charges the same
// rates, and a feed's outage never makes one of them fall back alone.
func (f *Feed) Follow(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := f.Refresh(ctx); err != nil && ctx.Err() == nil {
			f.cfg.Log.Warn("read the shared price table; keeping the last good rates", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Refresh adopts the shared table once, when it is newer than the current.
func (f *Feed) Refresh(ctx context.Context) error {
	v, err := f.cfg.Shared.SharedValueGet(ctx, sharedName)
	if errors.Is(err, store.ErrNotFound) {
		return nil // no controller has had a good answer yet
	}
	if err != nil {
		return err
	}
	var r billing.Rates
	if err := json.Unmarshal(v.Value, &r); err != nil {
		return fmt.Errorf("decode shared rates: %w", err)
	}
	if err := r.Validate(); err != nil {
		return fmt.Errorf("shared rates: %w", err)
	}
	f.adopt(r, v.UpdatedAt)
	return nil
}

// stripURL drops a *url.Error's wrapper: its message repeats the URL,
// token and all.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
