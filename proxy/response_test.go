package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// rawAnswerOrigin answers every request with answer (raw bytes).
func rawAnswerOrigin(t *testing.T, answer string) string {
	return proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			if _, err := io.WriteString(c, answer); err != nil {
				return
			}
		}
	})
}

// rawHead reads one response head from br as its field lines (without the
// status line), and the body of Content-Length n.
func rawHead(t *testing.T, br *bufio.Reader, n int) []string {
	t.Helper()
	var lines []string
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("head: %v (so far %q)", err, lines)
		}
		if l == "\r\n" {
			break
		}
		lines = append(lines, strings.TrimSuffix(l, "\r\n"))
	}
	if _, err := io.ReadFull(br, make([]byte, n)); err != nil {
		t.Fatalf("body: %v", err)
	}
	return lines[1:]
}

func TestResponseFieldOrder(t *testing.T) {
	// Fields as an origin sends them: repeated names apart, mixed case,
	// hop-by-hop ones between them.
	sent := []string{"Set-Cookie: a=1", "x-trace: t1", "Connection: keep-alive, X-Hop", "Date: Tue, 01 Dec 2026 14:00:00 GMT",
		"X-Hop: secret", "set-cookie: b=2", "Keep-Alive: timeout=5", "Vary: Accept", "X-Trace: t2", "Cache-Control: no-store",
		"Link: </a>; rel=preload", "Vary: Origin", "Server: origin/1", "Transfer_Encoding: chunked", "X-Z: z", "X-Y: y",
		"X-X: x", "Content-Type: text/plain", "Pragma: no-cache"}
	want := []string{"Set-Cookie: a=1", "x-trace: t1", "Date: Tue, 01 Dec 2026 14:00:00 GMT", "set-cookie: b=2",
		"Vary: Accept", "X-Trace: t2", "Cache-Control: no-store", "Link: </a>; rel=preload", "Vary: Origin",
		"Server: origin/1", "X-Z: z", "X-Y: y", "X-X: x", "Content-Type: text/plain", "Pragma: no-cache",
		"Content-Length: 2"}
	origin := rawAnswerOrigin(t, "HTTP/1.1 200 OK\r\n"+strings.Join(sent, "\r\n")+"\r\nContent-Length: 2\r\n\r\nok")
	addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
	c := proxytest.Dial(t, addr)
	br := bufio.NewReader(c)
	t.Run("HTTP-5/response-field-order-kept", func(t *testing.T) {
		for range 3 { // the same order every time, not a map's
			fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", origin, origin)
			if got := rawHead(t, br, 2); !reflect.DeepEqual(got, want) {
				t.Fatalf("fields\n got %q\nwant %q", got, want)
			}
		}
	})
}

func TestResponseFraming(t *testing.T) {
	addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
	for _, tc := range []struct {
		name, answer, method string
		status               int
		body                 string
		cl                   int64
	}{
		{"HTTP-4/chunked-with-trailer-rechunked", "HTTP/1.1 200 OK\r\nTrailer: X-T\r\nTransfer-Encoding: chunked\r\n\r\n3;x=1\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n", "GET", 200, "abcde", -1},
		{"HTTP-5/chunked-overrides-content-length", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", "GET", 200, "ok", -1},
		{"HTTP-4/head-answer-keeps-length", "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n", "HEAD", 200, "", 1234},
		{"HTTP-4/304-no-body", "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n", "GET", 304, "", 0},
		{"HTTP-4/interim-skipped", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "GET", 200, "ok", 2},
		{"HTTP-5/obs-fold-joined", "HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nContent-Length: 2\r\n\r\nok", "GET", 200, "ok", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			origin := rawAnswerOrigin(t, tc.answer)
			c := proxytest.Dial(t, addr)
			br := bufio.NewReader(c)
			for range 2 { // the upstream connection is reused after a clean end
				fmt.Fprintf(c, "%s http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", tc.method, origin, origin)
				resp, body := proxytest.ReadResponse(t, br, tc.method)
				if resp.StatusCode != tc.status || body != tc.body || resp.ContentLength != tc.cl {
					t.Fatalf("%d %q cl=%d", resp.StatusCode, body, resp.ContentLength)
				}
				if resp.Header.Get("X-T") != "" || resp.Header.Get("Trailer") != "" || resp.Trailer.Get("X-T") != "" {
					t.Fatalf("trailer passed on: %v %v", resp.Header, resp.Trailer)
				}
				if strings.HasPrefix(tc.name, "HTTP-5/obs-fold") && resp.Header.Get("X-A") != "one two" {
					t.Fatalf("folded value %q", resp.Header.Get("X-A"))
				}
			}
		})
	}
}

func TestTransportResponse(t *testing.T) {
	e, err := NewEngine(Config{Candidates: []candidate.Candidate{candidate.Direct}, LoopbackDirect: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	tr := e.RoundTripper()
	for _, tc := range []struct {
		name, answer string
		check        func(*http.Response, string) bool
	}{
		{"OPS-4/content-length-header-canonical", "HTTP/1.1 201 Made\r\nx-a: 1\r\nX-A: 2\r\ncontent-length: 2\r\nConnection: close, X-Hop\r\nX-Hop: h\r\n\r\nok",
			func(r *http.Response, b string) bool {
				return r.StatusCode == 201 && r.Status == "201 Made" && b == "ok" && r.ContentLength == 2 && r.Close &&
					reflect.DeepEqual(r.Header["X-A"], []string{"1", "2"}) && r.Header.Get("Content-Length") == "2" &&
					r.Header.Get("Connection") == "close, X-Hop" && r.ProtoMinor == 1
			}},
		{"OPS-4/chunked-like-net-http", "HTTP/1.1 200 OK\r\nContent-Length: 9\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
			func(r *http.Response, b string) bool {
				return b == "ok" && r.ContentLength == -1 && reflect.DeepEqual(r.TransferEncoding, []string{"chunked"}) &&
					r.Header.Get("Transfer-Encoding") == "" && r.Header.Get("Content-Length") == ""
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			origin := rawAnswerOrigin(t, tc.answer)
			req, _ := http.NewRequest("GET", "http://"+origin+"/", nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || !tc.check(resp, string(b)) || resp.Request != req {
				t.Fatalf("%v %q %+v", err, b, resp)
			}
		})
	}
}
