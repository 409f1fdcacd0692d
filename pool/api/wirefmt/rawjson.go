package wirefmt

import (
	"bytes"
	"slices"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/internal/jsonscan"
)

// Walks of a client body in place, on pool/internal/jsonscan, for the
// request paths that must not copy it (memory): a 30 MiB body
// is walked, not duplicated. Malformed input makes them report failure,
// never panic; ParseRequest still validates the body (reqscan.go).

// RawView is a json.RawMessage that keeps a view of the input instead of a
// copy. encoding/json hands UnmarshalJSON a sub-slice of the []byte given
// to json.Unmarshal, which the pool owns and never changes for the life of
// the call, so the view stays valid. Use it only with json.Unmarshal (a
// Decoder reuses its buffer).
type RawView []byte

// UnmarshalJSON keeps b (see rawView).
func (r *RawView) UnmarshalJSON(b []byte) error {
	*r = b
	return nil
}

// HasTypedRaw reports whether the JSON value b contains, at any depth up to
// 6, an object whose "type" is a string in types, without decoding b.
func HasTypedRaw(b []byte, types map[string]bool, depth int) bool {
	b = bytes.TrimSpace(b)
	if depth > 6 || len(b) == 0 {
		return false
	}
	found := false
	switch b[0] {
	case '{':
		jsonscan.EachMember(b, func(k string, vs, ve int) bool {
			v := b[vs:ve]
			if k == "type" && len(v) > 1 && v[0] == '"' && types[jsonscan.DecodeKey(v)] {
				found = true
			} else if v[0] == '{' || v[0] == '[' {
				found = HasTypedRaw(v, types, depth+1)
			}
			return !found
		})
	case '[':
		jsonscan.EachElement(b, func(vs, ve int) bool {
			found = HasTypedRaw(b[vs:ve], types, depth+1)
			return !found
		})
	}
	return found
}

// CanonHash writes a canonical form of the JSON value b to h: object keys
// sorted, key drop left out (Anthropic's cache_control markers move
// between turns), whitespace between tokens ignored; strings and numbers
// as sent. Large strings are hashed in place, never copied.
func CanonHash(h interface{ Write([]byte) (int, error) }, b []byte, drop string, depth int) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return
	}
	if depth > jsonscan.MaxSkipDepth || (b[0] != '{' && b[0] != '[') {
		_, _ = h.Write(b)
		return
	}
	if b[0] == '[' {
		_, _ = h.Write([]byte{'['})
		if !jsonscan.EachElement(b, func(vs, ve int) bool {
			CanonHash(h, b[vs:ve], drop, depth+1)
			_, _ = h.Write([]byte{','})
			return true
		}) {
			_, _ = h.Write(b)
		}
		_, _ = h.Write([]byte{']'})
		return
	}
	type member struct {
		k string
		v []byte
	}
	var ms []member
	if !jsonscan.EachMember(b, func(k string, vs, ve int) bool {
		if k != drop {
			ms = append(ms, member{k, b[vs:ve]})
		}
		return true
	}) {
		_, _ = h.Write(b)
		return
	}
	slices.SortFunc(ms, func(x, y member) int { return strings.Compare(x.k, y.k) })
	_, _ = h.Write([]byte{'{'})
	for _, m := range ms {
		_, _ = h.Write([]byte(m.k))
		_, _ = h.Write([]byte{0, ':'})
		CanonHash(h, m.v, drop, depth+1)
		_, _ = h.Write([]byte{','})
	}
	_, _ = h.Write([]byte{'}'})
}

// EachRawMember calls fn with the raw key (without quotes) and the value
// offsets of each member of the object b; it allocates nothing. It
// reports false when b is not an object or is malformed.
func EachRawMember(b []byte, fn func(key []byte, vs, ve int)) bool {
	i := jsonscan.SkipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = jsonscan.SkipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return true
	}
	for i < len(b) && b[i] == '"' {
		ke := jsonscan.SkipString(b, i)
		if ke < 0 {
			return false
		}
		j := jsonscan.SkipWS(b, ke)
		if j >= len(b) || b[j] != ':' {
			return false
		}
		vs := jsonscan.SkipWS(b, j+1)
		ve := jsonscan.SkipValue(b, vs)
		if ve < 0 {
			return false
		}
		fn(b[i+1:ke-1], vs, ve)
		if i = jsonscan.SkipWS(b, ve); i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = jsonscan.SkipWS(b, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
	return false
}
