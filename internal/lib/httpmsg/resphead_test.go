package httpmsg

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// readResp parses raw with a bufio.Reader of size (16: every head takes
// the long path).
func readResp(raw, method string, size int) (*ResponseHead, error) {
	var h ResponseHead
	err := ReadResponseHead(bufio.NewReaderSize(strings.NewReader(raw), size), 1<<20, method, &h)
	return &h, err
}

func TestReadResponseHead(t *testing.T) {
	type want struct {
		status  int
		reason  string
		fields  string // "Name=Value|…" in wire order
		cl      int64
		chunked bool
		noBody  bool
		close   bool
	}
	for _, tc := range []struct {
		name, raw, method string
		want              want
	}{
		{"HTTP-4/content-length", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n", "GET",
			want{200, "OK", "Content-Type=text/plain|Content-Length=3", 3, false, false, false}},
		{"HTTP-5/fields-in-wire-order-case-kept", "HTTP/1.1 200 OK\r\nx-b: 2\r\nX-A: 1\r\nset-cookie: a=1\r\nx-b: 3\r\nSet-Cookie: b=2\r\nContent-Length: 0\r\n\r\n", "GET",
			want{200, "OK", "x-b=2|X-A=1|set-cookie=a=1|x-b=3|Set-Cookie=b=2|Content-Length=0", 0, false, false, false}},
		{"HTTP-4/chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked \r\n\r\n", "GET",
			want{200, "OK", "Transfer-Encoding=Chunked", -1, true, false, false}},
		{"HTTP-5/chunked-overrides-content-length-and-closes", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", "GET",
			want{200, "OK", "Content-Length=5|Transfer-Encoding=chunked", -1, true, false, true}},
		{"HTTP-5/equal-content-lengths", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-length:2\r\n\r\n", "GET",
			want{200, "OK", "Content-Length=2|content-length=2", 2, false, false, false}},
		{"HTTP-4/close-delimited", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n", "GET",
			want{200, "OK", "Content-Type=text/plain", -1, false, false, true}},
		{"HTTP-5/connection-close-token", "HTTP/1.1 200 OK\r\nConnection: X-A, Close\r\nContent-Length: 0\r\n\r\n", "GET",
			want{200, "OK", "Connection=X-A, Close|Content-Length=0", 0, false, false, true}},
		{"HTTP-5/http10-closes", "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", "GET",
			want{200, "OK", "Content-Length=0", 0, false, false, true}},
		{"HTTP-5/http10-keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", "GET",
			want{200, "OK", "Connection=keep-alive|Content-Length=0", 0, false, false, false}},
		{"HTTP-5/http10-transfer-encoding-ignored-and-closes", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n", "GET",
			want{200, "OK", "Connection=keep-alive|Transfer-Encoding=chunked|Content-Length=4", 4, false, false, true}},
		{"HTTP-4/head-keeps-content-length", "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n", "HEAD",
			want{200, "OK", "Content-Length=1234", 1234, false, true, false}},
		{"HTTP-4/head-without-length", "HTTP/1.1 200 OK\r\n\r\n", "HEAD",
			want{200, "OK", "", -1, false, true, false}},
		{"HTTP-4/204-no-body", "HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n", "GET",
			want{204, "No Content", "Content-Length=7", 0, false, true, false}},
		{"HTTP-4/304-no-body", "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n", "GET",
			want{304, "Not Modified", "Transfer-Encoding=chunked", 0, true, true, false}},
		{"HTTP-4/interim-100", "HTTP/1.1 100 Continue\r\n\r\n", "POST",
			want{100, "Continue", "", 0, false, true, false}},
		{"HTTP-5/obs-fold-joined-with-space", "HTTP/1.1 200 OK\r\nX-A: one \r\n  two\r\n\tthree\r\nContent-Length: 0\r\n\r\n", "GET",
			want{200, "OK", "X-A=one two three|Content-Length=0", 0, false, false, false}},
		{"HTTP-5/bare-lf-accepted", "HTTP/1.1 200 OK\nX-A: 1\nContent-Length: 0\n\n", "GET",
			want{200, "OK", "X-A=1|Content-Length=0", 0, false, false, false}},
		{"HTTP-5/no-reason", "HTTP/1.1 599\r\nContent-Length: 0\r\n\r\n", "GET",
			want{599, "", "Content-Length=0", 0, false, false, false}},
		{"HTTP-5/reason-raw", "HTTP/1.1  299 Bad\x1b[31m\r\r\nContent-Length: 0\r\n\r\n", "GET",
			want{299, "Bad\x1b[31m\r", "Content-Length=0", 0, false, false, false}},
		{"HTTP-5/http11-minor-2", "HTTP/1.2 200 OK\r\nContent-Length: 0\r\n\r\n", "GET",
			want{200, "OK", "Content-Length=0", 0, false, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, size := range []int{4096, 16} {
				h, err := readResp(tc.raw, tc.method, size)
				if err != nil {
					t.Fatalf("size %d: %v", size, err)
				}
				var fs []string
				for _, f := range h.Fields {
					fs = append(fs, f.Name+"="+f.Value)
				}
				got := want{h.StatusCode, h.Reason, strings.Join(fs, "|"), h.ContentLength, h.Chunked, h.NoBody, h.Close}
				if got != tc.want {
					t.Fatalf("size %d:\n got %+v\nwant %+v", size, got, tc.want)
				}
				if i := strings.Index(tc.raw, "\r\n\r\n"); i >= 0 && h.Size != i+4 {
					t.Fatalf("Size %d, want %d", h.Size, i+4)
				}
			}
		})
	}
}

