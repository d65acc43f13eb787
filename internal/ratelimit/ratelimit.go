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
}

type entry struct {
	lim  *rate.Limiter
	seen time.Time
}

// idleAfter is how long an unused key is kept: after a minute its bucket is
// full again, so forgetting it changes nothing.
const idleAfter = 2 * time.Minute

// NewKeyed returns a limiter of perMinute events per key and minute;
// perMinute <= 0 means unlimited.
func NewKeyed(perMinute int) *Keyed {
	return &Keyed{perMinute: perMinute, limit: rate.Limit(float64(perMinute) / 60), keys: map[string]*entry{}}
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
		for key, e := range k.keys {
			if now.Sub(e.seen) > idleAfter {
				delete(k.keys, key)
			}
		}
		k.lastSweep = now
	}
	e := k.keys[key]
	if e == nil {
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

// RetryAfterSeconds renders d for a Retry-After header: whole seconds,
// at least 1.
func RetryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
