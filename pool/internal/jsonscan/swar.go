package jsonscan

// Word-at-a-time (SWAR) tests over eight bytes of a JSON text: a request's
// long prompt strings are most of its bytes, and testing one byte at a
// time against a set (bytes.IndexAny) costs several times more.

// SWAR constants: one byte repeated over a 64-bit word.
const (
	Lo = 0x0101010101010101
	hi = 0x8080808080808080
)

// zeroBytes has the high bit set in each byte of the result for which the
// byte of x is 0, and possibly in higher bytes (borrows): exact for "any".
func zeroBytes(x uint64) uint64 { return (x - Lo) &^ x }

// PlainWord reports that none of the 8 bytes of x ends or escapes a JSON
// string or is a control character: no '"', no '\\', none below 0x20
// (the exact "has zero byte" / "has byte less than n" bit tricks).
func PlainWord(x uint64) bool {
	return ((x-Lo*0x20)&^x|zeroBytes(x^Lo*'"')|zeroBytes(x^Lo*'\\'))&hi == 0
}

// quoteFreeWord reports that none of the 8 bytes of x is '"' or '\\'.
func quoteFreeWord(x uint64) bool {
	return (zeroBytes(x^Lo*'"')|zeroBytes(x^Lo*'\\'))&hi == 0
}

// EscapedBytes is nonzero in the high bits exactly when one of the 8 bytes
// of x is one encoding/json's Marshal does not write as it is inside a
// string: non-ASCII (≥ 0x80, checked rune by rune), a control byte, '"',
// '\\', '<', '>' or '&'. '<' and '>' are the bytes b with b|2 == '>', '"'
// and '&' those with b|4 == '&'.
func EscapedBytes(x uint64) uint64 {
	return (x | (x-Lo*0x20)&^x | zeroBytes(x|Lo*2^Lo*'>') | zeroBytes(x|Lo*4^Lo*'&') |
		zeroBytes(x^Lo*'\\')) & hi
}

// Load64 is s[i:i+8] as a little-endian word (one load: the compiler
// combines the byte loads).
func Load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}
