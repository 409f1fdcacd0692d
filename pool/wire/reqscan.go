package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// A validating scanner for ParseRequest: the pool reads a few
// fields of a request body that is mostly agent context (16 KiB to MiBs of
// prompt strings), and json.Unmarshal into the request struct cost two
// passes over all of it (checkValid, then the decode walking every skipped
// value again; ≈ 12 % of the pool's CPU at 256 streams). The scanner makes
// one pass: it validates every byte exactly as json.Valid does (FuzzValidJSON)
// while it fills the request struct's few fields. Whatever it is not sure to
// decode as json.Unmarshal would — a key with escapes or non-ASCII bytes, a
// key matching a field only case-insensitively, a field given twice, a value
// of another type, a number that is not a plain int — makes it give up, and
// ParseRequest decodes the body with json.Unmarshal as before
// (FuzzScanRequest holds both to the same struct and the same verdict).

// maxJSONDepth is encoding/json's nesting limit (its scanner's
// maxNestingDepth): deeper input is a syntax error there.
const maxJSONDepth = 10000

// swar constants: one byte repeated over a 64-bit word.
const (
	swarLo = 0x0101010101010101
	swarHi = 0x8080808080808080
)

// plainWord reports that none of the 8 bytes of x ends or escapes a JSON
// string or is a control character: no '"', no '\\', none below 0x20
// (the exact "has zero byte" / "has byte less than n" bit tricks).
func plainWord(x uint64) bool {
	q := x ^ (swarLo * '"')
	s := x ^ (swarLo * '\\')
	return ((q-swarLo)&^q|(s-swarLo)&^s|(x-swarLo*0x20)&^x)&swarHi == 0
}

// validString returns the offset after the valid JSON string literal at
// b[i] ('"'), or -1. Invalid UTF-8 is valid here as it is for json.Valid.
func validString(b []byte, i int) int {
	j := i + 1
	for {
		for j+8 <= len(b) && plainWord(binary.LittleEndian.Uint64(b[j:])) {
			j += 8
		}
		if j >= len(b) {
			return -1
		}
		switch c := b[j]; {
		case c == '"':
			return j + 1
		case c == '\\':
			if j+1 >= len(b) {
				return -1
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(b) {
					return -1
				}
				for _, h := range b[j+2 : j+6] {
					if !isHex(h) {
						return -1
					}
				}
				j += 6
			default:
				return -1
			}
		case c < 0x20:
			return -1
		default:
			j++
		}
	}
}

func isHex(c byte) bool { return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F') }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// validNumber returns the offset after the JSON number at b[i], or -1.
func validNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i++; i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i
}

// validValue returns the offset after the valid JSON value at b[i] inside
// depth open containers, or -1.
func validValue(b []byte, i, depth int) int {
	if i < len(b) && (b[i] == '{' || b[i] == '[') {
		return validNested(b, i, depth)
	}
	return validScalar(b, i)
}

// validScalar returns the offset after the valid string, number, true,
// false or null at b[i], or -1.
func validScalar(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		return validString(b, i)
	case c == '-' || isDigit(c):
		return validNumber(b, i)
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(b[i:], []byte(lit)) {
			return i + len(lit)
		}
	}
	return -1
}

// validNested returns the offset after the valid object or array at b[i]
// ('{' or '[') inside depth open containers, or -1, as scanObject and
// scanArray without names would. It keeps the containers it opens on its
// own stack of closers instead of recursing: a value nested to
// encoding/json's limit (10,000) grew the goroutine's stack to megabytes,
// copied at each doubling, ms per call on a fresh goroutine.
// FuzzValidJSON holds it to json.Valid.
func validNested(b []byte, i, depth int) int {
	var buf [64]byte
	open := buf[:0] // the closers of the containers open, innermost last
	for {
		// b[i] starts a value.
		if c := b[i]; c == '{' || c == '[' {
			if depth+len(open) >= maxJSONDepth {
				return -1
			}
			closer := byte(']')
			if c == '{' {
				closer = '}'
			}
			if i = skipWS(b, i+1); i < len(b) && b[i] == closer {
				i++ // an empty container: a value like any other
			} else {
				open = append(open, closer)
				if closer == '}' {
					i = memberValue(b, i)
				}
				if i < 0 || i >= len(b) {
					return -1
				}
				continue
			}
		} else if i = validScalar(b, i); i < 0 {
			return -1
		}
		// After a value: close what ends here, then go to the next element.
		for {
			if len(open) == 0 {
				return i
			}
			if i = skipWS(b, i); i >= len(b) {
				return -1
			}
			top := open[len(open)-1]
			if b[i] == top {
				open = open[:len(open)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return -1
			}
			if i = skipWS(b, i+1); top == '}' {
				i = memberValue(b, i)
			}
			if i < 0 || i >= len(b) {
				return -1
			}
			break
		}
	}
}

// memberValue reads an object member's key and colon at b[i] and returns
// the offset of its value (whitespace skipped), or -1.
func memberValue(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = validString(b, i); i < 0 {
		return -1
	}
	if i = skipWS(b, i); i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipWS(b, i+1)
}

// validJSON is json.Valid(b) in one pass of the scanner.
func validJSON(b []byte) bool {
	end := validValue(b, skipWS(b, 0), 0)
	return end >= 0 && skipWS(b, end) == len(b)
}

// fieldIndex is the index of key (raw literal bytes without the quotes) in
// names; -1 for a key matching none, -2 for a key the scanner cannot match
// as encoding/json does (escapes, non-ASCII, only a case-insensitive match).
func fieldIndex(names []string, key []byte) int {
	if len(names) == 0 {
		return -1
	}
	for k, n := range names {
		if string(key) == n {
			return k
		}
	}
	for _, c := range key {
		if c == '\\' || c >= utf8.RuneSelf {
			return -2
		}
	}
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return -2
		}
	}
	return -1
}

