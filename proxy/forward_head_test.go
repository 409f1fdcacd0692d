package proxy

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"
)

// FuzzReadRequestHead checks the raw head parser (SPEC HTTP-5): it never
// panics, and a head it accepts has unambiguous framing and only field
// values that cannot split a header line when forwarded.
func FuzzReadRequestHead(f *testing.F) {
	for _, s := range []string{
		"GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST http://a/ HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n",
		"POST http://a/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		"POST http://a/ HTTP/1.1\r\nContent-Length: 4, 4\r\n\r\n",
		"POST http://a/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
		"\r\nGET http://a/ HTTP/1.1\r\nX: a\rb\r\n\r\n",
		"GET http://a/ HTTP/1.1\r\nX: 1\r\n folded\r\n\r\n",
		"CONNECT a:443 HTTP/1.1\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		h, err := readRequestHead(bufio.NewReader(bytes.NewReader(in)))
		if err != nil {
			return
		}
		var cl, te int
		for _, fl := range h.fields {
			if !validFieldValue(fl.value) || !isToken([]byte(fl.name)) {
				t.Fatalf("accepted field %q: %q", fl.name, fl.value)
			}
			switch strings.ToLower(fl.name) {
			case "content-length":
				cl++
			case "transfer-encoding":
				te++
			}
		}
		if cl > 0 && te > 0 {
			t.Fatal("accepted both Content-Length and Transfer-Encoding")
		}
		if h.chunked && h.contentLength != -1 || te > 0 && !h.chunked {
			t.Fatalf("framing: chunked=%v length=%d te=%d", h.chunked, h.contentLength, te)
		}
		if h.contentLength < -1 {
			t.Fatalf("length %d", h.contentLength)
		}
	})
}

// FuzzReadBody checks the request body reader (SPEC HTTP-2): it never
// panics, a chunked body it accepts decodes to at most the input's size,
// and what follows the body stays readable for the next request.
func FuzzReadBody(f *testing.F) {
	f.Add([]byte("5\r\nhello\r\n0\r\nX-T: 1\r\n\r\nNEXT"), true, int64(0))
	f.Add([]byte("hello worldNEXT"), false, int64(11))
	f.Add([]byte("zz\r\n"), true, int64(0))
	f.Add([]byte("3;ext=1\r\nabc\r\n0\r\n\r\n"), true, int64(0))
	f.Fuzz(func(t *testing.T, in []byte, chunked bool, n int64) {
		if n < 0 || n > 1<<16 {
			return
		}
		head := &requestHead{contentLength: n, chunked: chunked, minor: 1}
		if chunked {
			head.contentLength = -1
		}
		br := bufio.NewReader(bytes.NewReader(in))
		var out bytes.Buffer
		b, err := readBody(br, bufio.NewWriter(&out), head, nil)
		if err != nil {
			return
		}
		if b.rest != nil || len(b.buf) > len(in) {
			t.Fatalf("small body: rest=%v len=%d", b.rest != nil, len(b.buf))
		}
		if !chunked && int64(len(b.buf)) != n {
			t.Fatalf("length %d, want %d", len(b.buf), n)
		}
		rest, _ := io.ReadAll(br)
		if !chunked && !bytes.Equal(rest, in[n:]) {
			t.Fatalf("leftover %q", rest)
		}
	})
}
