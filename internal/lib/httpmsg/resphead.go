package httpmsg

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
)

// ResponseHead is a parsed HTTP/1.x response head (RFC 9112 §4, §5) with
// the framing of its body (RFC 9112 §6.3). It is read from the raw bytes,
// so the fields keep their wire order and every framing field line is seen;
// a proxy writes them on without a header map.
type ResponseHead struct {
	// Minor is the HTTP/1.x minor version of the status line.
	Minor int
	// StatusCode is the status, 100-599.
	StatusCode int
	// Reason is the reason phrase as received; it may hold control
	// characters (pass it through Reason before sending it on).
	Reason string
	// Fields are the field lines in wire order, names as received, values
	// without surrounding SP and HTAB, an obs-fold replaced by one SP
	// (RFC 9112 §5.2). Framing and hop-by-hop fields are included.
	Fields []Field

	// ContentLength is the body length: -1 for a chunked or
	// close-delimited body, 0 when the response has no body (NoBody), but
	// for the answer to HEAD the received Content-Length (-1: none).
	ContentLength int64
	// Chunked is true when Transfer-Encoding is "chunked" (HTTP/1.1 or
	// later); it overrides any Content-Length (RFC 9112 §6.3 rule 3).
	Chunked bool
	// NoBody is true when no body follows whatever the fields say: the
	// answer to HEAD, 1xx, 204 and 304 (RFC 9112 §6.3 rule 1).
	NoBody bool
	// Close is true when the connection carries nothing after this
	// response: "Connection: close", HTTP/1.0 without "keep-alive", a body
	// that ends at close, and framing that ought to be handled as an
	// error (Transfer-Encoding with Content-Length, or in HTTP/1.0:
	// RFC 9112 §6.1, §6.3), which is read but never trusted twice.
	Close bool
	// Size is the length of the head on the wire (status line to the
	// empty line), for a limit over several heads (1xx answers).
	Size int
}

// ErrHeadTooLarge is a response head longer than the limit given to
// ReadResponseHead.
var ErrHeadTooLarge = errors.New("response head too large")

// ReadResponseHead reads one response head from br into h (overwriting
// it) for a request with the given method (the answer to HEAD has no
// body). At most limit bytes are read (ErrHeadTooLarge). A head that ends
// before its empty line is io.ErrUnexpectedEOF; syntax errors name the
// part. It keeps net/http.ReadResponse's verdicts (bare LF accepted, an
// obs-fold joined with SP, one Transfer-Encoding line of exactly
// "chunked", equal Content-Length lines of one number each, no
// Content-Length, Transfer-Encoding or Trailer named in Trailer of a
// chunked answer) and refuses what it accepts but a proxy must not pass
// on: a version other than HTTP/1.x, a status outside
// 100-599, a field name that is not a token ("Name : value", RFC 9112
// §5.1). Transfer-Encoding in HTTP/1.0 is ignored for framing, as there.
// The whole head is converted to one string; the reason, names and values
// are substrings of it.
func ReadResponseHead(br *bufio.Reader, limit int, method string, h *ResponseHead) error {
	s, err := readHeadString(br, limit)
	if err != nil {
		return err
	}
	*h = ResponseHead{Fields: h.Fields[:0], Size: len(s)}
	status, rest, _ := strings.Cut(s, "\n")
	if err := h.parseStatusLine(strings.TrimSuffix(status, "\r")); err != nil {
		return err
	}
	if err := h.parseFields(rest); err != nil {
		return err
	}
	return h.frame(method)
}

