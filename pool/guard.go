package pool

import (
	"net/http"
	"strings"

	"github.com/dual-proxy/dual-proxy/internal/lib/webguard"
)

// browserRefusal tells why a request must not reach the pool, or "" when it
// may (the rules are webguard's): the Host check on
// every /pool path, status and page included; keyed (the /pool/{pool}/…
// endpoints, which spend keys) adds the Origin and Fetch Metadata checks.
func browserRefusal(r *http.Request, keyed bool) string { return webguard.Refusal(r, keyed) }

// browserHeaders are request headers only a browser sends, or that carry
// its ambient credentials; they never reach a channel.
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
// too long to occur by chance — contains it (the token never
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
