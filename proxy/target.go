package proxy

import (
	"errors"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// target is the parsed absolute-form request target of a plain request.
type target struct {
	authority string // as sent by the client ("Example.com:8080"), for Host
	host      string // normalized host for routing: cache, cooldown and rule keys
	port      int
	// origin is the request-target for the origin, byte for byte as the
	// client sent it ("/a%2Fb|c?q"; "*" for OPTIONS without a path):
	// the proxy never re-encodes paths.
	origin string
	// absolute is the request-target for a gateway ("http://host/…").
	absolute string

	// memo is the last authority parse deduced host, port and Host value
	// from (a connection's requests name one origin, usually: no
	// splitting and normalizing of the same authority per request, issue
	// 20). It depends on that string only, so it is kept across requests.
	memo authMemo
}

// authMemo is one authority's parse: raw as in the target, the rest as
// target's fields; raw "" is none.
type authMemo struct {
	raw, host, decoded string
	port               int
}

// Errors of parseTarget: the short reason of a 400 answer.
var (
	errNotAbsolute = errors.New("absolute-form http:// target required")
	errHTTPS       = errors.New("https:// targets must use CONNECT")
	errBadHost     = errors.New("bad host")
	errBadPort     = errors.New("bad port")
)

// parseTarget validates an absolute-form http:// target (RFC 9112 §3.2.2)
// byte by byte, without net/url (url.Parse was the plain path's
// largest request-side cost) and with the same answers as the url.Parse
// based parser it replaced (kept in target_test.go, fuzzed against
// this one):
//
//   - a fragment is cut off first and never forwarded, whatever it holds;
//   - a control character (CTL, DEL) anywhere else is refused;
//   - the scheme is "http" in any case ("https" is told to use CONNECT);
//   - the authority (RFC 3986 §3.2) ends at the first '/' or '?'; userinfo
//     ('@') is refused; a host is a reg-name whose percent-escapes may only
//     encode non-ASCII bytes (decoded, then normalized to Punycode, so
//     one host has one routing key), or an IPv6 literal in brackets
//     whose zone id follows "%25"
//     ("[fe80::1%25eth0]", RFC 6874; the zone never takes part in routing);
//     an IPv4 address in brackets is refused;
//   - the port is 1-65535 (empty after ':' means 80);
//   - a percent sign in the path must start a %XX escape (the query is
//     not checked, as net/url does not);
//   - "http://h" is "/" for the origin, or "*" for OPTIONS (RFC 9112 §3.2.4).
//
// Errors are the short reason for a 400 answer.
func parseTarget(raw, method string) (*target, error) {
	t := &target{}
	if err := t.parse(raw, method); err != nil {
		return nil, err
	}
	t.memo = authMemo{} // a target of its own: only the parse's fields
	return t, nil
}

// parse is parseTarget into t (a connection's plain requests share one
// target, forward). t changes only on success.
func (t *target) parse(raw, method string) error {
	if i := strings.IndexByte(raw, '#'); i >= 0 {
		raw = raw[:i]
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c < ' ' || c == 0x7f {
			return errNotAbsolute
		}
	}
	if len(raw) < 7 || !strings.EqualFold(raw[:5], "http:") || raw[5:7] != "//" {
		if len(raw) >= 6 && strings.EqualFold(raw[:6], "https:") {
			return errHTTPS
		}
		return errNotAbsolute
	}
	rest := raw[7:]
	end := authorityEnd(rest)
	auth := rest[:end]
	path := rest[end:]
	m := t.memo
	if m.raw != "" && auth == m.raw {
		if !validPathEscapes(path) {
			return errNotAbsolute
		}
	} else {
		// A copy, so the memo does not keep this request's head alive.
		a := strings.Clone(auth)
		hostname, port, decoded, err := splitAuthority(a)
		if err != nil {
			return err
		}
		if !validPathEscapes(path) {
			return errNotAbsolute // net/url refuses a bad %-escape in the path
		}
		m = authMemo{raw: a, decoded: decoded, port: 80}
		if m.host, err = route.NormalizeHost(hostname); err != nil {
			return errBadHost
		}
		if port != "" {
			if m.port, err = strconv.Atoi(port); err != nil || m.port < 1 || m.port > 65535 {
				return errBadPort
			}
		}
	}
	decoded := m.decoded
	*t = target{authority: decoded, host: m.host, port: m.port, origin: path, memo: m}
	switch {
	case path == "" && method == http.MethodOptions:
		t.origin = "*" // RFC 9112 §3.2.4
		t.absolute = "http://" + decoded
		return nil
	case path == "":
		t.origin = "/"
	case path[0] == '?':
		t.origin = "/" + path
	}
	if raw[:7] == "http://" && decoded == m.raw && t.origin == path {
		t.absolute = raw // as sent: no copy
	} else {
		t.absolute = "http://" + decoded + t.origin
	}
	return nil
}

// splitAuthority splits an authority (RFC 3986 §3.2) into the host to
// normalize and the port digits, and returns the authority with the host's
// percent-escapes decoded (the Host value). Errors: userinfo, an empty or
// malformed host, a port that is not digits.
func splitAuthority(auth string) (hostname, port, decoded string, err error) {
	if auth == "" || strings.IndexByte(auth, '@') >= 0 {
		return "", "", "", errNotAbsolute // no host, or userinfo (RFC 9110 §4.2.4)
	}
	if strings.LastIndexByte(auth, '[') > 0 {
		return "", "", "", errNotAbsolute
	}
	if auth[0] == '[' {
		return splitIPLiteral(auth)
	}
	hostPart := auth
	if i := strings.IndexByte(auth, ':'); i >= 0 {
		// One colon only: RFC 3986 has none in a reg-name (Go 1.26's
		// net/url refuses more for http, urlstrictcolons).
		hostPart, port = auth[:i], auth[i+1:]
		if !allDigits(port) {
			return "", "", "", errNotAbsolute
		}
	}
	h, ok := unescapeHost(hostPart, false)
	if !ok {
		return "", "", "", errNotAbsolute
	}
	decoded = auth
	if len(h) != len(hostPart) {
		decoded = h + auth[len(hostPart):]
	}
	return h, port, decoded, nil
}

// splitIPLiteral is splitAuthority for "[IPv6]" or "[IPv6%25zone]" with an
// optional ":port" (RFC 3986 §3.2.2, RFC 6874).
func splitIPLiteral(auth string) (hostname, port, decoded string, err error) {
	closing := strings.LastIndexByte(auth, ']')
	if closing < 0 {
		return "", "", "", errNotAbsolute
	}
	colonPort := auth[closing+1:]
	if colonPort != "" && (colonPort[0] != ':' || !allDigits(colonPort[1:])) {
		return "", "", "", errNotAbsolute
	}
	inner := auth[1:closing]
	addrPart, zonePart := inner, ""
	if z := strings.Index(inner, "%25"); z >= 0 {
		addrPart, zonePart = inner[:z], inner[z:]
	}
	a, ok := unescapeHost(addrPart, false)
	if !ok {
		return "", "", "", errNotAbsolute
	}
	z, ok := unescapeHost(zonePart, true)
	if !ok {
		return "", "", "", errNotAbsolute
	}
	hostname = a + z
	if ip, err := netip.ParseAddr(hostname); err != nil || ip.Is4() {
		return "", "", "", errNotAbsolute // only IPv6 in brackets (RFC 3986 §3.2.2)
	}
	if len(colonPort) > 1 {
		port = colonPort[1:]
	}
	decoded = auth
	if len(hostname) != len(inner) {
		decoded = "[" + hostname + "]" + colonPort
	}
	return hostname, port, decoded, nil
}

// unescapeHost decodes the percent-escapes of a host (zone false) or of an
// IPv6 zone id starting with "%25" (zone true), with net/url's rules: in a
// host an escape may only encode a non-ASCII byte, or be "%25"; in a zone
// any escape of a byte that may appear in a host unescaped, or of a space
// or '%'. Unescaped ASCII must be a host byte (hostByteOK). It reports
// false for anything else and returns s itself when there is no escape.
func unescapeHost(s string, zone bool) (string, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			if c < 0x80 && !hostByteOK(c) {
				return "", false
			}
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return "", false
		}
		v := unhex(s[i+1])<<4 | unhex(s[i+2])
		pct25 := s[i+1] == '2' && s[i+2] == '5'
		if !zone && v < 0x80 && !pct25 {
			return "", false
		}
		if zone && !pct25 && v != ' ' && (v >= 0x80 || !hostByteOK(v)) {
			return "", false
		}
		n++
		i += 2
	}
	if n == 0 {
		return s, true
	}
	b := make([]byte, 0, len(s)-2*n)
	for i := 0; i < len(s); i++ {
		if s[i] == '%' {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b), true
}

// hostByteOK reports whether an ASCII byte may appear unescaped in a host
// or zone id: net/url's set (RFC 3986 unreserved and sub-delims, ':', '[',
// ']', and '"', '<', '>'); route.NormalizeHost is stricter afterwards.
func hostByteOK(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!\"$&'()*+,-.:;<=>[]_~", c) >= 0
}

// authorityEnd is the length of the authority at the start of rest (the
// target after "http://"): up to the first '/' or '?', or all of it.
func authorityEnd(rest string) int {
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; c == '/' || c == '?' {
			return i
		}
	}
	return len(rest)
}

// validPathEscapes is validEscapes for the path of path (the part before
// any '?': the query is not checked, as net/url does not).
func validPathEscapes(path string) bool {
	p, _, _ := strings.Cut(path, "?")
	return validEscapes(p)
}

// validEscapes reports whether every '%' in s starts a %XX escape.
func validEscapes(s string) bool {
	for i := strings.IndexByte(s, '%'); i >= 0; {
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return false
		}
		j := strings.IndexByte(s[i+3:], '%')
		if j < 0 {
			break
		}
		i += 3 + j
	}
	return true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
