package httpmsg

import (
	"net/http"
	"strings"
)

// HopByHop are the fields removed in both directions by a proxy (RFC 9110
// §7.6.1), plus Proxy-Connection (de-facto, RFC 9112 Appendix C.2.2) and the
// proxy's own authentication fields, which belong to one hop (SPEC HTTP-5,
// GW-4: the client's Proxy-Authorization never leaves).
var HopByHop = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Te", "Trailer",
	"Transfer-Encoding", "Upgrade", "Proxy-Authorization", "Proxy-Authenticate",
}

// RemoveHopByHop deletes from h the hop-by-hop fields and every field named
// by any Connection field line (all lines, including empty ones).
func RemoveHopByHop(h http.Header) {
	for _, line := range h["Connection"] {
		for _, name := range strings.Split(line, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range HopByHop {
		delete(h, name)
	}
}
