package wirefmt

import (
	"bytes"
	"encoding/json"
	"math/bits"
	"strconv"
	"unicode/utf8"

	"github.com/dual-proxy/dual-proxy/pool/internal/jsonscan"
)

// A validating scanner for ParseRequest: the pool reads a few
// fields of a request body that is mostly agent context (16 KiB to MiBs of
// prompt strings), and json.Unmarshal into the request struct cost two
// passes over all of it (checkValid, then the decode walking every skipped
// value again; ≈ 12 % of the pool's CPU at 256 streams). The scanner makes
// one pass: it validates every byte exactly as json.Valid does (jsonscan.Valid,
// FuzzValid) while it fills the request struct's few fields. Whatever it is not sure to
// decode as json.Unmarshal would — a key with escapes or non-ASCII bytes, a
// key matching a field only case-insensitively, a field given twice, a value
// of another type, a number that is not a plain int — makes it give up, and
// ParseRequest decodes the body with json.Unmarshal as before
// (FuzzScanRequest holds both to the same struct and the same verdict).

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

// scanObjectAt validates the object at b[i] ('{') inside depth containers
// and returns the offset after it, or -1 (invalid, or not decodable by the
// scanner). A member whose key is names[k] (at most once each) is handed to
// fn(k, vs) with the offset of its value, which fn decodes and returns the
// offset after, or -1; every other member is validated and skipped.
func scanObjectAt(b []byte, i, depth int, names []string, fn func(k, vs int) int) int {
	if depth++; depth > jsonscan.MaxDepth {
		return -1
	}
	var seen uint64
	j := jsonscan.SkipWS(b, i+1)
	if j < len(b) && b[j] == '}' {
		return j + 1
	}
	for {
		if j >= len(b) || b[j] != '"' {
			return -1
		}
		ke := jsonscan.ValidString(b, j)
		if ke < 0 {
			return -1
		}
		k := fieldIndex(names, b[j+1:ke-1])
		if j = jsonscan.SkipWS(b, ke); k == -2 || j >= len(b) || b[j] != ':' {
			return -1
		}
		vs := jsonscan.SkipWS(b, j+1)
		var ve int
		if k >= 0 {
			if seen&(1<<k) != 0 {
				return -1
			}
			seen |= 1 << k
			ve = fn(k, vs)
		} else {
			ve = jsonscan.ValidValue(b, vs, depth)
		}
		if ve < 0 {
			return -1
		}
		if j = jsonscan.SkipWS(b, ve); j >= len(b) {
			return -1
		}
		switch b[j] {
		case ',':
			j = jsonscan.SkipWS(b, j+1)
		case '}':
			return j + 1
		default:
			return -1
		}
	}
}

// scanArrayAt validates the array at b[i] ('[') like scanObject; each
// element goes to fn(vs) when fn is not nil.
func scanArrayAt(b []byte, i, depth int, fn func(vs int) int) int {
	if depth++; depth > jsonscan.MaxDepth {
		return -1
	}
	j := jsonscan.SkipWS(b, i+1)
	if j < len(b) && b[j] == ']' {
		return j + 1
	}
	for {
		var ve int
		if fn != nil {
			ve = fn(j)
		} else {
			ve = jsonscan.ValidValue(b, j, depth)
		}
		if ve < 0 {
			return -1
		}
		if j = jsonscan.SkipWS(b, ve); j >= len(b) {
			return -1
		}
		switch b[j] {
		case ',':
			j = jsonscan.SkipWS(b, j+1)
		case ']':
			return j + 1
		default:
			return -1
		}
	}
}

// isNullAt reports the literal null at b[i].
func isNullAt(b []byte, i int) bool { return bytes.HasPrefix(b[i:], []byte("null")) }

// ScanStringAt decodes the string (or null: dst unchanged) at b[i] into dst.
func ScanStringAt(b []byte, i int, dst *string) int {
	if isNullAt(b, i) {
		return i + 4
	}
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	end := jsonscan.ValidString(b, i)
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

// ScanStringPtrAt is scanString for a *string field (null: nil).
func ScanStringPtrAt(b []byte, i int, dst **string) int {
	if isNullAt(b, i) {
		*dst = nil
		return i + 4
	}
	var s string
	end := ScanStringAt(b, i, &s)
	if end >= 0 {
		*dst = &s
	}
	return end
}

// ScanBool decodes true, false (or null: dst unchanged) at b[i].
func ScanBool(b []byte, i int, dst *bool) int {
	switch {
	case isNullAt(b, i):
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

// ScanInt decodes an integer literal that fits an int (or null: dst
// unchanged) at b[i]; a fraction or exponent is left to json.Unmarshal.
func ScanInt(b []byte, i int, dst *int) int {
	if isNullAt(b, i) {
		return i + 4
	}
	if i >= len(b) || (b[i] != '-' && !jsonscan.IsDigit(b[i])) {
		return -1
	}
	end := jsonscan.ValidNumber(b, i)
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

// ScanRawAt keeps a view of the valid value at b[i] (rawView's rule).
func ScanRawAt(b []byte, i, depth int, dst *RawView) int {
	end := jsonscan.ValidValue(b, i, depth)
	if end >= 0 {
		*dst = b[i:end]
	}
	return end
}

// ScanStruct decodes an object (or null: unchanged) at b[i] member by member
// (scanObject); any other value is left to json.Unmarshal.
func ScanStruct(b []byte, i, depth int, names []string, fn func(k, vs int) int) int {
	if isNullAt(b, i) {
		return i + 4
	}
	if i >= len(b) || b[i] != '{' {
		return -1
	}
	return scanObjectAt(b, i, depth, names, fn)
}

// ScanTopAt decodes the whole body b, one object, with scanObject and
// reports whether it did (b valid JSON and every named field decoded).
func ScanTopAt(b []byte, names []string, fn func(k, vs int) int) bool {
	i := jsonscan.SkipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	end := scanObjectAt(b, i, 0, names, fn)
	return end >= 0 && jsonscan.SkipWS(b, end) == len(b)
}
