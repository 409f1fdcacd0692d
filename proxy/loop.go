package proxy

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// Loop detection (RFC 9110 §7.6.3 Via). A gateway given by a host name
// that resolves to this proxy, or two proxies that name each other, would
// forward a request to itself until file descriptors run out; GW-2's
// self-loop check sees only addresses. Every request this proxy sends
// upstream carries "Via: 1.1 dual-proxy-ID" (ID random per engine); a
// request that arrives with our own ID is answered 508 Loop Detected
// (RFC 5842 §7.2), which the sender treats as a gateway-wide failure.

// viaPrefix starts every Via pseudonym of dual-proxy.
const viaPrefix = "dual-proxy-"

// newViaToken returns a random pseudonym "dual-proxy-<16 hex>".
func newViaToken() string {
	b := make([]byte, 8)
	rand.Read(b)
	return viaPrefix + hex.EncodeToString(b)
}

// viaEntry is this engine's Via list element.
func (e *Engine) viaEntry() string { return e.viaOne }

// viaChain is the Via value to send upstream for a request that arrived
// with the given Via field values: theirs, then ours.
func (e *Engine) viaChain(incoming []string) string {
	if len(incoming) == 0 {
		return e.viaEntry()
	}
	return strings.Join(incoming, ", ") + ", " + e.viaEntry()
}

// looped reports whether any Via value names this engine.
func (e *Engine) looped(vias []string) bool {
	for _, v := range vias {
		for _, el := range strings.Split(v, ",") {
			f := strings.Fields(el)
			if len(f) >= 2 && f[1] == e.via {
				return true
			}
		}
	}
	return false
}
