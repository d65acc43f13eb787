// Package netguard is the one rule for which network addresses a URL that a
// tenant names may reach: external artifacts (the controller fetches them)
// and data sources (hosts fetch them) share it. It is a leaf, so the host
// side uses it without reaching the controller's packages.
package netguard

import (
	"fmt"
	"net"
	"net/netip"
)

// blockedPrefixes are ranges an external URL may not reach unless the
// operator allows private addresses: they name this machine or networks
// behind it, not the public internet.
var blockedPrefixes = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "fc00::/7", "fe80::/10", "ff00::/8", "64:ff9b::/96",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// RefusedAddr says why ip, not being a public address of another machine,
// may not be reached from an operator's network without the operator's
// leave, or "" when it may: external artifacts and data sources share it.
func RefusedAddr(ip netip.Addr) string {
	ip = ip.Unmap()
	for _, p := range blockedPrefixes {
		if p.Contains(ip) {
			return fmt.Sprintf("%s is a loopback, link-local, private or reserved address", ip)
		}
	}
	// The service itself: any address of this machine's interfaces.
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if pfx, err := netip.ParsePrefix(a.String()); err == nil && pfx.Addr().Unmap() == ip {
				return fmt.Sprintf("%s is an address of this service's machine", ip)
			}
		}
	}
	return ""
}
