package route

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Host length limits of RFC 1035 §2.3.4 (names in text form, without the
// trailing dot). Raw input longer than maxRawHost is refused before any work.
const (
	maxHostLen  = 253
	maxLabelLen = 63
	maxRawHost  = 1024
)

var errEmptyHost = errors.New("empty host")

// NormalizeHost returns the canonical form of a destination or gateway host,
// the form every rule, cache entry and cooldown is keyed by:
//
//   - "[::1]", "::1", "[0:0::1%25eth0]" and "::1%eth0" → "::1": brackets are
//     stripped, the IPv6 zone id is dropped (it never takes part in matching)
//     and the address is printed canonically (net/netip).
//   - "127.0.0.1." → "127.0.0.1"; IPv4 must be strict dotted-quad.
//   - "Example.COM." → "example.com": ASCII lower-cased, one trailing dot
//     stripped.
//   - "BÜCHER.example." → "xn--bcher-kva.example": a host with non-ASCII
//     characters is mapped and converted to Punycode by golang.org/x/net/idna
//     (UTS #46 lookup profile, non-transitional, '_' allowed; see
//     idnaProfile). Full-width letters and the full stops U+3002, U+FF0E and
//     U+FF61 are mapped to ASCII.
//
// Host names may contain ASCII letters, digits, '-' and '_' (the latter is
// common in internal names); labels must be non-empty and at most 63 bytes,
// the whole name at most 253. A name whose last label is numeric ("127.1",
// "1.2.3.256", "0x7f.1") but is not a strict IPv4 address is refused: some
// resolvers read it as an IP address, which would bypass IP rules (the
// WHATWG URL "ends in a number" rule). Errors describe the problem and quote
// the host; they never panic on any input (fuzzed). An already normalized
// ASCII host is returned without allocating.
func NormalizeHost(host string) (string, error) {
	if host == "" {
		return "", errEmptyHost
	}
	if len(host) > maxRawHost {
		return "", fmt.Errorf("host too long (%d bytes)", len(host))
	}
	if host[0] == '[' {
		if len(host) < 2 || host[len(host)-1] != ']' {
			return "", fmt.Errorf("host %q: unbalanced '['", host)
		}
		return normalizeIPv6(host[1 : len(host)-1])
	}
	if strings.IndexByte(host, ':') >= 0 {
		return normalizeIPv6(host)
	}
	h := strings.TrimSuffix(host, ".")
	if h == "" {
		return "", fmt.Errorf("host %q: empty name", host)
	}
	upper := false
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c >= 0x80:
			return normalizeIDN(host)
		case 'A' <= c && c <= 'Z':
			upper = true
		case !isHostByte(c):
			return "", fmt.Errorf("host %q: bad character %q", host, c)
		}
	}
	if upper {
		h = strings.ToLower(h)
	}
	if err := checkName(h, host); err != nil {
		return "", err
	}
	return h, nil
}

// normalizeIPv6 handles the inside of "[...]" or a bare literal with ':'.
func normalizeIPv6(s string) (string, error) {
	lit := s
	if i := strings.IndexByte(s, '%'); i >= 0 {
		s = s[:i] // "%25eth0" (RFC 6874) and "%eth0" alike
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() {
		return "", fmt.Errorf("host %q: not an IPv6 address", lit)
	}
	return canonicalAddr(a, s), nil
}

// canonicalAddr returns a.String(), reusing s when it is already canonical
// so the common case does not allocate.
func canonicalAddr(a netip.Addr, s string) string {
	var buf [64]byte
	if b := a.AppendTo(buf[:0]); string(b) == s {
		return s
	}
	return a.String()
}

// idnaProfile is the UTS #46 lookup profile (non-transitional, so "ß"
// stays "ß"; Bidi rule; label validation) with the STD3 ASCII restriction
// lifted so '_' passes, as browsers allow. The ASCII result is checked with
// isHostByte afterwards, so nothing else that STD3 would refuse gets in.
var idnaProfile = idna.New(idna.MapForLookup(), idna.BidiRule(),
	idna.Transitional(false), idna.StrictDomainName(false))

// normalizeIDN converts a host with non-ASCII characters.
func normalizeIDN(host string) (string, error) {
	if !utf8.ValidString(host) {
		return "", fmt.Errorf("host %q: not valid UTF-8", host)
	}
	h, err := idnaProfile.ToASCII(host)
	if err != nil {
		return "", fmt.Errorf("host %q: %v", host, err)
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" {
		return "", fmt.Errorf("host %q: empty name", host)
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !isHostByte(c) {
			return "", fmt.Errorf("host %q: bad character %q", host, c)
		}
	}
	// Full-width digits map to ASCII digits, so the result gets the same
	// IPv4 and length checks as an ASCII host.
	if err := checkName(h, host); err != nil {
		return "", err
	}
	return h, nil
}

// checkName validates a lower-case ASCII name h (raw is the input, for
// errors): label and name lengths, and the numeric-last-label rule.
func checkName(h, raw string) error {
	if len(h) > maxHostLen {
		return fmt.Errorf("host %q: longer than %d bytes", raw, maxHostLen)
	}
	start := 0
	for i := 0; i <= len(h); i++ {
		if i < len(h) && h[i] != '.' {
			continue
		}
		switch n := i - start; {
		case n == 0:
			return fmt.Errorf("host %q: empty label", raw)
		case n > maxLabelLen:
			return fmt.Errorf("host %q: label longer than %d bytes", raw, maxLabelLen)
		}
		start = i + 1
	}
	if last := h[strings.LastIndexByte(h, '.')+1:]; isNumericLabel(last) {
		if a, err := netip.ParseAddr(h); err != nil || !a.Is4() {
			return fmt.Errorf("host %q: numeric name is not a dotted-quad IPv4 address", raw)
		}
	}
	return nil
}

// isNumericLabel reports whether l is all decimal digits or a 0x hex number,
// the forms inet_aton reads as part of an IPv4 address.
func isNumericLabel(l string) bool {
	if len(l) >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X') {
		l = l[2:]
		for i := 0; i < len(l); i++ {
			if !isHexDigit(l[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return l != ""
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// isHostByte reports whether c may appear in an ASCII host name (after
// lower-casing): letters, digits, '-', '_' and the label separator '.'.
func isHostByte(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.'
}
