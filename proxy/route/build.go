package route

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// EnvProxy is one proxy variable from the startup environment
// (HTTPS_PROXY, https_proxy, HTTP_PROXY, http_proxy, ALL_PROXY, all_proxy),
// read before the launcher rewrites them for its child. Var names the
// variable, Value is its raw value.
type EnvProxy struct{ Var, Value string }

// CandidateSpec is the configuration BuildCandidates turns into the
// candidate list. Defaults are applied by the caller (cmd/).
type CandidateSpec struct {
	// UpstreamURL is --upstream-url; when set it is the first gateway and
	// UpstreamHost/UpstreamPort are ignored.
	UpstreamURL string
	// UpstreamHost and UpstreamPort are --upstream-host and --upstream-port
	// (default 127.0.0.1:7897). An empty UpstreamHost with no UpstreamURL
	// means no first gateway.
	UpstreamHost string
	UpstreamPort int
	// Gateways are the --gateway / GATEWAY values, in order.
	Gateways []string
	// EnvProxies are the startup environment's proxies, in the order
	// their variables become candidates.
	EnvProxies []EnvProxy
	// ListenHost and ListenPort are the proxy's own listener, for self-loop
	// protection. Pass the port actually bound (port fallback may have
	// moved to a later one); ListenPort 0 disables the check.
	ListenHost string
	ListenPort int
	// LocalAddrs optionally lists this machine's interface addresses; when
	// ListenHost is unspecified (0.0.0.0 or ::) a gateway at one of them on
	// ListenPort is ourselves too. Nil is fine.
	LocalAddrs []netip.Addr
}

// BuildCandidates returns the candidates in default order (SPEC GW-1): the
// first gateway (UpstreamURL, else UpstreamHost:UpstreamPort), then
// Gateways in order, then EnvProxies in order, then Direct, always last.
//
// Rules applied:
//   - GW-3: http://, https://, socks5:// and socks5h:// gateways
//     (ParseGateway). A first gateway of another kind (socks4://, …) or
//     unparsable is an error (the CLI exits 2); the error never contains a
//     password. An extra gateway that is so is skipped with one warning
//     per distinct value.
//   - GW-2: candidates are deduplicated by normalized host:port whatever
//     their kind (a "mixed" port that speaks HTTP and SOCKS5 is one
//     candidate); the first occurrence wins and keeps its kind and
//     credentials. A candidate pointing at
//     our own listener is dropped with a warning, the first gateway too:
//     same port and a loopback address (127.0.0.0/8, ::1), "localhost" or
//     a name under ".localhost", an unspecified address (0.0.0.0, ::), the
//     listen host itself, or — when the listen host is unspecified — one
//     of LocalAddrs.
//   - GW-4: user and password are percent-decoded (ParseGateway).
//
// Warnings are one line each and repeat no secret (they reach
// the log and the settings and status documents, which need no token):
// each names the gateway by its place ("gateway[2]", "gateway from
// HTTPS_PROXY", "gateway from upstream-url") and its RedactURL form, and
// says why with words that quote no part of the value.
func BuildCandidates(s CandidateSpec) (cands []candidate.Candidate, warnings []string, err error) {
	seen := make(map[string]bool)
	warned := make(map[string]bool)
	warn := func(raw, where, why string) {
		if warned[raw] {
			return
		}
		warned[raw] = true
		warnings = append(warnings, fmt.Sprintf("skipping %s (%s): %s", where, RedactURL(strings.TrimSpace(raw)), why))
	}
	self := newSelfCheck(s)
	add := func(c candidate.Candidate, raw, where string) {
		if seen[c.Addr] {
			return
		}
		seen[c.Addr] = true
		if self.is(c.Addr) {
			warn(raw, where, "points at this proxy's own listener")
			return
		}
		cands = append(cands, c)
	}

	switch {
	case s.UpstreamURL != "":
		c, err := ParseGateway(s.UpstreamURL, "upstream-url")
		if err != nil {
			return nil, nil, fmt.Errorf("upstream URL %s: %w", RedactURL(s.UpstreamURL), err)
		}
		add(c, s.UpstreamURL, "gateway from upstream-url")
	case s.UpstreamHost != "":
		raw := net.JoinHostPort(strings.Trim(s.UpstreamHost, "[]"), strconv.Itoa(s.UpstreamPort))
		c, err := ParseGateway(raw, "upstream")
		if err != nil {
			return nil, nil, fmt.Errorf("upstream %s: %w", raw, err)
		}
		add(c, raw, "gateway from upstream-host")
	}
	extra := func(raw, source, where string) {
		if strings.TrimSpace(raw) == "" {
			return
		}
		c, err := ParseGateway(raw, source)
		if err != nil {
			warn(raw, where, err.Error())
			return
		}
		add(c, raw, where)
	}
	for i, g := range s.Gateways {
		extra(g, "gateway", fmt.Sprintf("gateway[%d]", i))
	}
	for _, e := range s.EnvProxies {
		extra(e.Value, "env:"+e.Var, "gateway from "+e.Var)
	}
	return append(cands, candidate.Direct), warnings, nil
}

