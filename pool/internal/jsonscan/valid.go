package jsonscan

import (
	"bytes"
	"encoding/binary"
)

// MaxDepth is encoding/json's nesting limit (its scanner's
// maxNestingDepth): deeper input is a syntax error there.
const MaxDepth = 10000

// ValidString returns the offset after the valid JSON string literal at
// b[i] ('"'), or -1. Invalid UTF-8 is valid here as it is for json.Valid.
func ValidString(b []byte, i int) int {
	j := i + 1
	for {
		for j+8 <= len(b) && PlainWord(binary.LittleEndian.Uint64(b[j:])) {
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

func isHex(c byte) bool { return IsDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F') }

// IsDigit reports an ASCII digit.
func IsDigit(c byte) bool { return '0' <= c && c <= '9' }

// ValidNumber returns the offset after the JSON number at b[i], or -1.
func ValidNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		for i++; i < len(b) && IsDigit(b[i]); i++ {
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i++; i >= len(b) || !IsDigit(b[i]) {
			return -1
		}
		for i < len(b) && IsDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !IsDigit(b[i]) {
			return -1
		}
		for i < len(b) && IsDigit(b[i]) {
			i++
		}
	}
	return i
}

// ValidValue returns the offset after the valid JSON value at b[i] inside
// depth open containers, or -1.
func ValidValue(b []byte, i, depth int) int {
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
		return ValidString(b, i)
	case c == '-' || IsDigit(c):
		return ValidNumber(b, i)
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(b[i:], []byte(lit)) {
			return i + len(lit)
		}
	}
	return -1
}

// validNested returns the offset after the valid object or array at b[i]
// ('{' or '[') inside depth open containers, or -1, as a member-by-member
// walk (pool/api/wirefmt's request scan) would. It keeps the containers it opens on its
// own stack of closers instead of recursing: a value nested to
// encoding/json's limit (10,000) grew the goroutine's stack to megabytes,
// copied at each doubling, ms per call on a fresh goroutine.
// FuzzValid holds it to json.Valid.
func validNested(b []byte, i, depth int) int {
	var buf [64]byte
	open := buf[:0] // the closers of the containers open, innermost last
	for {
		// b[i] starts a value.
		if c := b[i]; c == '{' || c == '[' {
			if depth+len(open) >= MaxDepth {
				return -1
			}
			closer := byte(']')
			if c == '{' {
				closer = '}'
			}
			if i = SkipWS(b, i+1); i < len(b) && b[i] == closer {
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
			if i = SkipWS(b, i); i >= len(b) {
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
			if i = SkipWS(b, i+1); top == '}' {
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
	if i = ValidString(b, i); i < 0 {
		return -1
	}
	if i = SkipWS(b, i); i >= len(b) || b[i] != ':' {
		return -1
	}
	return SkipWS(b, i+1)
}

// Valid is json.Valid(b) in one pass of the scanner.
func Valid(b []byte) bool {
	end := ValidValue(b, SkipWS(b, 0), 0)
	return end >= 0 && SkipWS(b, end) == len(b)
}
