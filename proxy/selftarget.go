package proxy

import (
	"net"
	"net/netip"
	"strings"
)

// namesListener reports whether host (a target's host, no brackets, no
// port) names a listener bound to ip (SPEC HTTP-1): the bound address
// itself; for a wildcard listener ("0.0.0.0", "::") any loopback address
// and any address of this machine's interfaces, of the listener's family
// ("::" takes both); "localhost" and "*.localhost" when the listener is
// on 127.0.0.1 or ::1 (the addresses localhost resolves to) or a wildcard.
// Another loopback address ("127.0.0.2", "::1" for a 127.0.0.1 listener) is
// a different socket, so it is not the listener.
func namesListener(host string, ip net.IP) bool {
	bound, ok := netip.AddrFromSlice(ip)
	if !ok {
		return false
	}
	bound = bound.Unmap()
	lower := strings.ToLower(host)
	if lower == "localhost" || strings.HasSuffix(lower, ".localhost") {
		return bound.IsUnspecified() || bound == netip.IPv6Loopback() || bound == netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	a = a.Unmap()
	if !bound.IsUnspecified() {
		return a.WithZone("") == bound
	}
	if bound.Is4() && !a.Is4() {
		return false // 0.0.0.0 takes IPv4 only
	}
	return a.IsLoopback() || isLocalAddr(a)
}

// isLocalAddr reports whether a is an address of one of this machine's
// interfaces (a wildcard listener accepts on each of them).
func isLocalAddr(a netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	a = a.WithZone("")
	for _, ia := range addrs {
		n, ok := ia.(*net.IPNet)
		if !ok {
			continue
		}
		if b, ok := netip.AddrFromSlice(n.IP); ok && b.Unmap() == a {
			return true
		}
	}
	return false
}
