package httpmsg

import (
	"iter"
	"net/http"
	"strings"
)

// HopByHop are the fields removed in both directions by a proxy (RFC 9110
// §7.6.1), plus Proxy-Connection (de-facto, RFC 9112 Appendix C.2.2) and the
// proxy's own authentication fields, which belong to one hop (the client's
// Proxy-Authorization never leaves).
var HopByHop = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Te", "Trailer",
	"Transfer-Encoding", "Upgrade", "Proxy-Authorization", "Proxy-Authenticate",
}

// RemoveHopByHop deletes from h the hop-by-hop fields, every field named
// by any Connection field line (all lines, including empty ones), and the
// underscore spellings of framing and hop-by-hop fields ("Transfer_Encoding",
// "Content_Length", "Proxy_Authorization" …). CGI-style origins (PHP,
// WSGI, Rack) map '-' and '_' to the same variable, so such a field would
// reach them as the real one behind the proxy's framing checks. nginx drops
// every field with '_' by default and Envoy can drop or reject them; the
// proxy drops only these aliases, since agents do send other fields with
// '_'.
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
	for k := range h {
		if strings.IndexByte(k, '_') >= 0 && isUnderscoreAlias(k) {
			delete(h, k)
		}
	}
}

// EndToEnd yields the fields of one message head that a proxy passes on,
// in order: the ones RemoveHopByHop would keep (not in HopByHop, not named
// by any Connection line, not an underscore alias of a framing or
// hop-by-hop field; RFC 9110 §7.6.1). It needs no header map
// and does not change fields.
func EndToEnd(fields []Field) iter.Seq[Field] {
	return func(yield func(Field) bool) { endToEnd(fields, yield) }
}

func endToEnd(fields []Field, yield func(Field) bool) {
	// The Connection lines' values; more than a few is rare and costs an
	// allocation.
	var connBuf [4]string
	conn := connBuf[:0]
	for _, f := range fields {
		if EqualFoldASCII(f.Name, "Connection") {
			conn = append(conn, f.Value)
		}
	}
	for _, f := range fields {
		if isHopByHop(f.Name) || (strings.IndexByte(f.Name, '_') >= 0 && isUnderscoreAlias(f.Name)) {
			continue
		}
		named := false
		for _, v := range conn {
			if hasToken(v, f.Name) {
				named = true
				break
			}
		}
		if !named && !yield(f) {
			return
		}
	}
}

// isHopByHop reports whether name is in HopByHop (ASCII case-insensitive).
func isHopByHop(name string) bool {
	for _, h := range HopByHop {
		if EqualFoldASCII(name, h) {
			return true
		}
	}
	return false
}

// underscoreAliased are the fields whose underscore spelling is dropped:
// the hop-by-hop fields with a '-' in their name and the framing fields.
var underscoreAliased = []string{"Proxy-Connection", "Keep-Alive", "Transfer-Encoding",
	"Proxy-Authorization", "Proxy-Authenticate", "Content-Length"}

// isUnderscoreAlias reports whether k, read with '_' as '-', names one of
// underscoreAliased (case-insensitive).
func isUnderscoreAlias(k string) bool {
	for _, name := range underscoreAliased {
		if len(k) != len(name) {
			continue
		}
		match := true
		for i := 0; i < len(k); i++ {
			a, b := k[i], name[i]
			if a == '_' {
				a = '-'
			}
			if lowerASCII(a) != lowerASCII(b) {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
