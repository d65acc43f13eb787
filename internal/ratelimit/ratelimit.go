// Package ratelimit is the one place requests are rate limited: token
// buckets (golang.org/x/time/rate) keyed by a string such as a client IP or
// a wallet address, with idle keys forgotten so the table stays small.
package ratelimit

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Keyed limits each key to perMinute events a minute, with a burst of the
// same size. Time is passed in, so that tests drive it with a fake clock.
type Keyed struct {
	mu        sync.Mutex
	perMinute int
	limit     rate.Limit
	keys      map[string]*entry
	lastSweep time.Time
	maxKeys   int
}

type entry struct {
	lim  *rate.Limiter
	seen time.Time
}

// idleAfter is how long an unused key is kept: after a minute its bucket is
// full again, so forgetting it changes nothing.
const idleAfter = 2 * time.Minute

// DefaultMaxKeys bounds the table of a limiter: a flood of distinct keys
// (spoofed addresses, fresh wallets) costs at most this many entries.
const DefaultMaxKeys = 100_000

// NewKeyed returns a limiter of perMinute events per key and minute;
// perMinute <= 0 means unlimited.
func NewKeyed(perMinute int) *Keyed {
	return &Keyed{perMinute: perMinute, limit: rate.Limit(float64(perMinute) / 60), keys: map[string]*entry{},
		maxKeys: DefaultMaxKeys}
}

// WithMaxKeys sets how many keys the limiter remembers at most (n >= 1) and
// returns k.
func (k *Keyed) WithMaxKeys(n int) *Keyed {
	k.maxKeys = max(1, n)
	return k
}

// Len is how many keys the limiter remembers now.
func (k *Keyed) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.keys)
}

// Allow takes one event for key at now. When the key is over its limit it
// returns false and how long until an event is allowed again.
func (k *Keyed) Allow(key string, now time.Time) (bool, time.Duration) {
	if k == nil || k.perMinute <= 0 {
		return true, 0
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if now.Sub(k.lastSweep) > idleAfter {
		k.sweep(now)
	}
	e := k.keys[key]
	if e == nil {
		if len(k.keys) >= k.maxKeys {
			k.sweep(now)
			if len(k.keys) >= k.maxKeys {
				k.evictOldest()
			}
		}
		e = &entry{lim: rate.NewLimiter(k.limit, k.perMinute)}
		k.keys[key] = e
	}
	e.seen = now
	r := e.lim.ReserveN(now, 1)
	if !r.OK() {
		return false, time.Minute
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

func (k *Keyed) sweep(now time.Time) {
	for key, e := range k.keys {
		if now.Sub(e.seen) > idleAfter {
			delete(k.keys, key)
		}
	}
	k.lastSweep = now
}

// evictOldest forgets the least recently seen key. Forgetting a key refills
// its bucket, so under a flood of distinct keys the limit errs towards
// allowing; the table never grows past maxKeys. It is linear, but runs only
// when the table is full of keys seen within idleAfter.
func (k *Keyed) evictOldest() {
	var oldest string
	var at time.Time
	first := true
	for key, e := range k.keys {
		if first || e.seen.Before(at) {
			oldest, at, first = key, e.seen, false
		}
	}
	delete(k.keys, oldest)
}

// RetryAfterSeconds renders d for a Retry-After header: whole seconds,
// at least 1.
func RetryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
