package httpapi

import (
	"net/http"
	"net/netip"
	"strconv"

	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/ratelimit"
)

// Limits are the per-client rate limits of the public endpoints, in events
// per minute per client IP (0 turns a limit off). Defaults are filled in by
// withDefaults.
type Limits struct {
	// WaitlistPerMinute bounds POST /api/v1/waitlist per client IP.
	WaitlistPerMinute int
	// FeedbackPerMinute bounds POST /api/v1/feedback per client IP.
	FeedbackPerMinute int
	// RedeemPerMinute bounds POST /api/v1/fleet/enrollments/redeem per
	// client IP: codes carry 260 bits, so this only keeps a flood cheap.
	RedeemPerMinute int
}

// DefaultLimits are the limits of a server that sets none.
var DefaultLimits = Limits{WaitlistPerMinute: 5, FeedbackPerMinute: 10, RedeemPerMinute: 30}

// limiters holds one keyed limiter per limited endpoint; every limited
// handler goes through Server.rateLimit.
type limiters struct {
	waitlist, feedback, redeem *ratelimit.Keyed
}

func newLimiters(l Limits) limiters {
	return limiters{waitlist: ratelimit.NewKeyed(l.WaitlistPerMinute), feedback: ratelimit.NewKeyed(l.FeedbackPerMinute),
		redeem: ratelimit.NewKeyed(l.RedeemPerMinute)}
}

// clientIP is the client's address, for logs: the peer, or the
// X-Forwarded-For client when the peer is a trusted proxy.
func (s *Server) clientIP(r *http.Request) string {
	return ratelimit.ClientIP(r.RemoteAddr, r.Header.Values("X-Forwarded-For"), s.trustedProxies)
}

// clientKey is what a request is rate limited by: clientIP, or its /64
// for IPv6 (ratelimit.Key).
func (s *Server) clientKey(r *http.Request) string {
	return ratelimit.ClientKey(r.RemoteAddr, r.Header.Values("X-Forwarded-For"), s.trustedProxies)
}

// rateLimit takes one event from each check's limiter (what names the
// requests, for the message). When any is exhausted it sets Retry-After and
// returns the 429 envelope. Every limited handler goes through it.
func (s *Server) rateLimit(w http.ResponseWriter, what string, checks ...limitCheck) error {
	now := s.clock.Now()
	for _, c := range checks {
		if ok, wait := c.lim.Allow(c.key, now); !ok {
			secs := ratelimit.RetryAfterSeconds(wait)
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			return fault.New(fault.KindRateLimited, "rate_limited",
				"Wait "+strconv.Itoa(secs)+" seconds (the Retry-After header), then send the request again.",
				"too many %s requests for this %s", what, c.by).With("retry_after_seconds", secs).With("limited_by", c.by)
		}
	}
	return nil
}

// limitCheck is one limiter and the key a request takes from it; by names
// the key's kind in the 429.
type limitCheck struct {
	lim *ratelimit.Keyed
	key string
	by  string
}

// TrustedProxies parses --trusted-proxy values for Config.TrustedProxies.
func TrustedProxies(list []string) ([]netip.Prefix, error) { return ratelimit.ParsePrefixes(list) }
