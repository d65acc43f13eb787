package auth

import (
	"context"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

// keyCache remembers API keys verified in the last keyCacheTTL, so that a
// client sending many requests with one key (32 clients submitting jobs)
// does not look the key up for every request: that lookup was about 4 % of
// the server's CPU per submission (docs/bench.md). Only keys found are
// kept; a key revoked in the store stops working here within keyCacheTTL.
// Sessions are not cached: they expire by the store's clock. Bounded: the
// whole cache is dropped when full.
type keyCache struct {
	mu sync.Mutex
	m  map[string]cachedKey
}

type cachedKey struct {
	p       store.Principal
	expires time.Time
}

const (
	keyCacheTTL  = 2 * time.Second
	keyCacheSize = 1024
)

// principalByKey is store.PrincipalGetByKeyHash through the cache, whose
// TTL runs on the service's clock.
func (s *Service) principalByKey(ctx context.Context, hash string) (*store.Principal, error) {
	now := s.clock.Now()
	s.keys.mu.Lock()
	c, ok := s.keys.m[hash]
	s.keys.mu.Unlock()
	if ok && now.Before(c.expires) {
		p := c.p // a copy: callers may not change what the cache holds
		return &p, nil
	}
	p, err := s.store.PrincipalGetByKeyHash(ctx, hash)
	if err != nil {
		return nil, err
	}
	s.keys.mu.Lock()
	if s.keys.m == nil || len(s.keys.m) >= keyCacheSize {
		s.keys.m = map[string]cachedKey{}
	}
	s.keys.m[hash] = cachedKey{p: *p, expires: now.Add(keyCacheTTL)}
	s.keys.mu.Unlock()
	return p, nil
}
