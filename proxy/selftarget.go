package proxy

import (
	"bytes"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
)

// Is an absolute-form request for this proxy itself? A
// request to one of the server's own listeners is served by its own
// endpoints (handoff.go), not forwarded back to itself.

// selfTarget reports whether head is an absolute-form http:// request for
// this server's own listener (its bound address and port, namesListener);
// if so it rewrites head.Raw's request line to origin-form. Any other
// address on the same port, another loopback address included, is an
// origin like any other (SPEC HTTP-1).
func (s *Server) selfTarget(head *httpmsg.RequestHead) bool {
	if !s.listensOn(targetPort(head.Target)) {
		return false // the common case, decided without parsing the URL
	}
	u, err := url.Parse(head.Target)
	if err != nil || !strings.EqualFold(u.Scheme, "http") || u.Host == "" {
		return false
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return false
	}
	host := strings.Trim(u.Hostname(), "[]")
	var bound []*net.TCPAddr
	s.mu.Lock()
	for ln := range s.listeners {
		if a, ok := ln.Addr().(*net.TCPAddr); ok && a.Port == port {
			bound = append(bound, a)
		}
	}
	s.mu.Unlock()
	if !slices.ContainsFunc(bound, func(a *net.TCPAddr) bool { return namesListener(host, a.IP) }) {
		return false
	}
	path := u.RequestURI()
	eol := bytes.IndexByte(head.Raw, '\n')
	line := head.Method + " " + path + " " + head.Proto + "\r\n"
	head.Raw = append([]byte(line), head.Raw[eol+1:]...)
	head.Target = path
	return true
}

// targetPort is the explicit port of an absolute-form target's authority
// ("http://h:8080/x" → 8080), or 0 when it has none or it is not a number;
// selfTarget's first, parse-free filter.
func targetPort(raw string) int {
	i := strings.Index(raw, "://")
	if i < 0 {
		return 0
	}
	auth := raw[i+3:]
	for j := 0; j < len(auth); j++ {
		if c := auth[j]; c == '/' || c == '?' || c == '#' {
			auth = auth[:j] // a loop: IndexAny builds a byte set per call
			break
		}
	}
	j := strings.LastIndexByte(auth, ':')
	if j < 0 || strings.IndexByte(auth[j:], ']') >= 0 {
		return 0 // no port, or the last colon is inside an IPv6 literal
	}
	port, err := strconv.Atoi(auth[j+1:])
	if err != nil || port <= 0 {
		return 0
	}
	return port
}

// listensOn reports whether one of the server's TCP listeners has port:
// a read of the ports snapshot, no lock (every absolute-form
// request asks, and took the server's lock for it).
func (s *Server) listensOn(port int) bool {
	if port == 0 {
		return false
	}
	if p := s.ports.Load(); p != nil {
		return slices.Contains(*p, port)
	}
	return false
}

// addListenPort adds ln's port to the snapshot listensOn reads; s.mu is
// held (Serve). Listeners are never removed: a closed one serves nothing
// and its port being "ours" only sends a request for it to net/http.
func (s *Server) addListenPort(ln net.Listener) {
	a, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		return
	}
	var ports []int
	if p := s.ports.Load(); p != nil {
		ports = slices.Clone(*p)
	}
	ports = append(ports, a.Port)
	s.ports.Store(&ports)
}

// namesListener reports whether host (a target's host, no brackets, no
// port) names a listener bound to ip: the bound address
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
