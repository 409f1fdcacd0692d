package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// FuzzTargetPort: the parse-free port filter of selfTarget must
// pass every absolute-form target whose URL names a port, with that port,
// or a request for the proxy's own listener would be forwarded to itself
// instead of served (SPEC HTTP-1).
func FuzzTargetPort(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:7898/x", "HTTP://LOCALHOST.:7898", "http://u:p@[::1]:7898/?a#b", "http://[::1%25lo]:80/",
		"http://0.0.0.0:07898#f", "http://h:80?x=:1", "http://a/b://c:1", "http://u@h:1@x:2/", "http://h:8080:9090/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" || !strings.EqualFold(u.Scheme, "http") { // as selfTarget
			return
		}
		want, err := strconv.Atoi(u.Port())
		if err != nil || want <= 0 {
			return
		}
		if got := targetPort(s); got != want {
			t.Fatalf("targetPort(%q) = %d, url.Parse port %d", s, got, want)
		}
	})
}

// FuzzRechunker: what net/http reads of a chunked request body on the
// hand-off view (SPEC HTTP-5b) decodes to the body the client sent, ends
// exactly at the body's end (the next request's bytes stay for the loop),
// and a malformed body is an error, never a shorter body.
func FuzzRechunker(f *testing.F) {
	for _, s := range []string{"3\r\nabc\r\n0\r\n\r\nGET", "0\r\nX-T: 1\r\n\r\n", "a;ext=1\r\n0123456789\r\n0\r\n\r\n",
		"zz\r\n", "3\r\nab", "1\r\nx\r\n0\r\n", "FFFFFFFFFFFFFFFFFF\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		wantBody, wantErr := io.ReadAll(httputil.NewChunkedReader(bufio.NewReader(bytes.NewReader(in))))
		br := bufio.NewReader(bytes.NewReader(in))
		rc := &rechunker{br: br, cr: httputil.NewChunkedReader(br)}
		var out []byte
		buf := make([]byte, 7) // short reads: pending framing is returned in parts
		var err error
		for {
			var n int
			n, err = rc.Read(buf)
			out = append(out, buf[:n]...)
			if err != nil {
				break
			}
		}
		if err != io.EOF {
			return // malformed or truncated: an error, checked below only for well-formed input
		}
		if wantErr != nil {
			t.Fatalf("rechunker accepted %q, which the chunked reader refuses: %v", in, wantErr)
		}
		got, derr := io.ReadAll(httputil.NewChunkedReader(bufio.NewReader(bytes.NewReader(out))))
		if derr != nil || !bytes.Equal(got, wantBody) {
			t.Fatalf("re-chunked %q decodes to %q (%v), want %q", out, got, derr, wantBody)
		}
		if !bytes.HasSuffix(out, []byte("0\r\n\r\n")) {
			t.Fatalf("re-chunked body %q does not end with the last chunk", out)
		}
	})
}
