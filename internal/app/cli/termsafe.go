package cli

import (
	"fmt"
	"io"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// termWriter writes to w what the command line prints (text, JSON, help),
// with every byte a terminal could take as a command shown escaped: the
// strings printed come from config files (pool, member, model ids), from
// other instances and from channels' answers (/models lists, error
// bodies), and one carrying ESC could retitle the window ("\x1b]0;…\a"),
// clear the screen ("\x1b[2J") or rewrite what was printed before it (CR,
// CSI). One place for every printer (`pool test`, `status`, the errors
// runApp prints), so no table cell or message can be missed.
//
// C0 controls but tab and newline, and invalid UTF-8, become \xHH (as
// strconv.Quote); DEL, C1 controls (U+0080-U+009F: a lone 0x9b is CSI to
// an 8-bit terminal) and other runes strconv.IsPrint refuses (bidi
// overrides such as U+202E, zero-width and format characters) become \uHHHH,
// beyond the BMP as a UTF-16 pair, which is also what they mean inside a
// JSON string: JSON output (--json), whose encoder already escapes C0,
// reads back the same. Each Write is escaped on its own: a rune split
// across two writes shows as invalid bytes (the printers write whole
// strings). Write reports len(p) written when w took the escaped text.
type termWriter struct{ w io.Writer }

// termSafe wraps w in a termWriter (once).
func termSafe(w io.Writer) io.Writer {
	if w == nil {
		return nil
	}
	if _, ok := w.(termWriter); ok {
		return w
	}
	return termWriter{w}
}

func (t termWriter) Write(p []byte) (int, error) {
	i := 0
	for i < len(p) && safeASCII(p[i]) {
		i++
	}
	if i == len(p) {
		return t.w.Write(p)
	}
	buf := make([]byte, 0, len(p)+16)
	buf = append(buf, p[:i]...)
	for i < len(p) {
		b := p[i]
		if safeASCII(b) {
			buf = append(buf, b)
			i++
			continue
		}
		if b < utf8.RuneSelf && b != 0x7f {
			buf = fmt.Appendf(buf, `\x%02x`, b)
			i++
			continue
		}
		r, n := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			buf = fmt.Appendf(buf, `\x%02x`, b)
		case r != 0x7f && strconv.IsPrint(r):
			buf = append(buf, p[i:i+n]...)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			buf = fmt.Appendf(buf, `\u%04x\u%04x`, r1, r2)
		default:
			buf = fmt.Appendf(buf, `\u%04x`, r)
		}
		i += n
	}
	if _, err := t.w.Write(buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// safeASCII: printable ASCII, tab and newline pass as they are.
func safeASCII(b byte) bool { return b >= 0x20 && b < 0x7f || b == '\t' || b == '\n' }
