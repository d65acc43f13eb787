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

// ipv6ClientBits is the prefix an IPv6 client is limited by: a /64 is what
// one subscriber (a home line, a VPS) is routed, and SLAAC and privacy
// addresses let its owner rotate through 2^64 addresses of it at will.
const ipv6ClientBits = 64

// Key is the key an address is limited by: an IPv4 address as it is, an
// IPv6 address as its /64 ("2001:db8:1:2::/64"), so that a client rotating
// addresses within its /64 shares one bucket. An IPv4-mapped IPv6 address
// is IPv4. Anything unparsable is its own key.
func Key(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	return netip.PrefixFrom(a.WithZone(""), ipv6ClientBits).Masked().String()
}

// ClientKey is Key of ClientIP: what a request is rate limited by.
func ClientKey(remoteAddr string, forwardedFor []string, trusted []netip.Prefix) string {
	return Key(ClientIP(remoteAddr, forwardedFor, trusted))
}
