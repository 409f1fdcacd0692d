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

	"github.com/dual-proxy/dual-proxy/proxy/path"
)

// ErrUnsupportedScheme is returned (wrapped) by ParseGateway for https://,
// socks*:// and other non-http schemes (SPEC GW-3; GW-6 will lift https).
var ErrUnsupportedScheme = errors.New("unsupported proxy scheme (only http:// is supported)")

// ParseGateway parses a gateway given as "http://[user:pass@]host:port[/]"
// or bare "host:port". A missing port defaults to 80 for http URLs. User and
// password are percent-decoded; a malformed escape is an error (SPEC GW-4).
// Errors never contain the password. source is copied to Candidate.Source.
func ParseGateway(raw, source string) (path.Candidate, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return path.Candidate{}, errors.New("empty proxy address")
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	scheme, rest, _ := strings.Cut(s, "://")
	scheme = strings.ToLower(scheme)
	if scheme != "http" {
		return path.Candidate{}, fmt.Errorf("%s://: %w", scheme, ErrUnsupportedScheme)
	}
	// Split userinfo by hand so a bad escape in the password is reported
	// without echoing it (url.Parse errors quote the whole input).
	hostport := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		if tail := rest[i:]; tail != "/" && tail != "" {
			return path.Candidate{}, errors.New("proxy URL must not have a path, query or fragment")
		}
		hostport = rest[:i]
	}
	var c path.Candidate
	c.Source = source
	if at := strings.LastIndex(hostport, "@"); at >= 0 {
		userinfo := hostport[:at]
		hostport = hostport[at+1:]
		u, p, _ := strings.Cut(userinfo, ":")
		var err error
		if c.User, err = url.PathUnescape(u); err != nil {
			return path.Candidate{}, errors.New("malformed percent-escape in proxy user name")
		}
		if c.Password, err = url.PathUnescape(p); err != nil {
			return path.Candidate{}, errors.New("malformed percent-escape in proxy password")
		}
		c.HasAuth = true
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		// No port: "host" or "[::1]".
		if strings.HasPrefix(hostport, "[") && strings.HasSuffix(hostport, "]") {
			host, port = hostport[1:len(hostport)-1], "80"
		} else if !strings.Contains(hostport, ":") {
			host, port = hostport, "80"
		} else {
			return path.Candidate{}, errors.New("bad proxy address (want host:port)")
		}
	}
	if host == "" {
		return path.Candidate{}, errors.New("proxy URL has no host")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return path.Candidate{}, fmt.Errorf("bad proxy port %q", port)
	}
	// The host is normalized like every destination (SPEC GW-2 dedupes by
	// normalized host:port): lower case, IDN to punycode, canonical IP, no
	// trailing dot, no IPv6 zone id. Garbage is refused here, not at dial.
	h, err := NormalizeHost(host)
	if err != nil {
		return path.Candidate{}, fmt.Errorf("bad proxy host: %w", err)
	}
	c.Addr = net.JoinHostPort(h, strconv.Itoa(n))
	return c, nil
}
