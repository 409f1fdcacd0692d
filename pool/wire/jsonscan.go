package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"
)

// A small JSON scanner over raw bytes for the request paths that must not
// copy a client body (SPEC POOL-17, memory): it finds value boundaries
// without allocating, so a 30 MiB body is walked, not duplicated. It trusts
// its input to be JSON only as far as it needs: malformed input makes it
// report failure (-1 / false), never panic; ParseRequest still validates
// the body (reqscan.go).

// maxScanDepth bounds nesting for the scanner and the canonical hash.
const maxScanDepth = 128

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the offset after the string literal starting at b[i]
// ('"'), or -1. Eight bytes at a time while none is '"' or '\\':
// bytes.IndexAny with two bytes tests each byte against a set, and a
// request's long prompt strings are most of its bytes. FuzzSkipString
// holds it to the byte-by-byte rule.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); {
		for j+8 <= len(b) && quoteFreeWord(binary.LittleEndian.Uint64(b[j:])) {
			j += 8
		}
		for j < len(b) && b[j] != '"' && b[j] != '\\' {
			j++
		}
		if j >= len(b) {
			return -1
		}
		if b[j] == '"' {
			return j + 1
		}
		j += 2 // an escape: skip the escaped byte
	}
	return -1
}

// quoteFreeWord reports that none of the 8 bytes of x is '"' or '\\'.
func quoteFreeWord(x uint64) bool {
	q := x ^ (swarLo * '"')
	s := x ^ (swarLo * '\\')
	return ((q-swarLo)&^q|(s-swarLo)&^s)&swarHi == 0
}

// skipValue returns the offset after the value starting at or after b[i]
// (whitespace first), or -1.
func skipValue(b []byte, i int) int { return skipDepth(b, skipWS(b, i), 0) }

func skipDepth(b []byte, i, depth int) int {
	if i >= len(b) || depth > maxScanDepth {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		closer := byte('}')
		if b[i] == '[' {
			closer = ']'
		}
		j := skipWS(b, i+1)
		if j < len(b) && b[j] == closer {
			return j + 1
		}
		for j < len(b) {
			if closer == '}' {
				if j = skipWS(b, j); j >= len(b) || b[j] != '"' {
					return -1
				}
				if j = skipString(b, j); j < 0 {
					return -1
				}
				if j = skipWS(b, j); j >= len(b) || b[j] != ':' {
					return -1
				}
				j++
			}
			if j = skipDepth(b, skipWS(b, j), depth+1); j < 0 {
				return -1
			}
			if j = skipWS(b, j); j >= len(b) {
				return -1
			}
			switch b[j] {
			case ',':
				j++
			case closer:
				return j + 1
			default:
				return -1
			}
		}
		return -1
	}
	j := i
	for j < len(b) && bytes.IndexByte([]byte(",}] \t\r\n"), b[j]) < 0 {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// eachMember calls fn for each member of the JSON object b (whitespace
// around it allowed) with the decoded key and the value's offsets
// [vs, ve); fn returns false to stop. It reports false when b is not an
// object (or a member is malformed).
func eachMember(b []byte, fn func(key string, vs, ve int) bool) bool {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return true
	}
	for i < len(b) {
		if b[i] != '"' {
			return false
		}
		ke := skipString(b, i)
		if ke < 0 {
			return false
		}
		key := decodeKey(b[i:ke])
		j := skipWS(b, ke)
		if j >= len(b) || b[j] != ':' {
			return false
		}
		vs := skipWS(b, j+1)
		ve := skipDepth(b, vs, 0)
		if ve < 0 {
			return false
		}
		if !fn(key, vs, ve) {
			return true
		}
		if i = skipWS(b, ve); i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
	return false
}

// decodeKey decodes a (short) string literal; escapes and invalid UTF-8
// (replaced by U+FFFD) go through encoding/json.
func decodeKey(lit []byte) string {
	if bytes.IndexByte(lit, '\\') < 0 && utf8.Valid(lit) {
		return string(lit[1 : len(lit)-1])
	}
	var s string
	_ = json.Unmarshal(lit, &s)
	return s
}

// rawView is a json.RawMessage that keeps a view of the input instead of a
// copy. encoding/json hands UnmarshalJSON a sub-slice of the []byte given
// to json.Unmarshal, which the pool owns and never changes for the life of
// the call, so the view stays valid. Use it only with json.Unmarshal (a
// Decoder reuses its buffer).
type rawView []byte

// UnmarshalJSON keeps b (see rawView).
func (r *rawView) UnmarshalJSON(b []byte) error {
	*r = b
	return nil
}

// eachElement calls fn with the offsets [vs, ve) of each element of the
// JSON array b; it reports false when b is not an array or is malformed.
func eachElement(b []byte, fn func(vs, ve int) bool) bool {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '[' {
		return false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return true
	}
	for i < len(b) {
		ve := skipDepth(b, i, 0)
		if ve < 0 {
			return false
		}
		if !fn(i, ve) {
			return true
		}
		if i = skipWS(b, ve); i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case ']':
			return true
		default:
			return false
		}
	}
	return false
}

// hasTypedRaw reports whether the JSON value b contains, at any depth up to
// 6, an object whose "type" is a string in types, without decoding b.
func hasTypedRaw(b []byte, types map[string]bool, depth int) bool {
	b = bytes.TrimSpace(b)
	if depth > 6 || len(b) == 0 {
		return false
	}
	found := false
	switch b[0] {
	case '{':
		eachMember(b, func(k string, vs, ve int) bool {
			v := b[vs:ve]
			if k == "type" && len(v) > 1 && v[0] == '"' && types[decodeKey(v)] {
				found = true
			} else if v[0] == '{' || v[0] == '[' {
				found = hasTypedRaw(v, types, depth+1)
			}
			return !found
		})
	case '[':
		eachElement(b, func(vs, ve int) bool {
			found = hasTypedRaw(b[vs:ve], types, depth+1)
			return !found
		})
	}
	return found
}

// canonHash writes a canonical form of the JSON value b to h: object keys
// sorted, key drop left out (Anthropic's cache_control markers move
// between turns), whitespace between tokens ignored; strings and numbers
// as sent. Large strings are hashed in place, never copied.
func canonHash(h interface{ Write([]byte) (int, error) }, b []byte, drop string, depth int) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return
	}
	if depth > maxScanDepth || (b[0] != '{' && b[0] != '[') {
		_, _ = h.Write(b)
		return
	}
	if b[0] == '[' {
		_, _ = h.Write([]byte{'['})
		if !eachElement(b, func(vs, ve int) bool {
			canonHash(h, b[vs:ve], drop, depth+1)
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
	if !eachMember(b, func(k string, vs, ve int) bool {
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
		canonHash(h, m.v, drop, depth+1)
		_, _ = h.Write([]byte{','})
	}
	_, _ = h.Write([]byte{'}'})
}
