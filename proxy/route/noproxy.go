package route

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// noProxyList is a parsed NO_PROXY value. Entries are
// separated by commas, spaces around them are trimmed, and each is one of:
//
//   - "*" alone: matches every host.
//   - a domain, "example.com", ".example.com" or "*.example.com": all three
//     match the apex and every subdomain (curl's reading; Go's httpproxy
//     differs for ".example.com", which there excludes the apex). Suffixes
//     match on label boundaries only, never "notexample.com". IDN domains
//     are converted like NormalizeHost.
//   - an IP address, IPv6 with or without brackets: matches that address
//     only ("127.0.0.1" never matches the name "foo.127.0.0.1"); an IPv4
//     address also matches its IPv4-mapped IPv6 form.
//   - a CIDR prefix ("10.0.0.0/8", "fd00::/8"): matches addresses in it.
//   - any of the host forms followed by ":port" ("example.com:8443",
//     "[::1]:8080"): matches only that destination port.
//
// IPv6 zone ids ("fe80::1%eth0") are dropped from entries and hosts and
// never take part. Domain entries only match names and IP/CIDR entries
// only match IP-literal hosts: a NO_PROXY suffix is never compared against
// the digits of an address. Entries that fit none of the forms are
// reported and ignored: NO_PROXY comes from the environment, where a typo
// must not stop the proxy.
type noProxyList struct {
	all      bool
	ips      []noProxyIP
	prefixes []noProxyPrefix
	domains  []noProxyDomain
}

type noProxyIP struct {
	addr netip.Addr
	port int // 0 = any
}

type noProxyPrefix struct {
	prefix netip.Prefix // CIDR entries take no :port (as in curl)
}

type noProxyDomain struct {
	name string // normalized, without leading "." or "*."
	port int
}

// parseNoProxy parses a NO_PROXY value; ignored lists the entries that were
// not understood, as written.
func parseNoProxy(v string) (l noProxyList, ignored []string) {
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if !l.add(e) {
			ignored = append(ignored, e)
		}
	}
	return l, ignored
}

// add parses one entry and reports whether it was understood.
func (l *noProxyList) add(e string) bool {
	if e == "*" {
		l.all = true
		return true
	}
	if strings.IndexByte(e, '/') >= 0 {
		p, err := netip.ParsePrefix(strings.Trim(e, "[]"))
		if err != nil {
			// "[fd00::]/8" puts the bracket inside; try without brackets.
			p, err = netip.ParsePrefix(strings.NewReplacer("[", "", "]", "").Replace(e))
		}
		if err != nil {
			return false
		}
		l.prefixes = append(l.prefixes, noProxyPrefix{prefix: p.Masked()})
		return true
	}
	host, port := e, 0
	if a, ok := parseIPEntry(e); ok {
		l.ips = append(l.ips, noProxyIP{addr: a})
		return true
	}
	if h, p, err := net.SplitHostPort(e); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 || h == "" {
			return false
		}
		host, port = h, n
	} else if strings.IndexByte(e, ':') >= 0 && !strings.HasPrefix(e, "[") {
		return false
	}
	if a, ok := parseIPEntry(host); ok {
		l.ips = append(l.ips, noProxyIP{addr: a, port: port})
		return true
	}
	switch {
	case strings.HasPrefix(host, "*."):
		host = host[2:]
	case strings.HasPrefix(host, "."):
		host = host[1:]
	}
	if strings.IndexByte(host, '*') >= 0 {
		return false
	}
	n, err := NormalizeHost(host)
	if err != nil {
		return false
	}
	if a, err := netip.ParseAddr(n); err == nil {
		// ".127.0.0.1" or "127.0.0.1.": still an address entry.
		l.ips = append(l.ips, noProxyIP{addr: a.Unmap(), port: port})
		return true
	}
	l.domains = append(l.domains, noProxyDomain{name: n, port: port})
	return true
}

// parseIPEntry parses "1.2.3.4", "::1", "[::1]" or "fe80::1%eth0" (zone
// dropped); IPv4-mapped IPv6 addresses are unmapped.
func parseIPEntry(s string) (netip.Addr, bool) {
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		s = s[1 : len(s)-1]
	}
	if i := strings.IndexByte(s, '%'); i >= 0 {
		s = s[:i]
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// match reports whether a normalized host and port are covered. It does
// not allocate.
func (l *noProxyList) match(host string, port int) bool {
	if l.all {
		return true
	}
	if couldBeIP(host) {
		if a, ok := parseIPEntry(host); ok {
			for _, e := range l.ips {
				if e.addr == a && (e.port == 0 || e.port == port) {
					return true
				}
			}
			for _, e := range l.prefixes {
				if e.prefix.Contains(a) {
					return true
				}
			}
			return false // addresses never meet domain entries
		}
	}
	for _, e := range l.domains {
		if e.port != 0 && e.port != port {
			continue
		}
		if host == e.name || len(host) > len(e.name) &&
			host[len(host)-len(e.name)-1] == '.' && strings.HasSuffix(host, e.name) {
			return true
		}
	}
	return false
}

// couldBeIP is a cheap pre-check before netip.ParseAddr.
func couldBeIP(h string) bool {
	return h != "" && (h[0] >= '0' && h[0] <= '9' || strings.IndexByte(h, ':') >= 0)
}
