package ratelimit

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// ParsePrefixes parses CIDR ranges ("10.0.0.0/8") or single addresses
// ("127.0.0.1", taken as /32 or /128), comma-separated or one per element.
func ParsePrefixes(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range list {
		for s := range strings.SplitSeq(item, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			if p, err := netip.ParsePrefix(s); err == nil {
				out = append(out, p.Masked())
				continue
			}
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q: not a CIDR range or an IP address", s)
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
		}
	}
	return out, nil
}

// ClientIP is the address a request is limited by. It is the TCP peer,
// unless the peer is a trusted proxy: then X-Forwarded-For is read from the
// right, skipping addresses that are themselves trusted proxies, and the
// first untrusted one is the client. Entries left of it were written by the
// client and could be anything, so they are never used. Without trusted
// proxies the header is ignored entirely. remoteAddr is the request's
// RemoteAddr and forwardedFor its X-Forwarded-For values.
func ClientIP(remoteAddr string, forwardedFor []string, trusted []netip.Prefix) string {
	peer := peerAddr(remoteAddr)
	if !peer.IsValid() {
		return remoteAddr
	}
	if !isTrusted(peer, trusted) {
		return peer.String()
	}
	hops := strings.Split(strings.Join(forwardedFor, ","), ",")
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break // a malformed hop ends the chain we can believe
		}
		client = a.Unmap()
		if !isTrusted(client, trusted) {
			break
		}
	}
	return client.String()
}

func peerAddr(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
