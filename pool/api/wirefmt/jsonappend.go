package wirefmt

import (
	"unicode/utf8"

	"github.com/dual-proxy/dual-proxy/pool/internal/jsonscan"
)

// AppendJSONString appends s as a JSON string exactly as encoding/json's
// Marshal writes a Go string (RFC 8259 §7 with Marshal's choices: <, > and
// & as \u003c, \u003e, \u0026; U+2028 and U+2029 escaped; invalid UTF-8 as
// \ufffd). The streamed text deltas are encoded with it instead of a
// json.Marshal of a map per event; FuzzAppendJSONString holds
// it to Marshal's bytes.
func AppendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes Marshal keeps as they are at a time (a
		// translated request's prompt strings are most of its bytes).
		for i+16 <= len(s) && jsonscan.EscapedBytes(jsonscan.Load64(s, i))|jsonscan.EscapedBytes(jsonscan.Load64(s, i+8)) == 0 {
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
