// Package httpmsg is HTTP/1.1 message syntax shared by the proxy, the pool
// and the test world: the raw request-head parser with its framing checks
// (RFC 9112), token and field-value validity (RFC 9110 §5),
// and the one hop-by-hop field table (RFC 9110 §7.6.1). It does no I/O
// beyond reading a head from a bufio.Reader.
package httpmsg

import (
	"bufio"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/dual-proxy/dual-proxy/internal/lib/netutil"
)

// MaxHeadBytes bounds a request head (request line plus fields), like
// net/http's DefaultMaxHeaderBytes.
const MaxHeadBytes = 64 << 10

// Field is one header field line as received, name case preserved.
type Field struct{ Name, Value string }

// RequestHead is a parsed HTTP/1.x request head, read from the raw bytes so
// that framing checks see every field line (SPEC HTTP-5: net/http drops
// Content-Length when Transfer-Encoding is present, hiding smuggling).
type RequestHead struct {
	// Method, Target and Proto are the request line's three parts; Target
	// is as received (absolute-form, authority-form or origin-form).
	Method, Target, Proto string
	// Minor is the HTTP/1.x minor version (0 or 1).
	Minor int
	// Fields are the field lines in order, names as received.
	Fields []Field
	// Raw is the head as received (request line, fields, the empty line),
	// for handing the connection off to net/http.
	Raw []byte

	// ContentLength is the body length; -1 when absent (RFC 9112 §6.3).
	ContentLength int64
	// Chunked is true when Transfer-Encoding is exactly "chunked".
	Chunked bool
	// KeepAlive is true when the client allows another request on this
	// connection (RFC 9112 §9.3: HTTP/1.1 unless "close"; HTTP/1.0 with
	// "keep-alive").
	KeepAlive bool
	// Expect100 is true for "Expect: 100-continue" (RFC 9110 §10.1.1).
	Expect100 bool

	// The first backing arrays of Raw and Fields, allocated with the head
	// (two allocations per request less for a usual head).
	rawBuf   [512]byte
	fieldBuf [8]Field
}

// StatusError is a request the proxy refuses before forwarding anything:
// Status is the answer's code (400, 431, 501, 505), Msg a short reason
// without request data.
type StatusError struct {
	Status int
	Msg    string
}

// Error returns Msg.
func (e *StatusError) Error() string { return e.Msg }

// BadRequest is a *StatusError with status 400.
func BadRequest(msg string) error { return &StatusError{400, msg} }

// ErrClientGone means the client closed the connection between requests.
var ErrClientGone = errors.New("client closed connection")

// ReadRequestHead reads and validates one request head from br. The head
// is copied once into raw and converted to one string; the request line and
// every field are substrings of it (few allocations on the hot path).
func ReadRequestHead(br *bufio.Reader) (*RequestHead, error) {
	return ReadRequestHeadInto(br, nil)
}

// ReadRequestHeadInto is ReadRequestHead reusing h, a head this function
// returned before and that nothing uses any more (its strings stay valid:
// they are copies), so a keep-alive connection's requests share one
// RequestHead (the head with its inline buffers was half of the
// bytes allocated per plain request). A nil h allocates a new head. The
// result is h, reset first, or nil on a read error.
func ReadRequestHeadInto(br *bufio.Reader, h *RequestHead) (*RequestHead, error) {
	if h == nil {
		h = &RequestHead{}
	}
	h.reset()
	type span struct{ a, b int } // a line of raw, without CRLF
	var lineBuf [32]span
	lines := lineBuf[:0]
	next := 0 // where the line being read starts in raw
	for {
		line, err := br.ReadSlice('\n')
		if len(h.Raw)+len(line) > MaxHeadBytes {
			return nil, &StatusError{431, "request head too large"}
		}
		h.Raw = append(h.Raw, line...)
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				continue // the line goes on in the next piece
			}
			if len(lines) == 0 && len(h.Raw) == 0 && (errors.Is(err, io.EOF) || netutil.IsClosed(err)) {
				return nil, ErrClientGone
			}
			return nil, err
		}
		// A line may have been read in several ReadSlice pieces: it runs
		// from the end of the last complete line to here (no
		// backward scan for its start).
		start, end := next, len(h.Raw)-1
		next = len(h.Raw)
		if end == start || h.Raw[end-1] != '\r' {
			// RFC 9112 §2.2 lets a recipient accept a bare LF; a proxy that
			// does and forwards CRLF reads the head differently from a
			// next hop that does not (smuggling), so it is refused.
			return nil, BadRequest("bare LF line ending")
		}
		end--
		if len(lines) == 0 && end == start && len(h.Raw) <= 2 {
			// RFC 9112 §2.2: ignore at least one empty line before the request line.
			h.Raw, next = h.Raw[:0], 0
			continue
		}
		if end == start && len(lines) > 0 {
			break
		}
		lines = append(lines, span{start, end})
	}
	all := string(h.Raw)
	if err := h.parseRequestLine(all[lines[0].a:lines[0].b]); err != nil {
		return nil, err
	}
	h.Fields = h.fieldBuf[:0]
	if len(lines)-1 > len(h.fieldBuf) {
		h.Fields = make([]Field, 0, len(lines)-1)
	}
	for _, sp := range lines[1:] {
		l := all[sp.a:sp.b]
		if l[0] == ' ' || l[0] == '\t' {
			return nil, BadRequest("obsolete line folding") // RFC 9112 §5.2
		}
		name, value, ok := strings.Cut(l, ":")
		if !ok || len(name) == 0 || !IsTokenString(name) {
			return nil, BadRequest("malformed header field") // RFC 9112 §5.1: no space before ':'
		}
		value = strings.Trim(value, " \t")
		if !ValidFieldValue(value) {
			return nil, BadRequest("invalid header field value") // RFC 9110 §5.5: CR, LF, NUL, CTLs
		}
		h.Fields = append(h.Fields, Field{name, value})
	}
	return h, h.checkFraming()
}

