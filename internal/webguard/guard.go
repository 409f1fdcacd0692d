// Package webguard decides whether a request that reached the listener may
// be served by a local control endpoint (the pool, its editor, the live
// settings API). Local agents (Claude Code, Codex, curl) send neither Origin
// nor Sec-Fetch-* headers; a web page the user happens to visit can still
// send requests to 127.0.0.1 (a no-cors POST with Content-Type text/plain
// needs no CORS preflight), and a DNS-rebound name can make such a page
// same-origin with the listener. So (SPEC POOL-20, POOL-15, OPS-7):
//
//   - Host must be an IP literal, "localhost" or a name under ".localhost"
//     (RFC 6761 §6.3): a rebound attacker name is refused (LocalHost).
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
	"strings"
)

// Refusal tells why r must not be served, or "" when it may. guarded
// selects the Origin and Fetch Metadata checks on top of the Host check
// (see the package comment). The reason is one sentence for a 403 body.
func Refusal(r *http.Request, guarded bool) string {
	if !LocalHost(r.Host) {
		return "Host is not an IP address or localhost (DNS rebinding guard)"
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
// cannot point at the listener.
func LocalHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" {
		return false
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	_, err := netip.ParseAddr(host)
	return err == nil
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
