package proxy

import (
	"bufio"
	"bytes"
	"io"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
)

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
		head := &httpmsg.RequestHead{ContentLength: n, Chunked: chunked, Minor: 1}
		if chunked {
			head.ContentLength = -1
		}
		br := bufio.NewReader(bytes.NewReader(in))
		var out bytes.Buffer
		b, err := readBody(br, bufio.NewWriter(&out), head, nil)
		if err != nil {
			return
		}
		if b.Rest != nil || len(b.Buf) > len(in) {
			t.Fatalf("small body: rest=%v len=%d", b.Rest != nil, len(b.Buf))
		}
		if !chunked && int64(len(b.Buf)) != n {
			t.Fatalf("length %d, want %d", len(b.Buf), n)
		}
		rest, _ := io.ReadAll(br)
		if !chunked && !bytes.Equal(rest, in[n:]) {
			t.Fatalf("leftover %q", rest)
		}
	})
}
