package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/dual-proxy/dual-proxy/internal/netutil"
)

// maxHeadBytes bounds a request head (request line plus fields), like
// net/http's DefaultMaxHeaderBytes.
const maxHeadBytes = 64 << 10

// field is one header field line as received, name case preserved.
type field struct{ name, value string }

// requestHead is a parsed HTTP/1.x request head, read from the raw bytes so
// that framing checks see every field line (SPEC HTTP-5: net/http drops
// Content-Length when Transfer-Encoding is present, hiding smuggling).
type requestHead struct {
	method, target, proto string
	minor                 int // HTTP/1.minor
	fields                []field
	raw                   []byte // the head as received, for handing the connection off

	contentLength int64 // -1 when absent
	chunked       bool
	keepAlive     bool // the client allows another request on this connection
	expect100     bool
}

// statusError is a request the proxy refuses before forwarding anything.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return e.msg }

func badRequest(msg string) error { return &statusError{400, msg} }

// errClientGone means the client closed the connection between requests.
var errClientGone = errors.New("client closed connection")

// readRequestHead reads and validates one request head from br. The head
// is copied once into raw and converted to one string; the request line and
// every field are substrings of it (few allocations on the hot path).
func readRequestHead(br *bufio.Reader) (*requestHead, error) {
	h := &requestHead{contentLength: -1, raw: make([]byte, 0, 512)}
	type span struct{ a, b int } // a line of raw, without CRLF
	var lineBuf [32]span
	lines := lineBuf[:0]
	for {
		line, err := br.ReadSlice('\n')
		if len(h.raw)+len(line) > maxHeadBytes {
			return nil, &statusError{431, "request head too large"}
		}
		h.raw = append(h.raw, line...)
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if len(lines) == 0 && len(h.raw) == 0 && (errors.Is(err, io.EOF) || netutil.IsClosed(err)) {
				return nil, errClientGone
			}
			return nil, err
		}
		// A line may have been read in several ReadSlice pieces; work on the
		// last complete line of raw.
		start := bytes.LastIndexByte(h.raw[:len(h.raw)-1], '\n') + 1
		end := len(h.raw) - 1
		if end > start && h.raw[end-1] == '\r' {
			end--
		}
		if len(lines) == 0 && end == start && len(h.raw) <= 2 {
			// RFC 9112 §2.2: ignore at least one empty line before the request line.
			h.raw = h.raw[:0]
			continue
		}
		if end == start && len(lines) > 0 {
			break
		}
		lines = append(lines, span{start, end})
	}
	all := string(h.raw)
	if err := h.parseRequestLine(all[lines[0].a:lines[0].b]); err != nil {
		return nil, err
	}
	h.fields = make([]field, 0, len(lines)-1)
	for _, sp := range lines[1:] {
		l := all[sp.a:sp.b]
		if l[0] == ' ' || l[0] == '\t' {
			return nil, badRequest("obsolete line folding") // RFC 9112 §5.2
		}
		name, value, ok := strings.Cut(l, ":")
		if !ok || len(name) == 0 || !isTokenString(name) {
			return nil, badRequest("malformed header field") // RFC 9112 §5.1: no space before ':'
		}
		value = strings.Trim(value, " \t")
		if !validFieldValue(value) {
			return nil, badRequest("invalid header field value") // RFC 9110 §5.5: CR, LF, NUL, CTLs
		}
		h.fields = append(h.fields, field{name, value})
	}
	return h, h.checkFraming()
}

// isTokenString is isToken for a string.
func isTokenString(s string) bool {
	if len(s) == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}

func (h *requestHead) parseRequestLine(l string) error {
	method, rest, ok1 := strings.Cut(l, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || method == "" || target == "" || !isToken([]byte(method)) || strings.ContainsAny(target, " \t") {
		return badRequest("malformed request line")
	}
	if len(proto) != 8 || !strings.HasPrefix(proto, "HTTP/1.") || proto[7] < '0' || proto[7] > '9' {
		return &statusError{505, "HTTP version not supported"}
	}
	h.method, h.target, h.proto, h.minor = method, target, proto, int(proto[7]-'0')
	return nil
}

// checkFraming applies RFC 9112 §6 and SPEC HTTP-5: Content-Length together
// with Transfer-Encoding, or conflicting Content-Lengths, is 400; a transfer
// coding other than a final chunked is 501 (RFC 9112 §6.1).
func (h *requestHead) checkFraming() error {
	var te []string
	cl := ""
	sawCL, sawTE := false, false
	h.keepAlive = h.minor >= 1
	for _, f := range h.fields {
		switch {
		case strings.EqualFold(f.name, "Content-Length"):
			for _, v := range strings.Split(f.value, ",") {
				v = strings.TrimSpace(v)
				if v == "" || strings.TrimLeft(v, "0123456789") != "" || len(v) > 18 {
					return badRequest("invalid Content-Length")
				}
				if sawCL && v != cl {
					return badRequest("conflicting Content-Length")
				}
				cl, sawCL = v, true
			}
		case strings.EqualFold(f.name, "Transfer-Encoding"):
			sawTE = true
			for _, c := range strings.Split(f.value, ",") {
				if c = strings.ToLower(strings.TrimSpace(c)); c != "" {
					te = append(te, c)
				}
			}
		case strings.EqualFold(f.name, "Connection"):
			for _, t := range strings.Split(f.value, ",") {
				switch strings.ToLower(strings.TrimSpace(t)) {
				case "close":
					h.keepAlive = false
				case "keep-alive":
					if h.minor == 0 {
						h.keepAlive = true
					}
				}
			}
		case strings.EqualFold(f.name, "Expect"):
			if strings.EqualFold(f.value, "100-continue") {
				h.expect100 = true
			}
		}
	}
	if sawTE && sawCL {
		return badRequest("both Content-Length and Transfer-Encoding")
	}
	if sawTE {
		if h.minor == 0 {
			return badRequest("Transfer-Encoding in HTTP/1.0")
		}
		if len(te) == 0 {
			return badRequest("empty Transfer-Encoding")
		}
		for i, c := range te {
			if c == "chunked" && i != len(te)-1 {
				return badRequest("chunked is not the final transfer coding")
			}
		}
		if len(te) != 1 || te[0] != "chunked" {
			return &statusError{501, "transfer coding not implemented"}
		}
		h.chunked = true
		return nil
	}
	if sawCL {
		n, err := strconv.ParseInt(cl, 10, 64)
		if err != nil {
			return badRequest("invalid Content-Length")
		}
		h.contentLength = n
	}
	return nil
}

// validFieldValue reports whether v holds only field-vchars, SP, HTAB and
// obs-text (RFC 9110 §5.5): no control characters, so nothing the proxy
// forwards can split or end a header line.
func validFieldValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// isToken reports whether b is a non-empty RFC 9110 §5.6.2 token.
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}
