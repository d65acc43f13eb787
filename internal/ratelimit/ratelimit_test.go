package ratelimit

import (
	"testing"
	"time"
)

func TestKeyedLimitsEachKeyAndRefills(t *testing.T) {
	t.Parallel()
	k := NewKeyed(3)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		if ok, _ := k.Allow("a", now); !ok {
			t.Fatalf("event %d of a refused, want allowed", i+1)
		}
	}
	ok, wait := k.Allow("a", now)
	if ok || wait <= 0 || wait > 20*time.Second {
		t.Fatalf("4th event of a: got ok=%v wait=%v, want refused with a wait of at most 20s", ok, wait)
	}
	if ok, _ := k.Allow("b", now); !ok {
		t.Fatal("first event of b refused; keys must not share a bucket")
	}
	if ok, _ := k.Allow("a", now.Add(wait)); !ok {
		t.Fatalf("a refused after waiting %v", wait)
	}
	if got := RetryAfterSeconds(1500 * time.Millisecond); got != 2 {
		t.Errorf("RetryAfterSeconds(1.5s) = %d, want 2", got)
	}
}

func TestKeyedZeroIsUnlimited(t *testing.T) {
	t.Parallel()
	k := NewKeyed(0)
	for range 1000 {
		if ok, _ := k.Allow("a", time.Time{}); !ok {
			t.Fatal("unlimited limiter refused")
		}
	}
}
