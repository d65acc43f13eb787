package ratelimit

import (
	"fmt"
	"net/http/httptest"
	"net/netip"
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

func TestKeyedMemoryIsBoundedAndIdleKeysExpire(t *testing.T) {
	t.Parallel()
	k := NewKeyed(1).WithMaxKeys(10)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 100 {
		k.Allow(fmt.Sprintf("k%d", i), now)
	}
	if got := k.Len(); got != 10 {
		t.Fatalf("after 100 distinct keys with max 10: got %d keys, want 10", got)
	}
	// The newest key is remembered: it is still limited.
	if ok, _ := k.Allow("k99", now); ok {
		t.Error("k99 allowed a second event in the same instant; the newest key must be kept")
	}
	k.Allow("late", now.Add(idleAfter+time.Second))
	if got := k.Len(); got != 1 {
		t.Errorf("after idleAfter: got %d keys, want 1 (idle keys forgotten)", got)
	}
}

func TestClientIP(t *testing.T) {
	t.Parallel()
	trusted, err := ParsePrefixes([]string{"10.0.0.0/8, 192.168.1.1", "::1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParsePrefixes([]string{"nonsense"}); err == nil {
		t.Error("ParsePrefixes(nonsense) succeeded, want an error")
	}
	tests := []struct {
		name, remote, xff string
		trusted           []netip.Prefix
		want              string
	}{
		{"no proxies: header ignored", "203.0.113.9:5000", "1.2.3.4", nil, "203.0.113.9"},
		{"untrusted peer: header ignored", "203.0.113.9:5000", "1.2.3.4", trusted, "203.0.113.9"},
		{"trusted peer: last hop", "10.1.2.3:5000", "1.2.3.4, 198.51.100.7", trusted, "198.51.100.7"},
		{"chain of trusted proxies", "10.1.2.3:5000", "1.2.3.4, 198.51.100.7, 192.168.1.1, 10.9.9.9", trusted, "198.51.100.7"},
		{"trusted peer without header", "10.1.2.3:5000", "", trusted, "10.1.2.3"},
		{"malformed hop stops the walk", "10.1.2.3:5000", "1.2.3.4, bogus", trusted, "10.1.2.3"},
		{"ipv6 loopback proxy", "[::1]:80", "2001:db8::1", trusted, "2001:db8::1"},
		{"ipv4-mapped peer", "[::ffff:10.0.0.1]:80", "198.51.100.7", trusted, "198.51.100.7"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.remote
			if tc.xff != "" {
				r.Header.Set("X-Forwarded-For", tc.xff)
			}
			if got := ClientIP(r.RemoteAddr, r.Header.Values("X-Forwarded-For"), tc.trusted); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestKeyIPv6PerSlash64(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"203.0.113.9":                      "203.0.113.9",
		"::ffff:203.0.113.9":               "203.0.113.9",
		"2001:db8:1:2::1":                  "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff:eeee:dddd:cccc": "2001:db8:1:2::/64",
		"2001:db8:1:3::1":                  "2001:db8:1:3::/64",
		"fe80::1%eth0":                     "fe80::/64",
		"not-an-ip":                        "not-an-ip",
	} {
		if got := Key(in); got != want {
			t.Errorf("Key(%q) = %q, want %q", in, got, want)
		}
	}
	// Through a trusted proxy the forwarded client's /64 is the key.
	trusted, _ := ParsePrefixes([]string{"10.0.0.1"})
	if got := ClientKey("10.0.0.1:80", []string{"2001:db8:9:9:1:2:3:4"}, trusted); got != "2001:db8:9:9::/64" {
		t.Errorf("ClientKey through a proxy = %q", got)
	}
	// One limiter: a client rotating addresses in its /64 shares a bucket.
	k := NewKeyed(2)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, ip := range []string{"2001:db8:1:2::1", "2001:db8:1:2::2"} {
		if ok, _ := k.Allow(Key(ip), now); !ok {
			t.Fatalf("request %d refused", i+1)
		}
	}
	if ok, _ := k.Allow(Key("2001:db8:1:2:abcd::3"), now); ok {
		t.Error("a third address of the same /64 was allowed past a limit of 2")
	}
	if ok, _ := k.Allow(Key("2001:db8:1:3::1"), now); !ok {
		t.Error("another /64 was refused")
	}
}
