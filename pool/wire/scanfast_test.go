package wire

import (
	"bytes"
	"testing"
)

// skipStringRef is skipString as it was before the word-at-a-time scan:
// the first '"' or '\\' byte by byte, an escape skipping the next byte.
func skipStringRef(b []byte, i int) int {
	for j := i + 1; j < len(b); {
		k := bytes.IndexAny(b[j:], "\"\\")
		if k < 0 {
			return -1
		}
		j += k
		if b[j] == '"' {
			return j + 1
		}
		j += 2
	}
	return -1
}

// FuzzSkipString holds skipString (SPEC POOL-17: the scanner that walks a
// request body in place, issue 20's word-at-a-time version) to the
// byte-by-byte rule at every start offset of any input.
func FuzzSkipString(f *testing.F) {
	for _, s := range []string{`"abc"`, `"a\"b"x`, `"0123456789abcdef\\"`, `"0123456\"89abcdef\\\"x"`, `"unterminated`,
		`"ends in a backslash\`, `"` + "\x00\x7f\xff" + `0123456789"`, `"12345678"`, `"1234567\"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for i := range b {
			if got, want := skipString(b, i), skipStringRef(b, i); got != want {
				t.Fatalf("POOL-17/skip-string: skipString(%q, %d) = %d, the byte-by-byte rule says %d", b, i, got, want)
			}
		}
	})
}

// FuzzLineEnd holds lineEnd (SPEC POOL-7: the SSE reader's line split,
// issue 20) to bytes.IndexAny(b, "\r\n") on any input.
func FuzzLineEnd(f *testing.F) {
	for _, s := range []string{"", "abc", "a\nb", "a\rb", "a\r\nb", "abc\n\r", "\n", "\r", "0123456789abcdef\r0123\n", "no line end at all, quite long"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for i := range len(b) + 1 {
			if got, want := lineEnd(b[i:]), bytes.IndexAny(b[i:], "\r\n"); got != want {
				t.Fatalf("POOL-7/sse-line-end: lineEnd(%q) = %d, bytes.IndexAny says %d", b[i:], got, want)
			}
		}
	})
}
