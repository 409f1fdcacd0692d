// Package route holds the pure part of path selection: candidates, host
// normalization, destination rules, the per-host cache, cooldowns and the
// ordering function. Nothing here opens a socket; the clock is injected.
package route

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// ErrUnsupportedScheme is returned (wrapped) by ParseGateway for socks4://,
// socks4a:// and every other scheme but http, https, socks5 and socks5h
// (SPEC GW-3).
var ErrUnsupportedScheme = errors.New("unsupported proxy scheme (supported: http, https, socks5, socks5h)")

// gatewayKinds maps URL schemes to kinds with the port a URL without one
// means: the scheme's (http 80, https 443) or SOCKS's conventional 1080
// (RFC 1928 §3), as curl reads them.
var gatewayKinds = map[string]struct {
	kind candidate.Kind
	port string
}{
	"http":    {candidate.KindHTTP, "80"},
	"https":   {candidate.KindHTTPS, "443"},
	"socks5":  {candidate.KindSOCKS5, "1080"},
	"socks5h": {candidate.KindSOCKS5H, "1080"},
}

// ParseGateway parses a gateway given as "SCHEME://[user:pass@]host[:port][/]"
// (SCHEME http, https, socks5 or socks5h; SPEC GW-3, GW-6, GW-7) or bare
// "host:port" (http). A URL without a port gets its scheme's (80, 443,
// 1080). User and password are percent-decoded; a malformed escape is an
// error (SPEC GW-4); SOCKS5 credentials must fit RFC 1929 (user 1-255
// bytes, password at most 255). An https URL may carry one query
// parameter, "ca=FILE" (percent-encoded path of a PEM file that replaces
// the system roots for this gateway, SPEC GW-6); no other path, query or
// fragment is accepted. An IPv6 literal's zone id, "[fe80::1%25eth0]"
// (RFC 6874) or curl's bare "[fe80::1%eth0]", is kept in Addr as
// "[fe80::1%eth0]:port", the form net.Dial takes; it must be 1-64 RFC 3986
// unreserved characters. socks4:// and socks4a:// are ErrUnsupportedScheme.
// Errors never contain the password. source is copied to Candidate.Source.
//
// One piece: one URL's parsing steps in order (scheme, userinfo, host,
// port, query), each consuming what the previous left.
func ParseGateway(raw, source string) (candidate.Candidate, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return candidate.Candidate{}, errors.New("empty proxy address")
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	scheme, rest, _ := strings.Cut(s, "://")
	scheme = strings.ToLower(scheme)
	gk, ok := gatewayKinds[scheme]
	if !ok {
		if strings.HasPrefix(scheme, "socks4") {
			return candidate.Candidate{}, fmt.Errorf("%s://: %w; SOCKS4 has no IPv6 and no authentication, use socks5:// or socks5h://", scheme, ErrUnsupportedScheme)
		}
		return candidate.Candidate{}, fmt.Errorf("%s://: %w", scheme, ErrUnsupportedScheme)
	}
	// Split userinfo by hand so a bad escape in the password is reported
	// without echoing it (url.Parse errors quote the whole input).
	hostport := rest
	var query string
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		tail := rest[i:]
		hostport = rest[:i]
		tail = strings.TrimPrefix(tail, "/")
		if strings.HasPrefix(tail, "?") && !strings.Contains(tail, "#") {
			query = tail[1:]
		} else if tail != "" {
			return candidate.Candidate{}, errors.New("proxy URL must not have a path, query or fragment (https:// takes ?ca=FILE)")
		}
	}
	c := candidate.Candidate{Kind: gk.kind, Source: source}
	if query != "" {
		if err := parseGatewayQuery(&c, query); err != nil {
			return candidate.Candidate{}, err
		}
	}
	if at := strings.LastIndex(hostport, "@"); at >= 0 {
		userinfo := hostport[:at]
		hostport = hostport[at+1:]
		u, p, _ := strings.Cut(userinfo, ":")
		var err error
		if c.User, err = url.PathUnescape(u); err != nil {
			return candidate.Candidate{}, errors.New("malformed percent-escape in proxy user name")
		}
		if c.Password, err = url.PathUnescape(p); err != nil {
			return candidate.Candidate{}, errors.New("malformed percent-escape in proxy password")
		}
		c.HasAuth = true
		if err := checkSOCKSAuth(&c); err != nil {
			return candidate.Candidate{}, err
		}
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		// No port: "host" or "[::1]".
		if strings.HasPrefix(hostport, "[") && strings.HasSuffix(hostport, "]") {
			host, port = hostport[1:len(hostport)-1], gk.port
		} else if !strings.Contains(hostport, ":") {
			host, port = hostport, gk.port
		} else {
			return candidate.Candidate{}, errors.New("bad proxy address (want host:port)")
		}
	}
	if host == "" {
		return candidate.Candidate{}, errors.New("proxy URL has no host")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return candidate.Candidate{}, fmt.Errorf("bad proxy port %q", port)
	}
	// The host is normalized like every destination (SPEC GW-2 dedupes by
	// normalized host:port): lower case, IDN to punycode, canonical IP, no
	// trailing dot. Garbage is refused here, not at dial. Unlike a
	// destination's, a gateway's IPv6 zone id is kept: it says which link
	// a link-local gateway is on, so the dial needs it.
	host, zone, err := splitZone(host)
	if err != nil {
		return candidate.Candidate{}, err
	}
	h, err := NormalizeHost(host)
	if err != nil {
		return candidate.Candidate{}, fmt.Errorf("bad proxy host: %w", err)
	}
	if zone != "" {
		h += "%" + zone
	}
	c.Addr = net.JoinHostPort(h, strconv.Itoa(n))
	return c, nil
}