// readHeadString returns the next head in br (through its empty line) as
// one string. When the head is in br's buffer it is converted from there;
// a longer one is gathered line by line.
func readHeadString(br *bufio.Reader, limit int) (string, error) {
	from := 0 // start of the first line not yet scanned
	for {
		n := br.Buffered()
		if n == 0 {
			n = 1 // wait for the first byte
		}
		buf, err := br.Peek(n)
		end, next, serr := headEnd(buf, from)
		if serr != nil {
			return "", serr
		}
		if end > limit || (end < 0 && len(buf) > limit) {
			return "", ErrHeadTooLarge
		}
		if end >= 0 {
			s := string(buf[:end])
			br.Discard(end)
			return s, nil
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
		from = next
		if len(buf) == br.Size() {
			return readLongHead(br, limit)
		}
		// Wait for more: Peek fills the buffer with at least one more byte.
		if _, err := br.Peek(len(buf) + 1); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
	}
}

// headEnd scans buf, a head's first bytes, for the empty line that ends
// it, starting at from (a line start). It returns the head's length (-1:
// not here yet) and the start of the first incomplete line. An empty
// status line is an error (net/http: "malformed HTTP response").
func headEnd(buf []byte, from int) (end, next int, err error) {
	for {
		i := bytes.IndexByte(buf[from:], '\n')
		if i < 0 {
			return -1, from, nil
		}
		line := buf[from : from+i]
		if len(line) == 0 || (len(line) == 1 && line[0] == '\r') {
			if from == 0 {
				return 0, 0, errors.New("malformed HTTP response: empty status line")
			}
			return from + i + 1, 0, nil
		}
		from += i + 1
	}
}

// readLongHead gathers a head that does not fit br's buffer.
func readLongHead(br *bufio.Reader, limit int) (string, error) {
	acc := make([]byte, 0, 2*br.Size())
	from := 0
	for {
		line, err := br.ReadSlice('\n')
		if len(acc)+len(line) > limit {
			return "", ErrHeadTooLarge
		}
		acc = append(acc, line...)
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
		end, next, err := headEnd(acc, from)
		if err != nil {
			return "", err
		}
		if end >= 0 {
			return string(acc), nil
		}
		from = next
	}
}

// parseStatusLine reads "HTTP/1.x NNN reason" (RFC 9112 §4), with
// net/http's leniency for spaces before the code.
func (h *ResponseHead) parseStatusLine(l string) error {
	proto, rest, ok := strings.Cut(l, " ")
	if !ok {
		return errors.New("malformed HTTP response")
	}
	if len(proto) != 8 || !strings.HasPrefix(proto, "HTTP/1.") || proto[7] < '0' || proto[7] > '9' {
		return errors.New("malformed HTTP version")
	}
	rest = strings.TrimLeft(rest, " ")
	code, reason, _ := strings.Cut(rest, " ")
	if len(code) != 3 || code[0] < '1' || code[0] > '5' || code[1] < '0' || code[1] > '9' || code[2] < '0' || code[2] > '9' {
		return errors.New("malformed response status " + strconv.Quote(code))
	}
	h.Minor = int(proto[7] - '0')
	h.StatusCode = int(code[0]-'0')*100 + int(code[1]-'0')*10 + int(code[2]-'0')
	h.Reason = reason
	return nil
}

// parseFields reads the field lines of rest (everything after the status
// line, through the empty line) into h.Fields.
func (h *ResponseHead) parseFields(rest string) error {
	if n := strings.Count(rest, "\n"); cap(h.Fields) < n {
		h.Fields = make([]Field, 0, n)
	}
	for {
		line, more, _ := strings.Cut(rest, "\n")
		rest = more
		line = strings.TrimSuffix(line, "\r")
		if line == "" {
			return nil
		}
		if line[0] == ' ' || line[0] == '\t' {
			// obs-fold (RFC 9112 §5.2): replaced by one SP, as net/http does.
			if len(h.Fields) == 0 {
				return errors.New("malformed response header: folded first line")
			}
			v := trimOWS(line)
			if !ValidFieldValue(v) {
				return errors.New("malformed response header field value")
			}
			f := &h.Fields[len(h.Fields)-1]
			f.Value = f.Value + " " + v
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || !IsTokenString(name) {
			return errors.New("malformed response header field name") // RFC 9112 §5.1
		}
		if !ValidFieldValue(value) {
			return errors.New("malformed response header field value") // RFC 9110 §5.5
		}
		h.Fields = append(h.Fields, Field{name, trimOWS(value)})
	}
}

// trimOWS removes leading and trailing SP and HTAB.
func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// frame sets the framing fields of h from its status, fields and the
// request method (RFC 9112 §6.3), keeping net/http's checks: one
// Transfer-Encoding line of exactly "chunked" (HTTP/1.1 and later), equal
// Content-Length lines that each hold one number, and for a chunked answer
// no framing field named in Trailer.
func (h *ResponseHead) frame(method string) error {
	cl, teLines, sawCL, keepAlive := "", 0, false, false
	te := ""
	for _, f := range h.Fields {
		switch {
		case EqualFoldASCII(f.Name, "Content-Length"):
			if sawCL && f.Value != cl {
				return errors.New("conflicting response Content-Length")
			}
			cl, sawCL = f.Value, true
		case EqualFoldASCII(f.Name, "Transfer-Encoding"):
			te = f.Value
			teLines++
		case EqualFoldASCII(f.Name, "Connection"):
			if hasToken(f.Value, "close") {
				h.Close = true
			}
			if hasToken(f.Value, "keep-alive") {
				keepAlive = true
			}
		}
	}
	if h.Minor == 0 && !keepAlive {
		h.Close = true // RFC 9112 §9.3: HTTP/1.0 persistence is opt-in
	}
	h.ContentLength = -1
	if sawCL {
		n, err := strconv.ParseUint(cl, 10, 63)
		if err != nil {
			return errors.New("invalid response Content-Length")
		}
		h.ContentLength = int64(n)
	}
	switch {
	case teLines == 0:
	case h.Minor == 0:
		// net/http ignores it; RFC 9112 §6.1: the framing is faulty.
		h.Close = true
	case teLines > 1 || !EqualFoldASCII(te, "chunked"):
		return errors.New("unsupported response Transfer-Encoding")
	default:
		h.Chunked = true
		if err := h.checkTrailer(); err != nil {
			return err
		}
		if sawCL {
			h.Close = true // RFC 9112 §6.3 rule 3: ought to be handled as an error
		}
	}
	h.NoBody = method == "HEAD" || h.StatusCode < 200 || h.StatusCode == 204 || h.StatusCode == 304
	switch {
	case method == "HEAD":
		// ContentLength stays the received one: what a GET would get.
	case h.NoBody:
		h.ContentLength = 0
	case h.Chunked:
		h.ContentLength = -1
	case h.ContentLength < 0:
		h.Close = true // close-delimited (RFC 9112 §6.3 rule 8)
	}
	return nil
}

// checkTrailer refuses a chunked answer whose Trailer field names a
// framing field (net/http: "bad trailer key").
func (h *ResponseHead) checkTrailer() error {
	for _, f := range h.Fields {
		if !EqualFoldASCII(f.Name, "Trailer") {
			continue
		}
		for v := range strings.SplitSeq(f.Value, ",") {
			v = trimOWS(v)
			if EqualFoldASCII(v, "Content-Length") || EqualFoldASCII(v, "Transfer-Encoding") || EqualFoldASCII(v, "Trailer") {
				return errors.New("bad response Trailer field")
			}
		}
	}
	return nil
}

// Get returns the value of the first field named name (ASCII
// case-insensitive), or "".
func (h *ResponseHead) Get(name string) string {
	for _, f := range h.Fields {
		if EqualFoldASCII(f.Name, name) {
			return f.Value
		}
	}
	return ""
}

// hasToken reports whether the comma-separated list v holds token
// (ASCII case-insensitive; RFC 9110 §5.6.1).
func hasToken(v, token string) bool {
	for v != "" {
		var t string
		t, v, _ = strings.Cut(v, ",")
		if EqualFoldASCII(trimOWS(t), token) {
			return true
		}
	}
	return false
}

// EqualFoldASCII is strings.EqualFold for ASCII only: field names and
// tokens are ASCII, and Unicode folding would make "ſ" an "s". For a
// field name the parsers accepted (a token) it answers as
// strings.EqualFold, with the lengths compared first.
func EqualFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}