func TestReadResponseHeadRefused(t *testing.T) {
	for _, tc := range []struct{ name, raw string }{
		{"HTTP-5/space-before-colon", "HTTP/1.1 200 OK\r\nTransfer-Encoding : chunked\r\nContent-Length: 5\r\n\r\n"},
		{"HTTP-5/conflicting-content-length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"},
		{"HTTP-5/content-length-list", "HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n"},
		{"HTTP-5/content-length-sign", "HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n"},
		{"HTTP-5/content-length-empty", "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n"},
		{"HTTP-5/content-length-overflow", "HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775808\r\n\r\n"},
		{"HTTP-5/conflicting-content-length-with-chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"},
		{"HTTP-5/gzip-chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"},
		{"HTTP-5/chunked-comma", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked,\r\n\r\n"},
		{"HTTP-5/two-transfer-encoding-lines", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"},
		{"HTTP-5/identity", "HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\n"},
		{"HTTP-5/trailer-names-framing-field", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-A, content-length\r\n\r\n"},
		{"HTTP-5/folded-first-field", "HTTP/1.1 200 OK\r\n X-A: 1\r\n\r\n"},
		{"HTTP-5/no-colon", "HTTP/1.1 200 OK\r\nX-A 1\r\n\r\n"},
		{"HTTP-5/empty-name", "HTTP/1.1 200 OK\r\n: 1\r\n\r\n"},
		{"HTTP-5/control-in-value", "HTTP/1.1 200 OK\r\nX-A: a\x00b\r\n\r\n"},
		{"HTTP-5/bare-cr-in-value", "HTTP/1.1 200 OK\r\nX-A: a\rX-B: b\r\n\r\n"},
		{"HTTP-5/control-in-folded-value", "HTTP/1.1 200 OK\r\nX-A: a\r\n b\x7f\r\n\r\n"},
		{"HTTP-5/status-099", "HTTP/1.1 099 Weird\r\n\r\n"},
		{"HTTP-5/status-600", "HTTP/1.1 600 Weird\r\n\r\n"},
		{"HTTP-5/status-two-digits", "HTTP/1.1 20 OK\r\n\r\n"},
		{"HTTP-5/status-sign", "HTTP/1.1 +20 OK\r\n\r\n"},
		{"HTTP-5/http2-version", "HTTP/2.0 200 OK\r\n\r\n"},
		{"HTTP-5/http09-version", "HTTP/0.9 200 OK\r\n\r\n"},
		{"HTTP-5/lowercase-version", "http/1.1 200 OK\r\n\r\n"},
		{"HTTP-5/no-space-in-status-line", "HTTP/1.1\t200\tOK\r\n\r\n"},
		{"HTTP-5/empty-status-line", "\r\nHTTP/1.1 200 OK\r\n\r\n"},
		{"HTTP-5/not-http", "SSH-2.0-OpenSSH_9.6\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, size := range []int{4096, 16} {
				if h, err := readResp(tc.raw, "GET", size); err == nil {
					t.Fatalf("size %d: accepted: %+v", size, h)
				}
			}
		})
	}
	t.Run("HTTP-5/head-over-limit", func(t *testing.T) {
		raw := "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", 5000) + "\r\n\r\n"
		for _, limit := range []int{100, 4096} {
			var h ResponseHead
			if err := ReadResponseHead(bufio.NewReader(strings.NewReader(raw)), limit, "GET", &h); !errors.Is(err, ErrHeadTooLarge) {
				t.Fatalf("limit %d: %v", limit, err)
			}
		}
		if _, err := readResp(raw, "GET", 4096); err != nil {
			t.Fatalf("within the limit: %v", err)
		}
	})
	t.Run("HTTP-4/truncated-head-unexpected-eof", func(t *testing.T) {
		for _, raw := range []string{"", "HTTP/1.1 200 OK\r\n", "HTTP/1.1 200 OK\r\nX-A: 1\r\n"} {
			if _, err := readResp(raw, "GET", 4096); !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("%q: %v", raw, err)
			}
		}
	})
}