// reset empties h for the next head without clearing its inline buffers
// (the whole struct, 0.8 KiB, was zeroed per request).
func (h *RequestHead) reset() {
	h.Method, h.Target, h.Proto, h.Minor = "", "", "", 0
	h.Fields, h.Raw = nil, h.rawBuf[:0]
	h.ContentLength, h.Chunked, h.KeepAlive, h.Expect100 = -1, false, false, false
	clear(h.fieldBuf[:]) // the last head's strings: not kept alive by this one
}

// IsTokenString is IsToken for a string.
func IsTokenString(s string) bool {
	if len(s) == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tchar[s[i]] {
			return false
		}
	}
	return true
}

// tchar holds the bytes of an RFC 9110 §5.6.2 token: visible ASCII but
// the delimiters (a table: this runs for every field name of every head).
var tchar = func() (t [256]bool) {
	for c := '!'; c < 0x7f; c++ {
		t[c] = !strings.ContainsRune("\"(),/:;<=>?@[\\]{}", c)
	}
	return t
}()

func (h *RequestHead) parseRequestLine(l string) error {
	method, rest, ok1 := strings.Cut(l, " ")
	target, proto, ok2 := strings.Cut(rest, " ") // target holds no SP, so only HTAB is looked for below
	if !ok1 || !ok2 || method == "" || target == "" || !IsTokenString(method) || strings.IndexByte(target, '\t') >= 0 {
		return BadRequest("malformed request line")
	}
	if len(proto) != 8 || !strings.HasPrefix(proto, "HTTP/1.") || proto[7] < '0' || proto[7] > '9' {
		return &StatusError{505, "HTTP version not supported"}
	}
	h.Method, h.Target, h.Proto, h.Minor = method, target, proto, int(proto[7]-'0')
	return nil
}

// checkFraming applies RFC 9112 §6 against request smuggling: Content-Length together
// with Transfer-Encoding, or conflicting Content-Lengths, is 400; a transfer
// coding other than a final chunked is 501 (RFC 9112 §6.1).
func (h *RequestHead) checkFraming() error {
	var te []string
	cl := ""
	sawCL, sawTE := false, false
	h.KeepAlive = h.Minor >= 1
	for _, f := range h.Fields {
		switch {
		case EqualFoldASCII(f.Name, "Content-Length"): // names are tokens: ASCII
			for v := range strings.SplitSeq(f.Value, ",") { // no slice per field
				v = strings.TrimSpace(v)
				if v == "" || strings.TrimLeft(v, "0123456789") != "" || len(v) > 18 {
					return BadRequest("invalid Content-Length")
				}
				if sawCL && v != cl {
					return BadRequest("conflicting Content-Length")
				}
				cl, sawCL = v, true
			}
		case EqualFoldASCII(f.Name, "Transfer-Encoding"):
			sawTE = true
			for c := range strings.SplitSeq(f.Value, ",") {
				if c = strings.ToLower(strings.TrimSpace(c)); c != "" {
					te = append(te, c)
				}
			}
		case EqualFoldASCII(f.Name, "Connection"):
			for t := range strings.SplitSeq(f.Value, ",") {
				switch strings.ToLower(strings.TrimSpace(t)) {
				case "close":
					h.KeepAlive = false
				case "keep-alive":
					if h.Minor == 0 {
						h.KeepAlive = true
					}
				}
			}
		case EqualFoldASCII(f.Name, "Expect"):
			if strings.EqualFold(f.Value, "100-continue") {
				h.Expect100 = true
			}
		}
	}
	if sawTE && sawCL {
		return BadRequest("both Content-Length and Transfer-Encoding")
	}
	if sawTE {
		if h.Minor == 0 {
			return BadRequest("Transfer-Encoding in HTTP/1.0")
		}
		if len(te) == 0 {
			return BadRequest("empty Transfer-Encoding")
		}
		for i, c := range te {
			if c == "chunked" && i != len(te)-1 {
				return BadRequest("chunked is not the final transfer coding")
			}
		}
		if len(te) != 1 || te[0] != "chunked" {
			return &StatusError{501, "transfer coding not implemented"}
		}
		h.Chunked = true
		return nil
	}
	if sawCL {
		n, err := strconv.ParseInt(cl, 10, 64)
		if err != nil {
			return BadRequest("invalid Content-Length")
		}
		h.ContentLength = n
	}
	return nil
}

// ValidFieldValue reports whether v holds only field-vchars, SP, HTAB and
// obs-text (RFC 9110 §5.5): no control characters, so nothing the proxy
// forwards can split or end a header line.
func ValidFieldValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// IsToken reports whether b is a non-empty RFC 9110 §5.6.2 token.
func IsToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !tchar[c] {
			return false
		}
	}
	return true
}

// Vias returns the values of every Via field line (RFC 9110 §7.6.3), for
// loop detection.
func (h *RequestHead) Vias() []string {
	var out []string
	for _, f := range h.Fields {
		if EqualFoldASCII(f.Name, "Via") {
			out = append(out, f.Value)
		}
	}
	return out
}
