// Package path is the vocabulary of paths to an origin shared by selection
// (proxy/route), path opening (proxy/dial) and the upstream HTTP client
// (proxy/upstream): the Candidate, and PathError with its Phase and
// cooldown Tier (SPEC CD-1, CD-3). It has no dependencies on them and opens
// no sockets.
package path

import (
	"encoding/base64"
	"net/url"
)

// Candidate is one path to an origin: either an upstream HTTP proxy (a
// "gateway") or a direct connection. The zero value is not useful; use
// Direct or route.ParseGateway. Candidates are compared by Key.
type Candidate struct {
	// Direct is true for the direct path; Addr and credentials are empty then.
	Direct bool
	// Addr is the gateway's normalized "host:port" (IPv6 bracketed, host
	// lowercased); it is the candidate's identity (SPEC GW-2).
	Addr string
	// User and Password are the percent-decoded Basic credentials from the
	// gateway URL (SPEC GW-4); HasAuth tells an empty user from none.
	User, Password string
	HasAuth        bool
	// Source names where the candidate came from ("upstream-url",
	// "gateway", "env:HTTPS_PROXY", "direct"), for --print-config and logs.
	Source string
}

// Direct is the direct candidate; it is always last in the default order
// (SPEC GW-1).
var Direct = Candidate{Direct: true, Source: "direct"}

// Key is the identity used by the cache, cooldowns and health preference:
// "direct" or the gateway's "host:port".
func (c Candidate) Key() string {
	if c.Direct {
		return "direct"
	}
	return c.Addr
}

// String is the redacted display form: "direct", "http://host:port" or
// "http://user:***@host:port". It never contains the password.
func (c Candidate) String() string {
	if c.Direct {
		return "direct"
	}
	if c.HasAuth {
		return "http://" + url.User(c.User).String() + ":***@" + c.Addr
	}
	return "http://" + c.Addr
}

// ProxyAuthorization is the value of the Proxy-Authorization header to send
// to this gateway ("Basic base64(user:pass)", RFC 7617), or "" when the
// candidate has no credentials or is direct (SPEC GW-4).
func (c Candidate) ProxyAuthorization() string {
	if c.Direct || !c.HasAuth {
		return ""
	}
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(c.User+":"+c.Password))
}
