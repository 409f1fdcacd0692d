package httpmsg

import (
	"bytes"
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

// ConnectionTokens returns the tokens of every Connection field line of a
// raw message head (start line, field lines, optional empty line), in
// order: the fields a sender declared hop-by-hop (RFC 9110 §7.6.1). Use it
// where net/http has already dropped the Connection field (http.ReadResponse
// deletes it when it holds "close").
func ConnectionTokens(head []byte) []string {
	var out []string
	first := true
	for len(head) > 0 {
		line := head
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
		}
		if first {
			first = false // the status or request line
			continue
		}
		name, value, ok := bytes.Cut(bytes.TrimRight(line, "\r"), []byte(":"))
		if !ok || !strings.EqualFold(string(name), "Connection") {
			continue
		}
		for _, t := range strings.Split(string(value), ",") {
			if t = strings.Trim(t, " \t"); t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}
