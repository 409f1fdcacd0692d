// Package webguard decides whether a request that reached the listener may
// be served by a local control endpoint (the pool, its editor, the live
// settings API). Local agents (Claude Code, Codex, curl) send neither Origin
// nor Sec-Fetch-* headers; a web page the user happens to visit can still
// send requests to 127.0.0.1 (a no-cors POST with Content-Type text/plain
// needs no CORS preflight), and a DNS-rebound name can make such a page
// same-origin with the listener. So:
//
//   - Host must be an IP literal, "localhost" or a name under ".localhost"
//     (RFC 6761 §6.3): a rebound attacker name is refused (LocalHost). Its
//     port, when present, is digits only (RFC 3986 §3.2.3) and the port of
//     the listener the request arrived on: "127.0.0.1:7896.evil.example"
//     is a name, not an address with a port (ListenerHost).
//   - a guarded endpoint (one that spends keys or changes state) also
//     needs an Origin, when present, of http(s)://127.0.0.1, localhost or
//     [::1] (any port) or the request's own Host (a page's own fetches), and
//     refuses "Sec-Fetch-Site: cross-site" or "same-site" (Fetch Metadata,
//     W3C "Fetch Metadata Request Headers" §2.1).
package webguard

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// Refusal tells why r must not be served, or "" when it may. guarded
// selects the Origin and Fetch Metadata checks on top of the Host check
// (see the package comment). The reason is one sentence for a 403 body.
func Refusal(r *http.Request, guarded bool) string {
	if !ListenerHost(r) {
		return "Host is not an IP address or localhost with this listener's port (DNS rebinding guard)"
	}
	if !guarded {
		return ""
	}
	if o, ok := r.Header["Origin"]; ok && (len(o) != 1 || !AllowedOrigin(o[0], r.Host)) {
		return "cross-origin browser requests are refused"
	}
	switch strings.ToLower(strings.TrimSpace(r.Header.Get("Sec-Fetch-Site"))) {
	case "cross-site", "same-site":
		return "cross-site browser requests are refused"
	}
	return ""
}

// LocalHost reports whether a Host header value (host or host:port) is an
// IP literal, "localhost" or "*.localhost" — names a DNS-rebinding attacker
// cannot point at the listener — with a port, when present, of digits
// only (1 to 65535).
func LocalHost(hostport string) bool {
	host, _, ok := splitHost(hostport)
	if !ok {
		return false
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" {
		return false
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	_, err := netip.ParseAddr(host)
	return err == nil
}

// ListenerHost reports whether r's Host is LocalHost and, when it names a
// port, that port is the one of the listener r arrived on (net/http's
// LocalAddrContextKey). A Host without a port is only checked to be
// LocalHost: a browser leaves out just the scheme's default port (RFC 9110
// §7.2), and an in-process request (the pool's test call) names none.
// Where the listener is not known (a handler called directly), the Host
// is only checked to be LocalHost.
func ListenerHost(r *http.Request) bool {
	if !LocalHost(r.Host) {
		return false
	}
	_, port, _ := splitHost(r.Host)
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if port == "" || !ok {
		return true
	}
	_, lport, err := net.SplitHostPort(local.String())
	return err != nil || port == lport // err: not an IP listener, nothing to compare
}

// splitHost splits a Host value into host (brackets removed) and port
// ("" when absent); ok is false when a port is present and is not a
// decimal number 1-65535, or the brackets do not close.
func splitHost(hostport string) (host, port string, ok bool) {
	host = hostport
	if strings.HasPrefix(host, "[") {
		end := strings.IndexByte(host, ']')
		if end < 0 {
			return "", "", false
		}
		host, port = host[1:end], host[end+1:]
		if port != "" && !strings.HasPrefix(port, ":") {
			return "", "", false
		}
		port = strings.TrimPrefix(port, ":")
	} else if i := strings.LastIndexByte(host, ':'); i >= 0 {
		if strings.IndexByte(host[:i], ':') >= 0 {
			return host, "", true // an IPv6 literal without brackets has no port
		}
		host, port = host[:i], host[i+1:]
	}
	if port != "" && !digitsPort(port) {
		return "", "", false
	}
	return host, port, true
}

// digitsPort reports whether p is a port of ASCII digits, 1 to 65535.
func digitsPort(p string) bool {
	if len(p) > 5 {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
	}
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
}

// AllowedOrigin reports whether an Origin header value may drive a guarded
// endpoint: http or https on 127.0.0.1, localhost or [::1] with any port,
// or exactly the request's Host reqHost (same origin). "null" and every
// other origin are refused.
func AllowedOrigin(origin, reqHost string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return false
	}
	switch strings.ToLower(u.Hostname()) {
	case "127.0.0.1", "localhost", "::1":
		return true
	}
	return strings.EqualFold(u.Host, reqHost)
}
