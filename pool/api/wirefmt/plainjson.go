package wirefmt

import (
	"bytes"
	"strconv"
)

// PlainUint reads a JSON number at b[i] that is a non-negative integer of
// at most digits digits (9: fits an int, 18: an int64) without a leading
// zero, what json.Unmarshal stores as is; it returns the value and the
// index after it.
func PlainUint(b []byte, i, digits int) (int64, int, bool) {
	j := i
	for j < len(b) && j-i <= digits && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	if j == i || j-i > digits || (b[i] == '0' && j-i > 1) || (j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E')) {
		return 0, 0, false
	}
	n, err := strconv.ParseInt(string(b[i:j]), 10, 64)
	return n, j, err == nil
}

// PlainObject walks the compact object b[i:end] ('{' … '}', nothing after
// it), calling fn with each key (no escapes) and the raw bytes of its
// value; a value is a string without escapes or quotes inside, a
// bare literal or number, or an object or array of such values (nested
// strings free of brackets). It fails on a repeated key, on anything it
// cannot skip that way and when fn returns false.
func PlainObject(b []byte, i, end int, fn func(key, v []byte) bool) bool {
	if end-i < 2 || b[i] != '{' || b[end-1] != '}' {
		return false
	}
	var seen [8][]byte
	n := 0
	i++
	if i == end-1 {
		return true // {}
	}
	for {
		if i >= end || b[i] != '"' {
			return false
		}
		ke := i + 1
		for ke < end && b[ke] != '"' && b[ke] != '\\' {
			ke++
		}
		if ke+1 >= end || b[ke] != '"' || b[ke+1] != ':' {
			return false
		}
		key := b[i+1 : ke]
		for _, k := range seen[:n] {
			if bytes.Equal(k, key) {
				return false
			}
		}
		if n == len(seen) {
			return false
		}
		seen[n] = key
		n++
		vs := ke + 2
		ve := plainValueEnd(b, vs, end-1)
		if ve < 0 || !fn(key, b[vs:ve]) {
			return false
		}
		switch {
		case ve == end-1:
			return true
		case b[ve] == ',':
			i = ve + 1
		default:
			return false
		}
	}
}

// plainValueEnd returns the index after the value at b[i] (see
// PlainObject), at most end; -1 when it is not such a value.
func plainValueEnd(b []byte, i, end int) int {
	if i >= end {
		return -1
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < end; j++ {
			switch b[j] {
			case '"':
				return j + 1
			case '\\':
				return -1
			}
		}
		return -1
	case '{', '[':
		depth := 0
		for j := i; j < end; j++ {
			switch b[j] {
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			case '"':
				for j++; j < end && b[j] != '"'; j++ {
					if b[j] == '\\' || b[j] == '{' || b[j] == '}' || b[j] == '[' || b[j] == ']' {
						return -1
					}
				}
			}
		}
		return -1
	}
	j := i
	for j < end && b[j] != ',' {
		j++
	}
	return j
}
