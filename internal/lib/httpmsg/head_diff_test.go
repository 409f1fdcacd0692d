package httpmsg

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/lib/netutil"
)

// The request-head parser in its earlier, simpler form (a
// backward scan for each line's start, the whole head zeroed per reuse,
// IsToken by string search, framing fields found with strings.EqualFold and
// their values split into slices), kept as the reference of
func checkFramingOld(h *RequestHead) error {
	var te []string
	cl := ""
	sawCL, sawTE := false, false
	h.KeepAlive = h.Minor >= 1
	for _, f := range h.Fields {
		switch {
		case strings.EqualFold(f.Name, "Content-Length"):
			for _, v := range strings.Split(f.Value, ",") {
				v = strings.TrimSpace(v)
				if v == "" || strings.TrimLeft(v, "0123456789") != "" || len(v) > 18 {
					return BadRequest("invalid Content-Length")
				}
				if sawCL && v != cl {
					return BadRequest("conflicting Content-Length")
				}
				cl, sawCL = v, true
			}
		case strings.EqualFold(f.Name, "Transfer-Encoding"):
			sawTE = true
			for _, c := range strings.Split(f.Value, ",") {
				if c = strings.ToLower(strings.TrimSpace(c)); c != "" {
					te = append(te, c)
				}
			}
		case strings.EqualFold(f.Name, "Connection"):
			for _, t := range strings.Split(f.Value, ",") {
				switch strings.ToLower(strings.TrimSpace(t)) {
				case "close":
					h.KeepAlive = false
				case "keep-alive":
					if h.Minor == 0 {
						h.KeepAlive = true
					}
				}
			}
		case strings.EqualFold(f.Name, "Expect"):
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

// FuzzReadRequestHeadDiff.

func readRequestHeadOld(br *bufio.Reader, h *RequestHead) (*RequestHead, error) {
	if h == nil {
		h = &RequestHead{}
	}
	*h = RequestHead{ContentLength: -1}
	h.Raw = h.rawBuf[:0]
	type span struct{ a, b int } // a line of raw, without CRLF
	var lineBuf [32]span
	lines := lineBuf[:0]
	for {
		line, err := br.ReadSlice('\n')
		if len(h.Raw)+len(line) > MaxHeadBytes {
			return nil, &StatusError{431, "request head too large"}
		}
		h.Raw = append(h.Raw, line...)
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if len(lines) == 0 && len(h.Raw) == 0 && (errors.Is(err, io.EOF) || netutil.IsClosed(err)) {
				return nil, ErrClientGone
			}
			return nil, err
		}
		// A line may have been read in several ReadSlice pieces; work on the
		// last complete line of raw.
		start := bytes.LastIndexByte(h.Raw[:len(h.Raw)-1], '\n') + 1
		end := len(h.Raw) - 1
		if end == start || h.Raw[end-1] != '\r' {
			// RFC 9112 §2.2 lets a recipient accept a bare LF; a proxy that
			// does and forwards CRLF reads the head differently from a
			// next hop that does not (smuggling), so it is refused.
			return nil, BadRequest("bare LF line ending")
		}
		end--
		if len(lines) == 0 && end == start && len(h.Raw) <= 2 {
			// RFC 9112 §2.2: ignore at least one empty line before the request line.
			h.Raw = h.Raw[:0]
			continue
		}
		if end == start && len(lines) > 0 {
			break
		}
		lines = append(lines, span{start, end})
	}
	all := string(h.Raw)
	if err := parseRequestLineOld(h, all[lines[0].a:lines[0].b]); err != nil {
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
	return h, checkFramingOld(h)
}

func parseRequestLineOld(h *RequestHead, l string) error {
	method, rest, ok1 := strings.Cut(l, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || method == "" || target == "" || !isTokenOld([]byte(method)) || strings.ContainsAny(target, " \t") {
		return BadRequest("malformed request line")
	}
	if len(proto) != 8 || !strings.HasPrefix(proto, "HTTP/1.") || proto[7] < '0' || proto[7] > '9' {
		return &StatusError{505, "HTTP version not supported"}
	}
	h.Method, h.Target, h.Proto, h.Minor = method, target, proto, int(proto[7]-'0')
	return nil
}

func isTokenOld(b []byte) bool {
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

// FuzzReadRequestHeadDiff checks ReadRequestHeadInto against the parser
// it replaced (SPEC HTTP-5): the same heads are accepted with the same
// fields and framing, the same errors returned, with buffers small enough
// that lines arrive in several pieces, and with a reused head.
func FuzzReadRequestHeadDiff(f *testing.F) {
	for _, s := range []string{
		"GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n",
		"\r\nGET http://a/ HTTP/1.1\r\nX: a\rb\r\n\r\n",
		"\r\n\r\nGET http://a/ HTTP/1.1\r\n\r\n",
		"GET http://a/\tb HTTP/1.1\r\n\r\n",
		"G@T http://a/ HTTP/1.1\r\n\r\n",
		"POST http://a/ HTTP/1.1\r\nContent-Length: 4\r\nX-Long: " + strings.Repeat("v", 40) + "\r\n\r\n",
		"GET http://a/ HTTP/1.1\nHost: a\r\n\r\n",
		"POST http://a/ HTTP/1.1\r\ncontent-length: 4, 4\r\nConnection: close, Keep-Alive\r\nExpect: 100-Continue\r\n\r\n",
		"POST http://a/ HTTP/1.0\r\nCONNECTION: keep-alive\r\nContent-Length: 4,5\r\n\r\n",
		"POST http://a/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
		"POST http://a/ HTTP/1.1\r\nTransfer-Encoding: ,\r\nVia: 1.1 x\r\n\r\n",
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(16))
	}
	f.Fuzz(func(t *testing.T, in []byte, size uint8) {
		n := 4096
		if size >= 16 {
			n = int(size)
		}
		prev := "GET http://p/ HTTP/1.1\r\nA: 1\r\nB: 2\r\n\r\n"
		br := bufio.NewReaderSize(bytes.NewReader(append([]byte(prev), in...)), n)
		reused, err := ReadRequestHeadInto(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReadRequestHeadInto(br, reused)
		want, werr := readRequestHeadOld(bufio.NewReaderSize(bytes.NewReader(in), n), nil)
		if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
			t.Fatalf("error %v, reference %v", err, werr)
		}
		if err != nil {
			return
		}
		if got.Method != want.Method || got.Target != want.Target || got.Proto != want.Proto || got.Minor != want.Minor ||
			got.ContentLength != want.ContentLength || got.Chunked != want.Chunked || got.KeepAlive != want.KeepAlive ||
			got.Expect100 != want.Expect100 || string(got.Raw) != string(want.Raw) || len(got.Fields) != len(want.Fields) {
			t.Fatalf("head %+v, reference %+v", got, want)
		}
		for i := range got.Fields {
			if got.Fields[i] != want.Fields[i] {
				t.Fatalf("field %d %+v, reference %+v", i, got.Fields[i], want.Fields[i])
			}
		}
	})
}
