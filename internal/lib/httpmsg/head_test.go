package httpmsg

import (
	"bufio"
	"bytes"
	"errors"
	"net/http"
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
		h, err := ReadRequestHead(bufio.NewReader(bytes.NewReader(in)))
		if err != nil {
			return
		}
		var cl, te int
		for _, fl := range h.Fields {
			if !ValidFieldValue(fl.Value) || !IsToken([]byte(fl.Name)) {
				t.Fatalf("accepted field %q: %q", fl.Name, fl.Value)
			}
			switch strings.ToLower(fl.Name) {
			case "content-length":
				cl++
			case "transfer-encoding":
				te++
			}
		}
		if cl > 0 && te > 0 {
			t.Fatal("accepted both Content-Length and Transfer-Encoding")
		}
		if h.Chunked && h.ContentLength != -1 || te > 0 && !h.Chunked {
			t.Fatalf("framing: chunked=%v length=%d te=%d", h.Chunked, h.ContentLength, te)
		}
		if h.ContentLength < -1 {
			t.Fatalf("length %d", h.ContentLength)
		}
	})
}

func TestBareLF(t *testing.T) {
	for _, tc := range []struct{ name, head string }{
		{"HTTP-5/bare-lf-after-request-line", "GET http://a/ HTTP/1.1\nHost: a\r\n\r\n"},
		{"HTTP-5/bare-lf-after-field", "GET http://a/ HTTP/1.1\r\nHost: a\n\r\n"},
		{"HTTP-5/bare-lf-end-of-head", "GET http://a/ HTTP/1.1\r\nHost: a\r\n\n"},
		{"HTTP-5/bare-lf-everywhere", "POST http://a/ HTTP/1.1\nContent-Length: 1\nTransfer-Encoding: chunked\n\n"},
		{"HTTP-5/bare-lf-leading-empty-line", "\nGET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadRequestHead(bufio.NewReader(strings.NewReader(tc.head)))
			var se *StatusError
			if !errors.As(err, &se) || se.Status != 400 {
				t.Fatalf("err %v, want a 400 StatusError", err)
			}
		})
	}
	t.Run("HTTP-5/crlf-head-accepted", func(t *testing.T) {
		if _, err := ReadRequestHead(bufio.NewReader(strings.NewReader("\r\nGET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n"))); err != nil {
			t.Fatal(err)
		}
	})
}

func TestUnderscoreAliases(t *testing.T) {
	t.Run("HTTP-5/underscore-aliases-of-framing-and-hop-by-hop-dropped", func(t *testing.T) {
		h := http.Header{}
		for _, k := range []string{"Transfer_Encoding", "Content_Length", "Proxy_Authorization", "Proxy_Connection", "Keep_Alive", "content_length", "Proxy_Authenticate"} {
			h.Add(k, "1")
		}
		h.Add("X_Custom", "kept")
		h.Add("X-Other", "kept")
		RemoveHopByHop(h)
		if len(h) != 2 || h.Get("X_Custom") == "" || h.Get("X-Other") == "" {
			t.Fatalf("left %v, want X_Custom and X-Other only", h)
		}
	})
}

// TestReadRequestHeadInto: a reused head carries nothing of the request
// read into it before (SPEC HTTP-5: framing and fields are this head's
// only), and the strings of the earlier head stay as they were.
func TestReadRequestHeadInto(t *testing.T) {
	t.Run("HTTP-5/reused-head-carries-nothing-over", func(t *testing.T) {
		first := "POST http://a/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\nConnection: close\r\nX-1: 1\r\nX-2: 2\r\nX-3: 3\r\nX-4: 4\r\nX-5: 5\r\nX-6: 6\r\nX-7: 7\r\nX-8: 8\r\nX-9: 9\r\n\r\n"
		second := "GET http://b/y HTTP/1.0\r\nContent-Length: 3\r\n\r\n"
		br := bufio.NewReader(strings.NewReader(first + second))
		h1, err := ReadRequestHeadInto(br, nil)
		if err != nil || !h1.Chunked || !h1.Expect100 || h1.KeepAlive || len(h1.Fields) != 13 {
			t.Fatalf("first head %+v, %v", h1, err)
		}
		target, field := h1.Target, h1.Fields[12]
		h2, err := ReadRequestHeadInto(br, h1)
		if err != nil || h2 != h1 {
			t.Fatalf("second head %p (want %p), %v", h2, h1, err)
		}
		if h2.Method != "GET" || h2.Target != "http://b/y" || h2.Minor != 0 || h2.Chunked || h2.Expect100 || h2.KeepAlive ||
			h2.ContentLength != 3 || len(h2.Fields) != 1 || string(h2.Raw) != second {
			t.Fatalf("second head %+v", h2)
		}
		if target != "http://a/x" || field != (Field{"X-9", "9"}) {
			t.Fatalf("the first head's strings changed: %q %+v", target, field)
		}
	})
}
