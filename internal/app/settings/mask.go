package settings

import (
	"net/url"
	"slices"
	"strings"

	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// Passwords never leave the instance (SPEC LIS-4): the document
// shows a gateway's, the upstream URL's or the upstream host's password as
// "***" (Check refuses user:pass@ in upstream-host; the mask is there for a
// value that reached it another way) and the health URL's query as "?***";
// a value sent back masked means the value it masks, so a page can send
// back what it got.

// Mask is the value x of key as every place that shows it does (the
// document, --print-config): credentials masked.
func Mask(key string, x any) any { return mask(key, x) }

// mask is x as the document shows it.
func mask(key string, x any) any {
	switch key {
	case Gateway:
		l := x.([]string)
		out := make([]string, len(l))
		for i, g := range l {
			out[i] = route.RedactURL(g)
		}
		return out
	case UpstreamURL:
		if u, ok := x.(string); ok {
			return route.RedactURL(u)
		}
		return x // nil: not given
	case UpstreamHost:
		// A bare IPv6 address ("::1") is no "user:pass:host" typo: only
		// a userinfo is masked.
		if h := x.(string); strings.Contains(h, "@") {
			return route.RedactURL(h)
		}
		return x
	case HealthURL:
		h := x.(string)
		if i := strings.IndexByte(h, '?'); i >= 0 {
			h = h[:i] + "?***"
		}
		return route.RedactURL(h)
	}
	return x
}

// unmask is a new value x of key with every masked part that matches the
// current value cur replaced by what it masks.
func unmask(key string, x, cur any) any {
	switch key {
	case Gateway:
		// One pass over each list: the current gateways by masked form,
		// the first of equal forms kept.
		l, byMask := slices.Clone(x.([]string)), map[string]string{}
		for _, o := range cur.([]string) {
			if m := route.RedactURL(o); m != o {
				if _, seen := byMask[m]; !seen {
					byMask[m] = o
				}
			}
		}
		for i, g := range l {
			if o, ok := byMask[g]; ok {
				l[i] = o
			}
		}
		return l
	case UpstreamURL, UpstreamHost, HealthURL:
		s, ok := x.(string)
		c, curOK := cur.(string)
		if ok && curOK && s != c && s == mask(key, c) {
			return cur
		}
	}
	return x
}

// The messages of a masked part that unmask found nothing to keep for.
const (
	maskedPasswordMsg = "the password *** is how the settings show a stored password: it keeps the stored password of this same gateway " +
		"(scheme, user, host and port) only, and none is stored for it: send the real password, or leave it out"
	maskedQueryMsg = "the query ?*** is how the settings show a stored query: it keeps the stored query of this same URL only, " +
		"and none is stored for it: send the real query, or leave it out"
)

// maskedPassword reports whether the gateway or upstream URL g has a
// password that is the mask "***" (percent-encoded too), as RedactURL
// finds the password. Check refuses it in every source: a masked value
// sent back means the stored secret of the same gateway (unmask), and
// where it is still masked there was none to keep, so storing it would
// make "***" the password.
func maskedPassword(g string) bool {
	rest := g
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return false
	}
	_, pw, ok := strings.Cut(rest[:at], ":")
	if dec, err := url.PathUnescape(pw); err == nil {
		pw = dec
	}
	return ok && pw == "***"
}

// maskedQuery reports whether the health URL h has the query the
// document shows for a stored one ("?***"): see maskedPassword.
func maskedQuery(h string) bool {
	_, q, ok := strings.Cut(h, "?")
	q, _, _ = strings.Cut(q, "#")
	return ok && q == "***"
}

// secret reports whether any value in v holds a password (a file with one
// is written 0600).
func secret(v map[string]any) bool {
	for _, k := range Keys {
		x, ok := v[k.Name]
		if !k.Secret || !ok || x == nil {
			continue
		}
		if m := mask(k.Name, x); !equal(m, x) {
			return true
		}
	}
	return false
}
