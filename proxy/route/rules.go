package route

import (
	"fmt"
	"net/netip"
	"strings"
)

// Rule is the outcome of matching a destination host against the
// destination rules.
type Rule int

const (
	// RuleNone: no rule matched; cache, health preference and default
	// order decide.
	RuleNone Rule = iota
	// RulePreferDirect: --prefer-direct or NO_PROXY matched; direct goes
	// first in the hot zone.
	RulePreferDirect
	// RulePreferProxy: --prefer-proxy matched (and no prefer-direct rule);
	// direct goes to the end of the hot zone.
	RulePreferProxy
)

// String is "none", "prefer-direct" or "prefer-proxy".
func (r Rule) String() string {
	switch r {
	case RulePreferDirect:
		return "prefer-direct"
	case RulePreferProxy:
		return "prefer-proxy"
	}
	return "none"
}

// Rules holds the parsed destination rules. Build it with ParseRules; it is
// immutable afterwards and safe for concurrent use. A nil *Rules matches
// nothing.
type Rules struct {
	direct  patternList
	proxy   patternList
	noProxy noProxyList
	ignored []string
}

// ParseRules parses the destination rules.
//
// preferDirect and preferProxy are host patterns (--prefer-direct,
// --prefer-proxy); each element may itself hold comma-separated patterns,
// spaces around them are trimmed and empty ones skipped. A pattern is a host
// name, IPv4 address or IPv6 literal (brackets optional), normalized like
// NormalizeHost (so IDN patterns work), in which '*' matches one or more
// characters, dots included: "*.example.com" matches "a.example.com" and
// "a.b.example.com" but not "example.com". A pattern with '/', ':' outside an
// IPv6 literal, regex syntax (^ $ ( ) [ ] { } | + ? \), a '*' inside a
// non-ASCII label, or otherwise not a host is an error naming the pattern
// and its list; the CLI exits 2 with it. IPv6 hosts match only
// an equal IPv6 pattern or a lone "*".
//
// noProxy is the startup NO_PROXY/no_proxy value; see noproxy.go for its
// meaning. Its invalid entries are not fatal (they come from the
// environment); they are reported by Ignored.
func ParseRules(preferDirect, preferProxy []string, noProxy string) (*Rules, error) {
	r := &Rules{}
	var err error
	if r.direct, err = parsePatterns("prefer-direct", preferDirect); err != nil {
		return nil, err
	}
	if r.proxy, err = parsePatterns("prefer-proxy", preferProxy); err != nil {
		return nil, err
	}
	r.noProxy, r.ignored = parseNoProxy(noProxy)
	return r, nil
}

// Ignored returns the NO_PROXY entries that could not be parsed and take no
// part in matching, in input order, so the caller can warn about them.
func (r *Rules) Ignored() []string {
	if r == nil {
		return nil
	}
	return append([]string(nil), r.ignored...)
}

// Match returns the rule for a destination. host must already be normalized
// (NormalizeHost); port is the destination port (only NO_PROXY entries with a
// ":port" look at it). A host matched by prefer-direct or NO_PROXY gives
// RulePreferDirect even if prefer-proxy matches too (SPEC ORD-3: both lists
// match → direct first). Match does not allocate.
func (r *Rules) Match(host string, port int) Rule {
	if r == nil || host == "" {
		return RuleNone
	}
	if strings.IndexByte(host, ':') >= 0 || host[0] == '[' {
		// Defensive: an IPv6 literal never meets a domain glob, whatever
		// zone id or brackets a caller left on it.
		host = strings.TrimPrefix(host, "[")
		if i := strings.IndexAny(host, "%]"); i >= 0 {
			host = host[:i]
		}
	}
	if r.direct.match(host) || r.noProxy.match(host, port) {
		return RulePreferDirect
	}
	if r.proxy.match(host) {
		return RulePreferProxy
	}
	return RuleNone
}

// patternList is one list of destination patterns: exact names in a set, globs
// in a slice, and a lone "*" as a flag.
type patternList struct {
	all   bool
	exact map[string]struct{}
	globs []string
}

func (l *patternList) match(host string) bool {
	if l.all {
		return true
	}
	if _, ok := l.exact[host]; ok {
		return true
	}
	if strings.IndexByte(host, ':') >= 0 {
		return false
	}
	for _, g := range l.globs {
		if globMatch(g, host) {
			return true
		}
	}
	return false
}

