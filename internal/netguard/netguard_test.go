package netguard_test

import (
	"net/netip"
	"testing"

	"github.com/skiffhq/skiff/internal/netguard"
)

func TestRefusedAddr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr    string
		refused bool
	}{
		{"127.0.0.1", true},
		{"10.1.2.3", true},
		{"172.16.0.9", true},
		{"192.168.1.1", true},
		{"169.254.169.254", true}, // cloud metadata
		{"100.64.0.1", true},
		{"0.0.0.0", true},
		{"::1", true},
		{"::ffff:127.0.0.1", true}, // v4-mapped loopback
		{"fd00::1", true},
		{"fe80::1", true},
		{"64:ff9b::7f00:1", true}, // NAT64 of 127.0.0.1
		{"8.8.8.8", false},
		{"2001:4860:4860::8888", false},
	} {
		why := netguard.RefusedAddr(netip.MustParseAddr(tc.addr))
		if (why != "") != tc.refused {
			t.Errorf("RefusedAddr(%s) = %q, want refused %v", tc.addr, why, tc.refused)
		}
	}
}