func TestReadResponseHeadStream(t *testing.T) {
	t.Run("HTTP-4/head-split-over-reads-and-next-head", func(t *testing.T) {
		// One byte per read: the head is scanned across fills, and the
		// bytes after it stay in the reader.
		raw := "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
		br := bufio.NewReaderSize(&oneByteReader{s: raw}, 64)
		var h ResponseHead
		if err := ReadResponseHead(br, 1<<20, "POST", &h); err != nil || h.StatusCode != 100 {
			t.Fatalf("%v %d", err, h.StatusCode)
		}
		if err := ReadResponseHead(br, 1<<20, "POST", &h); err != nil || h.StatusCode != 200 || h.ContentLength != 2 {
			t.Fatalf("%v %+v", err, h)
		}
		if rest, _ := io.ReadAll(br); string(rest) != "ok" {
			t.Fatalf("rest %q", rest)
		}
	})
}

type oneByteReader struct{ s string }

func (r *oneByteReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	p[0], r.s = r.s[0], r.s[1:]
	return 1, nil
}

func TestEndToEnd(t *testing.T) {
	t.Run("HTTP-5/hop-by-hop-dropped-order-kept", func(t *testing.T) {
		fields := []Field{{"Connection", "keep-alive, x-hop-a"}, {"X-B", "1"}, {"Keep-Alive", "5"}, {"x-HOP-a", "s"},
			{"Transfer-Encoding", "chunked"}, {"Proxy-Authenticate", "Basic"}, {"connection", "X-Hop-C"}, {"X-Hop-C", "s"},
			{"Transfer_Encoding", "chunked"}, {"X_Custom", "kept"}, {"a", "2"}, {"Upgrade", "h2c"}, {"TE", "trailers"},
			{"Trailer", "X"}, {"Proxy-Connection", "keep-alive"}, {"Set-Cookie", "a=1"}, {"Set-Cookie", "b=2"}}
		var got []string
		for f := range EndToEnd(fields) {
			got = append(got, f.Name+"="+f.Value)
		}
		if strings.Join(got, "|") != "X-B=1|X_Custom=kept|a=2|Set-Cookie=a=1|Set-Cookie=b=2" {
			t.Fatalf("%q", got)
		}
		// The same fields as RemoveHopByHop keeps.
		h := http.Header{}
		for _, f := range fields {
			h[http.CanonicalHeaderKey(f.Name)] = append(h[http.CanonicalHeaderKey(f.Name)], f.Value)
		}
		RemoveHopByHop(h)
		if len(h) != 4 || h.Get("X_custom") != "kept" || len(h["Set-Cookie"]) != 2 {
			t.Fatalf("RemoveHopByHop kept %v", h)
		}
	})
	t.Run("HTTP-5/many-connection-lines", func(t *testing.T) {
		var fields []Field
		for _, n := range []string{"A", "B", "C", "D", "E", "F"} {
			fields = append(fields, Field{"Connection", "X-" + n}, Field{"X-" + n, "s"})
		}
		fields = append(fields, Field{"X-Kept", "1"})
		var got []string
		for f := range EndToEnd(fields) {
			got = append(got, f.Name)
		}
		if strings.Join(got, "|") != "X-Kept" {
			t.Fatalf("%q", got)
		}
	})
}

