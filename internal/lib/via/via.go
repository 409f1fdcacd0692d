// Package via is request-loop detection by Via pseudonym (RFC 9110
// §7.6.3), shared by the forwarding proxy and the model pool. A gateway
// given by a host name that resolves to this proxy, two proxies that name
// each other, or a pool member whose base_url leads back to its own pool
// would forward a request to itself until descriptors run out. Every
// request sent upstream carries "Via: 1.1 NAME" with a NAME random per
// instance; a request that arrives naming this instance is answered
// 508 Loop Detected (RFC 5842 §7.2) by the caller.
package via

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// Pseudonym is one instance's Via name and its list element. The zero
// value names nobody (Looped is false for every header).
type Pseudonym struct {
	name  string // "PREFIX" + 16 hex digits
	entry string // "1.1 " + name, made once
}

// New returns a random pseudonym: prefix ("dual-proxy-",
// "dual-proxy-pool-") and 16 hex digits.
func New(prefix string) Pseudonym {
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := prefix + hex.EncodeToString(b[:])
	return Pseudonym{name: name, entry: "1.1 " + name}
}

// Name is the pseudonym alone ("dual-proxy-0123456789abcdef").
func (p Pseudonym) Name() string { return p.name }

// Entry is the Via list element to send: "1.1 NAME".
func (p Pseudonym) Entry() string { return p.entry }

// Chain is the Via value to send for a request that arrived with the Via
// field values incoming: those entries, then ours (a chain through
// several instances accumulates them).
func (p Pseudonym) Chain(incoming []string) string {
	if len(incoming) == 0 {
		return p.entry
	}
	return strings.Join(incoming, ", ") + ", " + p.entry
}

// Looped reports whether any element of the Via field values vias
// ("1.1 a, 1.1 b" each) names p: the request came round to this instance.
func (p Pseudonym) Looped(vias []string) bool {
	if p.name == "" {
		return false
	}
	for _, v := range vias {
		for _, el := range strings.Split(v, ",") {
			if f := strings.Fields(el); len(f) >= 2 && f[1] == p.name {
				return true
			}
		}
	}
	return false
}