// splitZone splits an IPv6 literal's zone id off host (no brackets):
// "fe80::1%25eth0" (RFC 6874 §2, percent-decoded after "%25") and
// "fe80::1%eth0" (curl's lenient form) both give ("fe80::1", "eth0"). A
// host without ':' is returned as is (a '%' there is NormalizeHost's error).
func splitZone(host string) (addr, zone string, err error) {
	i := strings.IndexByte(host, '%')
	if i < 0 || !strings.Contains(host[:i], ":") {
		return host, "", nil
	}
	zone = host[i+1:]
	if strings.HasPrefix(zone, "25") {
		if zone, err = url.PathUnescape(zone[2:]); err != nil {
			return "", "", errors.New("bad proxy host: malformed percent-escape in IPv6 zone id")
		}
	}
	if zone == "" || len(zone) > 64 || strings.IndexFunc(zone, func(r rune) bool { return !isUnreserved(r) }) >= 0 {
		return "", "", fmt.Errorf("bad proxy host: IPv6 zone id %q (want an interface name or number)", zone)
	}
	return host[:i], zone, nil
}

// isUnreserved reports whether r is an RFC 3986 §2.3 unreserved character,
// what an RFC 6874 zone id is made of.
func isUnreserved(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-._~", r)
}

// parseGatewayQuery reads an https gateway's query: only "ca=FILE".
func parseGatewayQuery(c *candidate.Candidate, query string) error {
	if c.Kind != candidate.KindHTTPS {
		return errors.New("proxy URL must not have a query (only https:// takes ?ca=FILE)")
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return errors.New("malformed query in proxy URL")
	}
	for k, v := range q {
		if k != "ca" {
			return fmt.Errorf("unknown proxy URL parameter %q (https:// takes ?ca=FILE)", k)
		}
		if len(v) != 1 || v[0] == "" {
			return errors.New("proxy URL parameter ca= wants one file name")
		}
		c.CAFile = v[0]
	}
	return nil
}

// checkSOCKSAuth applies RFC 1929's field sizes to a SOCKS5 gateway's
// credentials; "socks5://@h" (both empty) means none.
func checkSOCKSAuth(c *candidate.Candidate) error {
	if !c.IsSOCKS() {
		return nil
	}
	switch {
	case c.User == "" && c.Password == "":
		c.HasAuth = false
	case c.User == "" || len(c.User) > 255 || len(c.Password) > 255:
		return errors.New("SOCKS5 user name must be 1-255 bytes and password at most 255 (RFC 1929)")
	}
	return nil
}