// FuzzResponseHead checks ReadResponseHead against net/http.ReadResponse:
// the same verdict, and when both accept the same status, reason, framing,
// head length and fields. Deliberate differences (documented on
// ReadResponseHead): a version other than HTTP/1.x, a status outside
// 100-599 and a field name with a space are refused; Close is also set for
// Transfer-Encoding with Content-Length and for Transfer-Encoding in
// HTTP/1.0; no Cache-Control is made up for "Pragma: no-cache"; a Connection
// field holding "close" is kept. Both the buffered and the long path are
// run (buffer sizes 4096 and 16).
func FuzzResponseHead(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
		"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n",
		"HTTP/1.1 204 No Content\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n",
		"HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\nTrailer: Content-Length\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
		"HTTP/1.1 200 OK\nX-A: 1\n b\n\n",
		"HTTP/1.1 200 OK\r\nConnection: close, X-A\r\nX-A: 1\r\nPragma: no-cache\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX-A : 1\r\n\r\n",
		"HTTP/1.1  599  Odd\r\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\nTransfer-Encoding: gzip\r\n\r\n",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, raw []byte, head bool) {
		method := "GET"
		if head {
			method = "HEAD"
		}
		var h, h16 ResponseHead
		err := ReadResponseHead(bufio.NewReaderSize(bytes.NewReader(raw), 4096), 1<<20, method, &h)
		err16 := ReadResponseHead(bufio.NewReaderSize(bytes.NewReader(raw), 16), 1<<20, method, &h16)
		if (err == nil) != (err16 == nil) || (err == nil && !reflect.DeepEqual(h, h16)) {
			t.Fatalf("buffer sizes disagree: %v %+v / %v %+v", err, h, err16, h16)
		}
		r := bytes.NewReader(raw)
		br := bufio.NewReader(r)
		resp, herr := http.ReadResponse(br, &http.Request{Method: method})
		switch {
		case herr != nil && err != nil:
			return
		case herr != nil:
			t.Fatalf("net/http refuses (%v), we accept %+v", herr, h)
		case err != nil:
			if resp.ProtoMajor != 1 || resp.StatusCode < 100 || resp.StatusCode > 599 || nameWithSpace(resp.Header) {
				return // deliberate
			}
			t.Fatalf("we refuse (%v), net/http accepts %+v", err, resp)
		}
		if consumed := len(raw) - r.Len() - br.Buffered(); consumed != h.Size {
			t.Fatalf("head length %d, net/http read %d", h.Size, consumed)
		}
		reason := ""
		if len(resp.Status) > 4 {
			reason = resp.Status[4:]
		}
		if h.StatusCode != resp.StatusCode || h.Minor != resp.ProtoMinor || h.Reason != reason {
			t.Fatalf("status %d 1.%d %q, net/http %d 1.%d %q", h.StatusCode, h.Minor, h.Reason, resp.StatusCode, resp.ProtoMinor, reason)
		}
		sawCL, sawTE := false, false
		for _, f := range h.Fields {
			sawCL = sawCL || strings.EqualFold(f.Name, "Content-Length")
			sawTE = sawTE || strings.EqualFold(f.Name, "Transfer-Encoding")
		}
		deliberateClose := sawTE && (h.Minor == 0 || h.Chunked && sawCL)
		if h.ContentLength != resp.ContentLength || h.Chunked != (len(resp.TransferEncoding) > 0) ||
			(h.Close != resp.Close && !(deliberateClose && h.Close)) {
			t.Fatalf("framing cl=%d chunked=%v close=%v, net/http %d %v %v", h.ContentLength, h.Chunked, h.Close, resp.ContentLength, resp.TransferEncoding, resp.Close)
		}
		if want := netHTTPHeader(&h, method); !reflect.DeepEqual(want, resp.Header) {
			t.Fatalf("fields %q, net/http %q", want, resp.Header)
		}
	})
}

func nameWithSpace(h http.Header) bool {
	for k := range h {
		if strings.ContainsAny(k, " ") {
			return true
		}
	}
	return false
}

// netHTTPHeader is h's fields as net/http.ReadResponse leaves them in
// Response.Header.
func netHTTPHeader(h *ResponseHead, method string) http.Header {
	hdr := http.Header{}
	for _, f := range h.Fields {
		k := http.CanonicalHeaderKey(f.Name)
		hdr[k] = append(hdr[k], f.Value)
	}
	delete(hdr, "Transfer-Encoding")
	if cl := hdr["Content-Length"]; len(cl) > 1 {
		hdr["Content-Length"] = cl[:1]
	}
	if h.Chunked && !h.NoBody {
		delete(hdr, "Content-Length")
	}
	if h.Chunked {
		delete(hdr, "Trailer")
	}
	if h.Minor >= 1 {
		for _, v := range hdr["Connection"] {
			if hasToken(v, "close") {
				delete(hdr, "Connection")
				break
			}
		}
	}
	if len(hdr["Pragma"]) > 0 && hdr["Pragma"][0] == "no-cache" && hdr["Cache-Control"] == nil {
		hdr["Cache-Control"] = []string{"no-cache"}
	}
	_ = method
	return hdr
}