func parsePatterns(list string, items []string) (patternList, error) {
	var l patternList
	for _, item := range items {
		for _, p := range strings.Split(item, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			n, err := normalizePattern(p)
			if err != nil {
				return patternList{}, fmt.Errorf("%s pattern %q: %v", list, p, err)
			}
			switch {
			case n == "*":
				l.all = true
			case strings.IndexByte(n, '*') >= 0:
				l.globs = append(l.globs, n)
			default:
				if l.exact == nil {
					l.exact = make(map[string]struct{})
				}
				l.exact[n] = struct{}{}
			}
		}
	}
	return l, nil
}

// normalizePattern validates one destination pattern and returns its normalized
// form (lower case, punycode, no brackets, no trailing dot).
func normalizePattern(p string) (string, error) {
	if p == "*" {
		return p, nil
	}
	if strings.ContainsAny(p, "/") {
		return "", fmt.Errorf("contains '/' (no CIDR, path or URL; write host names)")
	}
	if isBracketedOrBareIPv6(p) {
		return NormalizeHost(p)
	}
	if strings.ContainsAny(p, "^$()[]{}|+?\\") {
		return "", fmt.Errorf("contains regex syntax (only '*' is a wildcard)")
	}
	if strings.IndexByte(p, ':') >= 0 {
		return "", fmt.Errorf("contains ':' outside an IPv6 literal (no ports or schemes)")
	}
	if strings.IndexByte(p, '*') < 0 {
		return NormalizeHost(p)
	}
	if strings.Contains(p, "**") {
		return "", fmt.Errorf("contains '**'")
	}
	// Normalize around the wildcards: each '*' stands in for a label part
	// that must be ASCII; the other labels go through NormalizeHost.
	p = strings.TrimSuffix(p, ".")
	labels := strings.Split(p, ".")
	for i, l := range labels {
		if l == "" {
			return "", fmt.Errorf("empty label")
		}
		if strings.IndexByte(l, '*') < 0 {
			n, err := normalizeLabel(l)
			if err != nil {
				return "", fmt.Errorf("label %q: %v", l, err)
			}
			labels[i] = n
			continue
		}
		b := []byte(strings.ToLower(l))
		for _, c := range b {
			if c != '*' && (c == '.' || !isHostByte(c)) {
				return "", fmt.Errorf("bad character %q next to '*' (wildcards only in ASCII labels)", c)
			}
		}
		labels[i] = string(b)
	}
	return strings.Join(labels, "."), nil
}

// normalizeLabel lower-cases and checks one ASCII label, or converts a
// non-ASCII one to its "xn--" form.
func normalizeLabel(l string) (string, error) {
	for i := 0; i < len(l); i++ {
		if l[i] >= 0x80 {
			n, err := normalizeIDN(l)
			if err != nil || strings.IndexByte(n, '.') >= 0 {
				return "", fmt.Errorf("not a single host label")
			}
			return n, nil
		}
	}
	l = strings.ToLower(l)
	for i := 0; i < len(l); i++ {
		if l[i] == '.' || !isHostByte(l[i]) {
			return "", fmt.Errorf("bad character (letters, digits, '-' and '_' only)")
		}
	}
	if len(l) > maxLabelLen {
		return "", fmt.Errorf("longer than %d bytes", maxLabelLen)
	}
	return l, nil
}

// isBracketedOrBareIPv6 reports whether p is "[v6]" or a bare IPv6 address,
// zone allowed.
func isBracketedOrBareIPv6(p string) bool {
	s := p
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		s = s[1 : len(s)-1]
	}
	if i := strings.IndexByte(s, '%'); i >= 0 {
		s = s[:i]
	}
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is6()
}

// globMatch reports whether s matches pattern p, where '*' matches one or
// more bytes and every other byte matches itself. It runs in O(len(p) *
// len(s)) worst case without allocating or recursing: on a mismatch only
// the most recent '*' is extended, which is enough because a later '*' can
// absorb anything an earlier one would.
func globMatch(p, s string) bool {
	px, sx := 0, 0
	starP, starS := -1, 0 // last '*' seen, and where its match ends in s
	for px < len(p) || sx < len(s) {
		if px < len(p) {
			switch c := p[px]; {
			case c == '*':
				if sx < len(s) {
					starP, starS = px, sx+1 // '*' takes s[sx] (one or more)
					px, sx = px+1, sx+1
					continue
				}
			case sx < len(s) && s[sx] == c:
				px, sx = px+1, sx+1
				continue
			}
		}
		if starP >= 0 && starS < len(s) {
			starS++
			px, sx = starP+1, starS
			continue
		}
		return false
	}
	return true
}
