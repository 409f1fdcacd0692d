package translate

import "unicode/utf8"

// swar constants: one byte repeated over a 64-bit word.
const (
	swarLo = 0x0101010101010101
	swarHi = 0x8080808080808080
)

// plainWord reports that none of the 8 bytes of x ends or escapes a JSON
// string or is a control character: no '"', no '\\', none below 0x20.
func plainWord(x uint64) bool {
	return ((x-swarLo*0x20)&^x|zeroBytes(x^swarLo*'"')|zeroBytes(x^swarLo*'\\'))&swarHi == 0
}

// load64 is s[i:i+8] as a little-endian word (one load: the compiler
// combines the byte loads).
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// zeroBytes has the high bit set in each byte of the result for which the
// byte of x is 0, and possibly in higher bytes (borrows): exact for "any".
func zeroBytes(x uint64) uint64 { return (x - swarLo) &^ x }

// escapedBytes is nonzero in the high bits exactly when one of the 8 bytes
// of x is one encoding/json's Marshal does not write as it is inside a
// string: non-ASCII (≥ 0x80, checked rune by rune), a control byte, '"',
// '\\', '<', '>' or '&'. '<' and '>' are the bytes b with b|2 == '>', '"'
// and '&' those with b|4 == '&'.
func escapedBytes(x uint64) uint64 {
	return (x | (x-swarLo*0x20)&^x | zeroBytes(x|swarLo*2^swarLo*'>') | zeroBytes(x|swarLo*4^swarLo*'&') |
		zeroBytes(x^swarLo*'\\')) & swarHi
}

// appendJSONString appends s as a JSON string exactly as encoding/json's
// Marshal writes a Go string (RFC 8259 §7 with Marshal's choices: <, > and
// & as \u003c, \u003e, \u0026; U+2028 and U+2029 escaped; invalid UTF-8 as
// \ufffd). The streamed text deltas are encoded with it instead of a
// json.Marshal of a map per event; FuzzAppendJSONString holds
// it to Marshal's bytes.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes Marshal keeps as they are at a time (a
		// translated request's prompt strings are most of its bytes).
		for i+16 <= len(s) && escapedBytes(load64(s, i))|escapedBytes(load64(s, i+8)) == 0 {
			i += 16
		}
		if i >= len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
