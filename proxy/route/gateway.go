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
// socks4a:// and every other scheme but http, https, socks5 and socks5h.
var ErrUnsupportedScheme = errors.New("unsupported proxy scheme (supported: http, https, socks5, socks5h)")

// schemeKind is a gateway URL scheme's kind and default port.
type schemeKind struct {
	kind candidate.Kind
	port string
}

// gatewayKinds maps URL schemes to kinds with the port a URL without one
// means: the scheme's (http 80, https 443) or SOCKS's conventional 1080
// (RFC 1928 §3), as curl reads them.
var gatewayKinds = map[string]schemeKind{
	"http":    {candidate.KindHTTP, "80"},
	"https":   {candidate.KindHTTPS, "443"},
	"socks5":  {candidate.KindSOCKS5, "1080"},
	"socks5h": {candidate.KindSOCKS5H, "1080"},
}

// ParseGateway parses a gateway given as "SCHEME://[user:pass@]host[:port][/]"
// (SCHEME http, https, socks5 or socks5h; SPEC GW-7) or bare
// "host:port" (http). A URL without a port gets its scheme's (80, 443,
// 1080). User and password are percent-decoded; a malformed escape is an
// error; SOCKS5 credentials must fit RFC 1929 (user 1-255
// bytes, password at most 255). An https URL may carry one query
// parameter, "ca=FILE" (percent-encoded path of a PEM file that replaces
// the system roots for this gateway); no other path, query or
// fragment is accepted. An IPv6 literal's zone id, "[fe80::1%25eth0]"
// (RFC 6874) or curl's bare "[fe80::1%eth0]", is kept in Addr as
// "[fe80::1%eth0]:port", the form net.Dial takes; it must be 1-64 RFC 3986
// unreserved characters. socks4:// and socks4a:// are ErrUnsupportedScheme.
// Errors never contain the password. source is copied to Candidate.Source.
// The steps run in order, each on what the previous left: scheme, path
// and query, userinfo, host and port.
func ParseGateway(raw, source string) (candidate.Candidate, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return candidate.Candidate{}, errors.New("empty proxy address")
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	scheme, rest, _ := strings.Cut(s, "://")
	gk, err := gatewayKind(scheme)
	if err != nil {
		return candidate.Candidate{}, err
	}
	// Split userinfo by hand so a bad escape in the password is reported
	// without echoing it (url.Parse errors quote the whole input).
	hostport, query, err := splitGatewayTail(rest)
	if err != nil {
		return candidate.Candidate{}, err
	}
	c := candidate.Candidate{Kind: gk.kind, Source: source}
	if query != "" {
		if err := parseGatewayQuery(&c, query); err != nil {
			return candidate.Candidate{}, err
		}
	}
	if hostport, err = parseGatewayUserinfo(&c, hostport); err != nil {
		return candidate.Candidate{}, err
	}
	if c.Addr, err = gatewayAddr(hostport, gk.port); err != nil {
		return candidate.Candidate{}, err
	}
	return c, nil
}

// gatewayKind looks up scheme (any case) in gatewayKinds;
// socks4 and socks4a, and every scheme not there, are
// ErrUnsupportedScheme.
func gatewayKind(scheme string) (schemeKind, error) {
	scheme = strings.ToLower(scheme)
	gk, ok := gatewayKinds[scheme]
	if !ok {
		if strings.HasPrefix(scheme, "socks4") {
			return gk, fmt.Errorf("%s://: %w; SOCKS4 has no IPv6 and no authentication, use socks5:// or socks5h://", scheme, ErrUnsupportedScheme)
		}
		return gk, fmt.Errorf("%s://: %w", scheme, ErrUnsupportedScheme)
	}
	return gk, nil
}

// splitGatewayTail splits what follows "SCHEME://" into the authority
// ([user:pass@]host[:port]) and the query (without '?'): one trailing '/'
// is allowed, a query only without a fragment, and no other path or
// fragment (https takes ?ca=FILE).
func splitGatewayTail(rest string) (hostport, query string, err error) {
	i := strings.IndexAny(rest, "/?#")
	if i < 0 {
		return rest, "", nil
	}
	tail := strings.TrimPrefix(rest[i:], "/")
	if strings.HasPrefix(tail, "?") && !strings.Contains(tail, "#") {
		return rest[:i], tail[1:], nil
	}
	if tail != "" {
		return "", "", errors.New("proxy URL must not have a path, query or fragment (https:// takes ?ca=FILE)")
	}
	return rest[:i], "", nil
}

// parseGatewayUserinfo takes "user:pass@" off hostport into c's User and
// Password, percent-decoded (a malformed escape is an error
// that does not echo it), and checks SOCKS5 credentials against RFC 1929.
// It returns the host[:port] that follows; without '@', hostport as is.
func parseGatewayUserinfo(c *candidate.Candidate, hostport string) (string, error) {
	at := strings.LastIndex(hostport, "@")
	if at < 0 {
		return hostport, nil
	}
	u, p, _ := strings.Cut(hostport[:at], ":")
	var err error
	if c.User, err = url.PathUnescape(u); err != nil {
		return "", errors.New("malformed percent-escape in proxy user name")
	}
	if c.Password, err = url.PathUnescape(p); err != nil {
		return "", errors.New("malformed percent-escape in proxy password")
	}
	c.HasAuth = true
	if err := checkSOCKSAuth(c); err != nil {
		return "", err
	}
	return hostport[at+1:], nil
}

// gatewayAddr turns "host[:port]" or "[v6][:port]" into the dial address
// "host:port", with defaultPort (the scheme's) when none is given; the
// port is 1-65535. The host is normalized like every destination (candidates
// are deduplicated by normalized host:port): lower case, IDN to punycode,
// canonical IP, no trailing dot. Garbage is refused here, not at dial.
// Unlike a destination's, a gateway's IPv6 zone id is kept: it says which
// link a link-local gateway is on, so the dial needs it (RFC 6874).
func gatewayAddr(hostport, defaultPort string) (string, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		// No port: "host" or "[::1]".
		if strings.HasPrefix(hostport, "[") && strings.HasSuffix(hostport, "]") {
			host, port = hostport[1:len(hostport)-1], defaultPort
		} else if !strings.Contains(hostport, ":") {
			host, port = hostport, defaultPort
		} else {
			return "", errors.New("bad proxy address (want host:port)")
		}
	}
	if host == "" {
		return "", errors.New("proxy URL has no host")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		// The port is not repeated: a host left out of "user:pass@host"
		// makes the password the port.
		return "", errors.New("bad proxy port (want 1-65535)")
	}
	host, zone, err := splitZone(host)
	if err != nil {
		return "", err
	}
	h, err := NormalizeHost(host)
	if err != nil {
		return "", fmt.Errorf("bad proxy host: %w", err)
	}
	if zone != "" {
		h += "%" + zone
	}
	return net.JoinHostPort(h, strconv.Itoa(n)), nil
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
			// Not repeated: a key pasted after '?' would be shown.
			return errors.New("unknown proxy URL parameter (https:// takes ?ca=FILE)")
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
