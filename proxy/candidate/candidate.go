// Package candidate is the vocabulary of paths to an origin shared by selection
// (proxy/route), path opening (proxy/dial) and the upstream HTTP client
// (proxy/upstream): the Candidate, and PathError with its Phase and
// cooldown Tier. It has no dependencies on them and opens
// no sockets.
package candidate

import (
	"encoding/base64"
	"net/url"
)

// Kind is a gateway's protocol (SPEC GW-3). The zero value is KindHTTP, so
// a Candidate literal without Kind is an http:// gateway.
type Kind uint8

// The gateway kinds, one per URL scheme a gateway may use.
const (
	// KindHTTP is an HTTP/1.1 proxy over TCP: CONNECT for tunnels,
	// absolute-form for plain requests, Basic credentials.
	KindHTTP Kind = iota
	// KindHTTPS is the same HTTP/1.1 proxy inside TLS to the gateway,
	// verified against the gateway's own name.
	KindHTTPS
	// KindSOCKS5 is a SOCKS5 gateway (RFC 1928, RFC 1929); we resolve the
	// destination name and send its address.
	KindSOCKS5
	// KindSOCKS5H is a SOCKS5 gateway that resolves the destination name
	// itself (the name is sent, ATYP DOMAINNAME).
	KindSOCKS5H
)

// String is the URL scheme: "http", "https", "socks5" or "socks5h".
func (k Kind) String() string {
	switch k {
	case KindHTTPS:
		return "https"
	case KindSOCKS5:
		return "socks5"
	case KindSOCKS5H:
		return "socks5h"
	}
	return "http"
}

// Candidate is one path to an origin: either an upstream proxy (a
// "gateway") of some Kind or a direct connection. The zero value is not
// useful; use Direct or route.ParseGateway. Candidates are compared by Key.
type Candidate struct {
	// Direct is true for the direct path; Addr and credentials are empty then.
	Direct bool
	// Kind is the gateway's protocol; unused for Direct.
	Kind Kind
	// Addr is the gateway's normalized "host:port" (IPv6 bracketed, host
	// lowercased); it is the candidate's identity.
	Addr string
	// User and Password are the percent-decoded credentials from the
	// gateway URL: Basic for http/https, RFC 1929 for SOCKS5;
	// HasAuth tells an empty user from none.
	User, Password string
	HasAuth        bool
	// CAFile is an https gateway's own trust anchors: a PEM file whose
	// certificates replace the system roots when verifying this gateway
	// (URL query "ca"); "" uses the system roots.
	CAFile string
	// Source names where the candidate came from ("upstream-url",
	// "gateway", "env:HTTPS_PROXY", "direct"), for --print-config and logs.
	Source string
}

// Direct is the direct candidate; it is always last in the default order.
var Direct = Candidate{Direct: true, Source: "direct"}

// Key is the identity used by the cache, cooldowns and health preference:
// "direct" or the gateway's "host:port".
func (c Candidate) Key() string {
	if c.Direct {
		return "direct"
	}
	return c.Addr
}

// String is the redacted display form: "direct", "KIND://host:port" or
// "KIND://user:***@host:port" (KIND as Kind.String). It never contains the
// password.
func (c Candidate) String() string {
	if c.Direct {
		return "direct"
	}
	if c.HasAuth {
		return c.Kind.String() + "://" + url.User(c.User).String() + ":***@" + c.Addr
	}
	return c.Kind.String() + "://" + c.Addr
}

// KindName is "direct" for the direct path, else Kind.String (status,
// --print-config).
func (c Candidate) KindName() string {
	if c.Direct {
		return "direct"
	}
	return c.Kind.String()
}

// SpeaksHTTP reports whether requests to this candidate are addressed to an
// HTTP proxy (http:// or https:// gateway): absolute-form request lines,
// CONNECT for tunnels, Proxy-Authorization. For direct and SOCKS5 paths the
// bytes reach the origin itself, in origin-form.
func (c Candidate) SpeaksHTTP() bool {
	return !c.Direct && (c.Kind == KindHTTP || c.Kind == KindHTTPS)
}

// IsSOCKS reports whether the candidate is a SOCKS5 gateway (socks5:// or
// socks5h://).
func (c Candidate) IsSOCKS() bool {
	return !c.Direct && (c.Kind == KindSOCKS5 || c.Kind == KindSOCKS5H)
}

// ProxyAuthorization is the value of the Proxy-Authorization header to send
// to this gateway ("Basic base64(user:pass)", RFC 7617), or "" when the
// candidate has no credentials, is direct or is a SOCKS5 gateway (whose
// credentials go in the RFC 1929 handshake, never to the origin; SPEC GW-4).
func (c Candidate) ProxyAuthorization() string {
	if !c.SpeaksHTTP() || !c.HasAuth {
		return ""
	}
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(c.User+":"+c.Password))
}