// scanObject validates the object at b[i] ('{') inside depth containers
// and returns the offset after it, or -1 (invalid, or not decodable by the
// scanner). A member whose key is names[k] (at most once each) is handed to
// fn(k, vs) with the offset of its value, which fn decodes and returns the
// offset after, or -1; every other member is validated and skipped.
func scanObject(b []byte, i, depth int, names []string, fn func(k, vs int) int) int {
	if depth++; depth > maxJSONDepth {
		return -1
	}
	var seen uint64
	j := skipWS(b, i+1)
	if j < len(b) && b[j] == '}' {
		return j + 1
	}
	for {
		if j >= len(b) || b[j] != '"' {
			return -1
		}
		ke := validString(b, j)
		if ke < 0 {
			return -1
		}
		k := fieldIndex(names, b[j+1:ke-1])
		if j = skipWS(b, ke); k == -2 || j >= len(b) || b[j] != ':' {
			return -1
		}
		vs := skipWS(b, j+1)
		var ve int
		if k >= 0 {
			if seen&(1<<k) != 0 {
				return -1
			}
			seen |= 1 << k
			ve = fn(k, vs)
		} else {
			ve = validValue(b, vs, depth)
		}
		if ve < 0 {
			return -1
		}
		if j = skipWS(b, ve); j >= len(b) {
			return -1
		}
		switch b[j] {
		case ',':
			j = skipWS(b, j+1)
		case '}':
			return j + 1
		default:
			return -1
		}
	}
}

// scanArray validates the array at b[i] ('[') like scanObject; each
// element goes to fn(vs) when fn is not nil.
func scanArray(b []byte, i, depth int, fn func(vs int) int) int {
	if depth++; depth > maxJSONDepth {
		return -1
	}
	j := skipWS(b, i+1)
	if j < len(b) && b[j] == ']' {
		return j + 1
	}
	for {
		var ve int
		if fn != nil {
			ve = fn(j)
		} else {
			ve = validValue(b, j, depth)
		}
		if ve < 0 {
			return -1
		}
		if j = skipWS(b, ve); j >= len(b) {
			return -1
		}
		switch b[j] {
		case ',':
			j = skipWS(b, j+1)
		case ']':
			return j + 1
		default:
			return -1
		}
	}
}

// isNull reports the literal null at b[i].
func isNull(b []byte, i int) bool { return bytes.HasPrefix(b[i:], []byte("null")) }

// scanString decodes the string (or null: dst unchanged) at b[i] into dst.
func scanString(b []byte, i int, dst *string) int {
	if isNull(b, i) {
		return i + 4
	}
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	end := validString(b, i)
	if end < 0 {
		return -1
	}
	lit := b[i:end]
	if bytes.IndexByte(lit, '\\') < 0 && utf8.Valid(lit) {
		*dst = string(lit[1 : len(lit)-1])
		return end
	}
	if json.Unmarshal(lit, dst) != nil { // escapes, U+FFFD for bad bytes: encoding/json's own rules
		return -1
	}
	return end
}

// scanStringPtr is scanString for a *string field (null: nil).
func scanStringPtr(b []byte, i int, dst **string) int {
	if isNull(b, i) {
		*dst = nil
		return i + 4
	}
	var s string
	end := scanString(b, i, &s)
	if end >= 0 {
		*dst = &s
	}
	return end
}

// scanBool decodes true, false (or null: dst unchanged) at b[i].
func scanBool(b []byte, i int, dst *bool) int {
	switch {
	case isNull(b, i):
		return i + 4
	case bytes.HasPrefix(b[i:], []byte("true")):
		*dst = true
		return i + 4
	case bytes.HasPrefix(b[i:], []byte("false")):
		*dst = false
		return i + 5
	}
	return -1
}

// scanInt decodes an integer literal that fits an int (or null: dst
// unchanged) at b[i]; a fraction or exponent is left to json.Unmarshal.
func scanInt(b []byte, i int, dst *int) int {
	if isNull(b, i) {
		return i + 4
	}
	if i >= len(b) || (b[i] != '-' && !isDigit(b[i])) {
		return -1
	}
	end := validNumber(b, i)
	if end < 0 {
		return -1
	}
	n, err := strconv.ParseInt(string(b[i:end]), 10, bits.UintSize)
	if err != nil {
		return -1
	}
	*dst = int(n)
	return end
}

// scanRaw keeps a view of the valid value at b[i] (rawView's rule).
func scanRaw(b []byte, i, depth int, dst *rawView) int {
	end := validValue(b, i, depth)
	if end >= 0 {
		*dst = b[i:end]
	}
	return end
}

// scanStruct decodes an object (or null: unchanged) at b[i] member by member
// (scanObject); any other value is left to json.Unmarshal.
func scanStruct(b []byte, i, depth int, names []string, fn func(k, vs int) int) int {
	if isNull(b, i) {
		return i + 4
	}
	if i >= len(b) || b[i] != '{' {
		return -1
	}
	return scanObject(b, i, depth, names, fn)
}

// scanTop decodes the whole body b, one object, with scanObject and
// reports whether it did (b valid JSON and every named field decoded).
func scanTop(b []byte, names []string, fn func(k, vs int) int) bool {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	end := scanObject(b, i, 0, names, fn)
	return end >= 0 && skipWS(b, end) == len(b)
}