// selfCheck recognizes addresses of our own listener.
type selfCheck struct {
	port        string
	listenHost  string
	unspecified bool
	local       []netip.Addr
}

func newSelfCheck(s CandidateSpec) selfCheck {
	if s.ListenPort == 0 {
		return selfCheck{}
	}
	sc := selfCheck{port: strconv.Itoa(s.ListenPort), local: s.LocalAddrs}
	if h, err := NormalizeHost(s.ListenHost); err == nil {
		sc.listenHost = h
		if a, err := netip.ParseAddr(h); err == nil && a.IsUnspecified() {
			sc.unspecified = true
		}
	} else if s.ListenHost == "" {
		sc.unspecified = true // Go's net.Listen("", port) listens everywhere
	}
	return sc
}

func (sc selfCheck) is(addr string) bool {
	if sc.port == "" {
		return false
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port != sc.port {
		return false
	}
	host, _, _ = strings.Cut(host, "%") // a gateway keeps its IPv6 zone id (ParseGateway); ours have none
	if host == sc.listenHost || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	a = a.Unmap()
	if a.IsLoopback() || a.IsUnspecified() {
		return true
	}
	if sc.unspecified {
		for _, l := range sc.local {
			if l.Unmap() == a {
				return true
			}
		}
	}
	return false
}

// RedactURL returns raw with every part that may be a secret replaced by
// "***": the password of its userinfo ("http://u:***@h:1"; the user name
// stays), a "port" that is not one to five digits ("http://user:pass" with
// the host left out reads as host "user", port "pass"), the whole of a
// "user:pass:host" typo, each query parameter but ca= and a
// fragment. It works on values that do not parse as URLs too, so the
// document, the warnings and the errors about a bad proxy value never show
// a password (SPEC LIS-4). A value with none of these is
// returned as is.
func RedactURL(raw string) string {
	prefix, rest := "", raw
	if i := strings.Index(raw, "://"); i >= 0 {
		prefix, rest = raw[:i+3], raw[i+3:]
	}
	userinfo := ""
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		userinfo, rest = rest[:at+1], rest[at+1:]
		if user, _, ok := strings.Cut(userinfo, ":"); ok {
			userinfo = user + ":***@"
		}
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	host, tail := rest[:end], rest[end:]
	bracketed := strings.HasPrefix(host, "[")
	if userinfo == "" && !bracketed && strings.Count(host, ":") > 1 {
		return prefix + "***" // "user:pass:host" typo: cannot tell the password apart
	}
	if c := strings.LastIndex(host, ":"); c >= 0 && c < len(host)-1 && (!bracketed || strings.HasSuffix(host[:c], "]")) && !isPort(host[c+1:]) {
		host = host[:c+1] + "***"
	}
	return prefix + userinfo + host + redactTail(tail)
}

// redactTail is what follows a gateway value's authority with each query
// parameter but ca= and the fragment masked; the path stays.
func redactTail(tail string) string {
	path, frag, hasFrag := strings.Cut(tail, "#")
	path, query, hasQuery := strings.Cut(path, "?")
	if hasQuery {
		pairs := strings.Split(query, "&")
		for i, p := range pairs {
			if !strings.HasPrefix(p, "ca=") && p != "" {
				pairs[i] = "***"
			}
		}
		path += "?" + strings.Join(pairs, "&")
	}
	if hasFrag && frag != "" {
		path += "#***"
	} else if hasFrag {
		path += "#"
	}
	return path
}

// isPort reports whether s reads as a port number, right or wrong: one to
// five decimal digits ("99999" is shown so the typo can be seen; a longer
// or non-numeric one may be a password).
func isPort(s string) bool {
	return len(s) >= 1 && len(s) <= 5 && strings.Trim(s, "0123456789") == ""
}
