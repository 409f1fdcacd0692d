package pool

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// browserRefusal tells why a request must not reach the pool, or "" when it
// may. The pool spends channel keys on behalf of local agents (Claude Code,
// Codex, curl), which send neither Origin nor Sec-Fetch-* headers. A web
// page the user happens to visit can still send requests to 127.0.0.1
// (a no-cors POST with Content-Type text/plain needs no CORS preflight), and
// a DNS-rebound name can make such a page same-origin with the listener, so
// (SPEC POOL-20, POOL-15):
//
//   - Host must be an IP literal, "localhost" or a name under ".localhost"
//     (RFC 6761 §6.3): a rebound attacker name is refused. Checked on every
//     /pool path, status and page included.
//   - keyed, when set (the /pool/{pool}/… endpoints, which spend keys):
//     an Origin header must be http(s)://127.0.0.1, localhost or [::1] (any
//     port), or the request's own Host (the status page's own fetches);
//     "Sec-Fetch-Site: cross-site" or "same-site" is refused (Fetch Metadata,
//     W3C "Fetch Metadata Request Headers" §2.1).
func browserRefusal(r *http.Request, keyed bool) string {
	if !loopbackHost(r.Host) {
		return "Host is not an IP address or localhost (DNS rebinding guard)"
	}
	if !keyed {
		return ""
	}
	if o, ok := r.Header["Origin"]; ok && (len(o) != 1 || !allowedOrigin(o[0], r.Host)) {
		return "cross-origin browser requests are refused"
	}
	switch strings.ToLower(strings.TrimSpace(r.Header.Get("Sec-Fetch-Site"))) {
	case "cross-site", "same-site":
		return "cross-site browser requests are refused"
	}
	return ""
}

// loopbackHost reports whether a Host header value (host or host:port) is an
// IP literal, "localhost" or "*.localhost" — names a DNS-rebinding attacker
// cannot point at the listener (same rule as the proxy's status page).
func loopbackHost(hostport string) bool {
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

// allowedOrigin: http or https on 127.0.0.1, localhost or [::1] with any
// port, or exactly the request's Host (same origin). "null" and every other
// origin are refused.
func allowedOrigin(origin, reqHost string) bool {
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

// browserHeaders are request headers only a browser sends, or that carry
// its ambient credentials; they never reach a channel (SPEC POOL-2).
var browserHeaders = []string{"Origin", "Referer", "Cookie"}

// dropBrowserHeaders removes Origin, Referer, Cookie and every Sec-Fetch-*
// header from an upstream request.
func dropBrowserHeaders(h http.Header) {
	for _, k := range browserHeaders {
		h.Del(k)
	}
	for k := range h {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), "Sec-Fetch-") {
			delete(h, k)
		}
	}
}

// carriesToken reports whether a header value is the pool token, bare or
// after an auth scheme ("Bearer T"), or — for tokens of 16 bytes and more,
// too long to occur by chance — contains it (SPEC POOL-20: the token never
// leaves the machine).
func carriesToken(v, token string) bool {
	v = strings.TrimSpace(v)
	if v == token {
		return true
	}
	if _, rest, ok := strings.Cut(v, " "); ok && strings.TrimSpace(rest) == token {
		return true
	}
	return len(token) >= 16 && strings.Contains(v, token)
}

// dropResponseHeaders are removed from a member's answer besides the
// hop-by-hop fields (httpmsg.RemoveHopByHop): Content-Length (the pool
// re-frames the answer) and Set-Cookie (a member's cookies are not the
// client's).
var dropResponseHeaders = []string{"Content-Length", "Set-Cookie"}
