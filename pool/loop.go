package pool

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
)

// Pool loops. A member whose base_url leads back to this pool (its own
// listener, or another instance whose pool points here) would turn one call
// into an unbounded chain of nested calls, each holding a connection and a
// goroutine until the outermost timeout (thousands per second). Every
// request to a member carries a Via entry naming this pool instance (RFC
// 9110 §7.6.3; client Via entries are kept, so a chain through other
// instances accumulates them), and a call arriving with this instance's
// entry is answered 508 Loop Detected (RFC 5842 §7.2) in the client API's
// error shape, which the calling pool classifies as the member's server
// failure (SPEC POOL-10) and fails over from.

// newViaEntry is this instance's Via entry: "1.1 dual-proxy-pool-" and
// 16 random hex digits.
func newViaEntry() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "1.1 dual-proxy-pool-" + hex.EncodeToString(b[:])
}

// looped reports whether h's Via entries name this pool instance.
func (p *Pool) looped(h http.Header) bool {
	name := strings.TrimPrefix(p.via, "1.1 ")
	for _, line := range h.Values("Via") {
		for _, e := range strings.Split(line, ",") {
			if f := strings.Fields(e); len(f) >= 2 && f[1] == name {
				return true
			}
		}
	}
	return false
}
