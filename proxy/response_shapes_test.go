package proxy

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
)

// hostileOrigin answers the first request of a round with raw, and every
// later one with "ok"; it records whether a later request came on the
// connection that carried raw (a pooled connection reused after it).
type hostileOrigin struct {
	mu      sync.Mutex
	raw     string
	first   bool
	hostile net.Conn
	reused  bool
}

func (o *hostileOrigin) serve(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		req.Body.Close()
		o.mu.Lock()
		var out string
		if o.first {
			o.first, o.hostile, out = false, c, o.raw
		} else {
			if c == o.hostile {
				o.reused = true
			}
			out = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
		}
		o.mu.Unlock()
		c.Write([]byte(out))
		if strings.HasSuffix(out, "\r\n\r\nhi") && !strings.Contains(out, "Content-Length") {
			return // a close-delimited body ends here
		}
	}
}

// TestMalformedOriginAnswers: smuggling shapes from a hostile origin through
// the response-head parser (httpmsg.ReadResponseHead, proxy/upstream). The
// client's next answer on the same connection is the right one (no
// desynchronised stream), and the upstream connection is never reused
// after an answer whose framing was unclean (SPEC HTTP-5, HTTP-4).
func TestMalformedOriginAnswers(t *testing.T) {
	o := &hostileOrigin{}
	oaddr := manyServer(t, o.serve)
	addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
	for _, tc := range []struct {
		name, raw string
		status    int // 0: any, the stream only must stay in sync
		reuseOK   bool
	}{
		{"cl-and-te", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 200, false},
		{"two-cl", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 502, false},
		{"te-identity", "HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\nContent-Length: 3\r\n\r\nabc", 502, false},
		{"te-gzip-chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 502, false},
		{"te-two-lines", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 502, false},
		{"obs-fold", "HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nContent-Length: 2\r\n\r\nhi", 200, true},
		{"obs-fold-cl", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n 5\r\n\r\nhi", 502, false},
		{"bare-lf", "HTTP/1.1 200 OK\nContent-Length: 2\n\nhi", 200, true},
		{"bare-cr-in-value", "HTTP/1.1 200 OK\r\nX-A: a\rContent-Length: 9\r\nContent-Length: 2\r\n\r\nhi", 502, false},
		{"nul", "HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Length: 2\r\n\r\nhi", 502, false},
		{"huge-head", "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-A: "+strings.Repeat("a", 1000)+"\r\n", 2000) + "Content-Length: 2\r\n\r\nhi", 502, false},
		{"1xx-flood", strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 20) + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi", 502, false},
		{"1xx-then-ok", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi", 200, true},
		{"101", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\nGARBAGE", 502, false},
		{"status-0", "HTTP/1.1 000 X\r\nContent-Length: 2\r\n\r\nhi", 502, false},
		{"status-999", "HTTP/1.1 999 X\r\nContent-Length: 2\r\n\r\nhi", 502, false},
		{"http2-status", "HTTP/2.0 200 OK\r\nContent-Length: 2\r\n\r\nhi", 502, false},
		{"no-reason", "HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nhi", 200, true},
		{"reason-ctl", "HTTP/1.1 200 O\x1bK\rX\r\nContent-Length: 2\r\n\r\nhi", 200, true},
		{"chunk-overflow", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff1\r\nabc\r\n0\r\n\r\n", 0, false},
		{"chunk-neg", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\nabc\r\n0\r\n\r\n", 0, false},
		{"trailer-cl", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\nContent-Length: 50\r\n\r\n", 200, true},
		{"trailer-named-cl", "HTTP/1.1 200 OK\r\nTrailer: Content-Length\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n", 502, false},
		{"204-with-body", "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nSMUGGLED", 204, false},
		{"304-with-body", "HTTP/1.1 304 Not Modified\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nSMUGGLED", 304, false},
		{"extra-after-cl", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nSMUGGLED", 200, false},
		{"http10-te", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nhi", 0, false},
		{"cl-plus", "HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nhi", 502, false},
		{"cl-list", "HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nhi", 0, false},
		{"space-before-colon", "HTTP/1.1 200 OK\r\nContent-Length : 9\r\nContent-Length: 2\r\n\r\nhi", 502, false},
		{"close-delimited", "HTTP/1.1 200 OK\r\n\r\nhi", 200, false},
	} {
		t.Run("HTTP-5/"+tc.name, func(t *testing.T) {
			o.mu.Lock()
			o.raw, o.first, o.hostile, o.reused = tc.raw, true, nil, false
			o.mu.Unlock()
			rc := newRawClient(t, addr)
			rc.c.SetDeadline(time.Now().Add(5 * time.Second))
			rc.send("GET http://" + oaddr + "/h HTTP/1.1\r\nHost: " + oaddr + "\r\n\r\n")
			resp, err := http.ReadResponse(rc.br, &http.Request{Method: "GET"})
			if err != nil {
				t.Fatalf("first answer: %v", err)
			}
			body, berr := readAllErr(resp)
			t.Logf("first: %d %q close=%v berr=%v hdr=%v", resp.StatusCode, body, resp.Close, berr, resp.Header)
			if tc.status != 0 && resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if strings.Contains(body, "SMUGGLED") {
				t.Errorf("smuggled body reached the client")
			}
			if resp.Close || berr != nil {
				rc = newRawClient(t, addr)
			}
			rc.send("GET http://" + oaddr + "/n HTTP/1.1\r\nHost: " + oaddr + "\r\n\r\n")
			resp2, err := http.ReadResponse(rc.br, &http.Request{Method: "GET"})
			if err != nil {
				t.Fatalf("second answer: %v", err)
			}
			body2, _ := readAllErr(resp2)
			if resp2.StatusCode != 200 || body2 != "ok" {
				t.Errorf("second answer %d %q, want 200 ok (desync)", resp2.StatusCode, body2)
			}
			o.mu.Lock()
			reused := o.reused
			o.mu.Unlock()
			if reused && !tc.reuseOK {
				t.Errorf("upstream connection reused after an unclean answer")
			}
		})
	}
}

func readAllErr(resp *http.Response) (string, error) {
	var sb strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			resp.Body.Close()
			if err.Error() == "EOF" {
				return sb.String(), nil
			}
			return sb.String(), err
		}
	}
}
