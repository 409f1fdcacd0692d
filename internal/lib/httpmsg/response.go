package httpmsg

import (
	"net/http"
	"strings"
)

// Reason is the reason phrase to send with status code: the standard text
// for a code net/http knows (as httputil.ReverseProxy does: an upstream's
// own wording of a known status is dropped), else the received phrase
// with every byte RFC 9112 §4 does not allow in a reason-phrase (anything
// but HTAB, SP, VCHAR and obs-text: CR, LF, NUL, ESC, DEL …) removed, so
// nothing the upstream sends can split or forge the status line. It may
// be "" (the status line is then "HTTP/1.1 599 ").
func Reason(code int, received string) string {
	if t := http.StatusText(code); t != "" {
		return t
	}
	clean := true
	for i := 0; i < len(received); i++ {
		if !reasonByte(received[i]) {
			clean = false
			break
		}
	}
	if clean {
		return strings.TrimSpace(received)
	}
	var b strings.Builder
	for i := 0; i < len(received); i++ {
		if c := received[i]; reasonByte(c) {
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}

// reasonByte reports whether c may appear in a reason-phrase (RFC 9112 §4).
func reasonByte(c byte) bool { return c == '\t' || c >= ' ' && c != 0x7f }
