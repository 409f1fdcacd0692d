package settings

import (
	"fmt"
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
//
// A gateway (the list's items, upstream-url) whose password is the mask
// matches a stored one with a password as the proxy reads both
// (maskKey: scheme, user, host:port and CA file after route.ParseGateway,
// so "bob:***@h:1", "HTTP://bob:***@h:1" and "http://bob:***@h:1/" are one
// gateway); the password itself is not compared. Each field is matched
// against its own stored value only: a gateway item never takes
// upstream-url's password, nor the other way. Within the list, equal
// forms match by position: the i-th masked item of a form takes the i-th
// stored item of that form, so two stored gateways that show alike each
// keep their own password (a list naming one host:port twice is refused
// anyway, GW-2; one such list can still come from a start, and the first,
// the one the proxy uses, is what a single masked item keeps).
func unmask(key string, x, cur any) any {
	switch key {
	case Gateway:
		stored := map[string][]string{}
		for _, o := range cur.([]string) {
			if k, ok := maskKey(o); ok && route.RedactURL(o) != o {
				stored[k] = append(stored[k], o)
			}
		}
		l := slices.Clone(x.([]string))
		for i, g := range l {
			if !maskedPassword(g) {
				continue
			}
			if k, ok := maskKey(g); ok && len(stored[k]) > 0 {
				l[i], stored[k] = stored[k][0], stored[k][1:]
			}
		}
		return l
	case UpstreamURL:
		s, ok := x.(string)
		c, curOK := cur.(string)
		if ok && curOK && maskedPassword(s) && route.RedactURL(c) != c {
			ks, okS := maskKey(s)
			kc, okC := maskKey(c)
			if okS && okC && ks == kc {
				return cur
			}
		}
	case UpstreamHost, HealthURL:
		s, ok := x.(string)
		c, curOK := cur.(string)
		if ok && curOK && s != c && s == mask(key, c) {
			return cur
		}
	}
	return x
}

// maskKey is gateway g as the proxy reads it less its password: kind,
// user, host:port and CA file (route.ParseGateway); false when g does not
// parse.
func maskKey(g string) (string, bool) {
	cd, err := route.ParseGateway(g, Gateway)
	if err != nil || !cd.HasAuth {
		return "", false
	}
	return fmt.Sprintf("%v\x00%s\x00%s\x00%s", cd.Kind, cd.User, cd.Addr, cd.CAFile), true
}

// The messages of a masked part that unmask found nothing to keep for.
const (
	maskedPasswordMsg = "the password *** is how the settings show a stored password: it keeps the stored password of this same gateway " +
		"(scheme, user, host and port) only, and none is stored for it: send the real password, or leave it out"
	maskedQueryMsg = "the query ?*** is how the settings show a stored query: it keeps the stored query of this same URL only, " +
		"and none is stored for it: send the real query, or leave it out"
)

// maskedPassword reports whether the gateway or upstream URL g has a
// password that is the mask "***" as typed, as RedactURL finds the
// password. Check refuses it in every source: a masked value sent back
// means the stored secret of the same gateway (unmask), and where it is
// still masked there was none to keep, so storing it would make "***"
// the password. Percent-encoded stars ("%2A%2A%2A") are no mask: they
// are how a password that is "***" is written (docs/flags.md).
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
