package jsonscan

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"unicode/utf8"
)

// MaxSkipDepth bounds nesting for the Skip functions, EachMember,
// EachElement and the callers that recurse over their values.
const MaxSkipDepth = 128

// SkipWS returns the offset of the first byte at or after b[i] that is not
// JSON whitespace (RFC 8259 §2: space, tab, LF, CR), or len(b).
func SkipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// SkipString returns the offset after the string literal starting at b[i]
// ('"'), or -1. A short string (a key, a small value) is read eight bytes
// at a time while none is '"' or '\\'; past 40 bytes of neither it is a long
// one (a prompt, a file: most of a request's bytes), whose quotes are found
// by bytes.IndexByte, a quote ending it unless an odd run of backslashes
// precedes it. FuzzSkipString holds both to the byte-by-byte rule.
func SkipString(b []byte, i int) int {
	j := i + 1
	for k := 0; k < 5 && j+8 <= len(b) && quoteFreeWord(binary.LittleEndian.Uint64(b[j:])); k++ {
		j += 8
	}
	if j+8 <= len(b) && quoteFreeWord(binary.LittleEndian.Uint64(b[j:])) {
		return skipLongString(b, i, j+8)
	}
	for j < len(b) {
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

// skipLongString is SkipString of the string starting at b[i] from b[j]
// on, b[i+1:j] holding no quote and no backslash.
func skipLongString(b []byte, i, j int) int {
	for j < len(b) {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		q := j + k
		n := 0
		for q-n-1 > i && b[q-n-1] == '\\' {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
	return -1
}

// SkipValue returns the offset after the value starting at or after b[i]
// (whitespace first), or -1.
func SkipValue(b []byte, i int) int { return skipDepth(b, SkipWS(b, i), 0) }

// SkipValid returns the offset after the value starting at b[i] in b,
// which must be valid JSON (json.Valid said so, or json.Unmarshal took it):
// it counts brackets outside strings and checks nothing, so it takes any
// depth and is one pass of SkipString over the strings. On bytes that are
// not valid JSON its answer is some offset in [i, len(b)].
func SkipValid(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			j := SkipString(b, i)
			if j < 0 {
				return len(b)
			}
			if depth == 0 {
				return j
			}
			i = j - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
	}
	return len(b)
}

func skipDepth(b []byte, i, depth int) int {
	if i >= len(b) || depth > MaxSkipDepth {
		return -1
	}
	switch b[i] {
	case '"':
		return SkipString(b, i)
	case '{', '[':
		closer := byte('}')
		if b[i] == '[' {
			closer = ']'
		}
		j := SkipWS(b, i+1)
		if j < len(b) && b[j] == closer {
			return j + 1
		}
		for j < len(b) {
			if closer == '}' {
				if j = SkipWS(b, j); j >= len(b) || b[j] != '"' {
					return -1
				}
				if j = SkipString(b, j); j < 0 {
					return -1
				}
				if j = SkipWS(b, j); j >= len(b) || b[j] != ':' {
					return -1
				}
				j++
			}
			if j = skipDepth(b, SkipWS(b, j), depth+1); j < 0 {
				return -1
			}
			if j = SkipWS(b, j); j >= len(b) {
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

// EachMember calls fn for each member of the JSON object b (whitespace
// around it allowed) with the decoded key and the value's offsets
// [vs, ve); fn returns false to stop. It reports false when b is not an
// object (or a member is malformed).
func EachMember(b []byte, fn func(key string, vs, ve int) bool) bool {
	i := SkipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = SkipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return true
	}
	for i < len(b) {
		if b[i] != '"' {
			return false
		}
		ke := SkipString(b, i)
		if ke < 0 {
			return false
		}
		key := DecodeKey(b[i:ke])
		j := SkipWS(b, ke)
		if j >= len(b) || b[j] != ':' {
			return false
		}
		vs := SkipWS(b, j+1)
		ve := skipDepth(b, vs, 0)
		if ve < 0 {
			return false
		}
		if !fn(key, vs, ve) {
			return true
		}
		if i = SkipWS(b, ve); i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = SkipWS(b, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
	return false
}

// DecodeKey decodes a (short) string literal; escapes and invalid UTF-8
// (replaced by U+FFFD) go through encoding/json.
func DecodeKey(lit []byte) string {
	if bytes.IndexByte(lit, '\\') < 0 && utf8.Valid(lit) {
		return string(lit[1 : len(lit)-1])
	}
	var s string
	_ = json.Unmarshal(lit, &s)
	return s
}

// EachElement calls fn with the offsets [vs, ve) of each element of the
// JSON array b; it reports false when b is not an array or is malformed.
func EachElement(b []byte, fn func(vs, ve int) bool) bool {
	i := SkipWS(b, 0)
	if i >= len(b) || b[i] != '[' {
		return false
	}
	i = SkipWS(b, i+1)
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
		if i = SkipWS(b, ve); i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = SkipWS(b, i+1)
		case ']':
			return true
		default:
			return false
		}
	}
	return false
}
