package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// TestPlainRequestsOnReusedConnection: plain requests on one client
// connection reuse its head and scratch state without carrying anything
// over; a bad request among them gets its 400; own-endpoint requests
// interleave; a pooled upstream connection the origin closed is replayed
// only for idempotent requests (SPEC HTTP-1, HTTP-2, HTTP-3).
func TestPlainRequestsOnReusedConnection(t *testing.T) {
	t.Run("HTTP-2/a-head-with-many-fields-then-a-short-one-carries-nothing-over", func(t *testing.T) {
		a := testworld.NewNamedOrigin(t, "A")
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		br := bufio.NewReader(c)
		var many strings.Builder
		for i := range 60 {
			fmt.Fprintf(&many, "X-Field-%d: %s\r\n", i, strings.Repeat("v", 100))
		}
		heads := []string{
			"POST %s/one HTTP/1.1\r\nHost: %s\r\nCookie: secret=1\r\n" + many.String() + "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Trailer: t\r\n\r\n",
			"GET %s/two HTTP/1.1\r\nHost: %s\r\n\r\n",
			"OPTIONS %s/three HTTP/1.1\r\nHost: %s\r\nX-Third: 3\r\n\r\n",
			"GET %s/four?x HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\n\r\n",
		}
		var all strings.Builder // pipelined: every head in one write
		for _, h := range heads {
			fmt.Fprintf(&all, h, a.URL, a.Addr)
		}
		io.WriteString(c, all.String())
		for i := range heads {
			if resp, body := proxytest.ReadResponse(t, br, "GET"); resp.StatusCode != 200 || body != a.Greeting() {
				t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
			}
		}
		rs := a.Requests()
		if len(rs) != 4 {
			t.Fatalf("origin saw %d requests", len(rs))
		}
		if string(rs[0].Body) != "abc" || rs[0].Header.Get("X-Field-59") == "" || rs[0].Header.Get("Cookie") != "secret=1" {
			t.Fatalf("first request %s %q %v", rs[0].Method, rs[0].Body, rs[0].Header)
		}
		for i, r := range rs[1:] {
			if len(r.Body) != 0 || r.Header.Get("Cookie") != "" || r.Header.Get("X-Field-0") != "" || r.Header.Get("X-Trailer") != "" ||
				(i != 1 && r.Header.Get("X-Third") != "") || r.Header.Get("Transfer-Encoding") != "" {
				t.Errorf("request %d %s %s carries %q %v", i+2, r.Method, r.RequestURI, r.Body, r.Header)
			}
		}
		if rs[1].RequestURI != "/two" || rs[2].Method != "OPTIONS" || rs[3].RequestURI != "/four?x" {
			t.Errorf("targets %s %s %s", rs[1].RequestURI, rs[2].RequestURI, rs[3].RequestURI)
		}
	})

	t.Run("HTTP-1/a-bad-request-after-reused-heads-gets-its-400", func(t *testing.T) {
		a := testworld.NewNamedOrigin(t, "A")
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "GET %s/ok HTTP/1.1\r\nHost: %s\r\nX-Long: %s\r\n\r\n", a.URL, a.Addr, strings.Repeat("z", 3000))
		proxytest.ReadResponse(t, br, "GET")
		io.WriteString(c, "GET http://[bad/ HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp, _ := proxytest.ReadResponse(t, br, "GET"); resp.StatusCode != 400 {
			t.Fatalf("status %d, want 400", resp.StatusCode)
		}
	})

	t.Run("HTTP-1/plain-requests-and-own-endpoint-requests-interleaved-on-one-connection", func(t *testing.T) {
		// Plain requests reuse their head; a hand-off keeps the one it
		// was read into: alternating them must mix nothing up.
		a := testworld.NewNamedOrigin(t, "A")
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		br := bufio.NewReader(c)
		for i := range 4 {
			fmt.Fprintf(c, "GET %s/p%d HTTP/1.1\r\nHost: %s\r\nX-N: %d\r\n\r\n", a.URL, i, a.Addr, i)
			if resp, body := proxytest.ReadResponse(t, br, "GET"); resp.StatusCode != 200 || body != a.Greeting() {
				t.Fatalf("plain %d: %d %q", i, resp.StatusCode, body)
			}
			fmt.Fprintf(c, "GET http://%s/_dual-proxy/status HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr)
			if resp, body := proxytest.ReadResponse(t, br, "GET"); body == a.Greeting() || (resp.StatusCode != 200 && resp.StatusCode != 404) {
				t.Fatalf("own endpoint %d: %d %q", i, resp.StatusCode, body)
			}
		}
		for i, r := range a.Requests() {
			if r.RequestURI != fmt.Sprintf("/p%d", i) || r.Header.Get("X-N") != fmt.Sprint(i) {
				t.Fatalf("origin's request %d: %s %v", i, r.RequestURI, r.Header)
			}
		}
	})

	// A pooled upstream connection the origin closed (FIN, or a reset)
	// between two requests: a POST is sent once, on a fresh connection or
	// not at all (never replayed silently); a GET gets its answer.
	for _, rst := range []bool{false, true} {
		for _, method := range []string{"POST", "PUT", "GET"} {
			t.Run(fmt.Sprintf("HTTP-3/%s-after-the-origin-closed-its-pooled-connection/rst=%v", method, rst), func(t *testing.T) {
				var seen atomic.Int32
				var bodies atomic.Int32
				closed := make(chan struct{}, 4)
				o := manyServer(t, func(c net.Conn) {
					br := bufio.NewReader(c)
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					b, _ := io.ReadAll(req.Body)
					seen.Add(1)
					if len(b) > 0 {
						bodies.Add(1)
					}
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
					if rst {
						c.(*net.TCPConn).SetLinger(0)
					}
					c.Close() // the pooled connection is dead
					closed <- struct{}{}
				})
				addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
				c := proxytest.Dial(t, addr)
				br := bufio.NewReader(c)
				fmt.Fprintf(c, "GET http://%s/first HTTP/1.1\r\nHost: %s\r\n\r\n", o, o)
				if resp, _ := proxytest.ReadResponse(t, br, "GET"); resp.StatusCode != 200 {
					t.Fatalf("first: %d", resp.StatusCode)
				}
				<-closed // its FIN (or reset) is on its way to the proxy's idle connection
				body := ""
				if method != "GET" {
					body = "payload"
				}
				fmt.Fprintf(c, "%s http://%s/second HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n%s", method, o, o, len(body), body)
				resp, got := proxytest.ReadResponse(t, br, method)
				if resp.StatusCode != 200 || got != "ok" {
					t.Fatalf("second: %d %q (origin saw %d)", resp.StatusCode, got, seen.Load())
				}
				if n := seen.Load(); n != 2 {
					t.Fatalf("origin saw %d requests, want 2", n)
				}
			})
		}
	}

	for _, method := range []string{"POST", "GET"} {
		t.Run("HTTP-3/origin-that-reads-the-request-and-closes-on-a-pooled-connection/"+method, func(t *testing.T) {
			// The second request on the pooled connection is read, then the
			// connection closes without an answer: a POST is not replayed
			// (502), a GET is retried at most once.
			var seen atomic.Int32
			o := manyServer(t, func(c net.Conn) {
				br := bufio.NewReader(c)
				for i := 0; ; i++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.ReadAll(req.Body)
					if seen.Add(1) == 2 {
						return // the second request: close unanswered
					}
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
			})
			addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
			c := proxytest.Dial(t, addr)
			br := bufio.NewReader(c)
			fmt.Fprintf(c, "GET http://%s/first HTTP/1.1\r\nHost: %s\r\n\r\n", o, o)
			proxytest.ReadResponse(t, br, "GET")
			fmt.Fprintf(c, "%s http://%s/second HTTP/1.1\r\nHost: %s\r\nContent-Length: 1\r\n\r\nx", method, o, o)
			resp, _ := proxytest.ReadResponse(t, br, method)
			n := seen.Load()
			switch method {
			case "POST":
				if resp.StatusCode != 502 || n != 2 {
					t.Fatalf("POST: status %d, origin saw %d requests; want 502 and 2", resp.StatusCode, n)
				}
			default:
				if resp.StatusCode != 200 || n != 3 {
					t.Fatalf("GET: status %d, origin saw %d requests; want 200 and 3", resp.StatusCode, n)
				}
			}
		})
	}
}

// TestExpectContinueAfterReusedRequests: a client that waits for 100 Continue before its
// body, on a connection whose earlier requests reused the head and the
// answer (SPEC HTTP-2: Expect: 100-continue must not deadlock).
func TestExpectContinueAfterReusedRequests(t *testing.T) {
	t.Run("HTTP-2/expect-100-continue-after-reused-requests", func(t *testing.T) {
		o := testworld.NewNamedOrigin(t, "O")
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		br := bufio.NewReader(c)
		for i := range 2 {
			fmt.Fprintf(c, "GET http://%s/g%d HTTP/1.1\r\nHost: %s\r\nX-Before: %d\r\n\r\n", o.Addr, i, o.Addr, i)
			proxytest.ReadResponse(t, br, "GET")
		}
		fmt.Fprintf(c, "PUT http://%s/put HTTP/1.1\r\nHost: %s\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n", o.Addr, o.Addr)
		line, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
			t.Fatalf("waiting for 100 Continue: %q %v", line, err)
		}
		if l, err := br.ReadString('\n'); err != nil || l != "\r\n" {
			t.Fatalf("100 Continue head: %q %v", l, err)
		}
		io.WriteString(c, "hello")
		if resp, body := proxytest.ReadResponse(t, br, "PUT"); resp.StatusCode != 200 || body != o.Greeting() {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
		rs := o.Requests()
		if len(rs) != 3 || string(rs[2].Body) != "hello" || rs[2].Header.Get("Expect") != "" || rs[2].Header.Get("X-Before") != "" {
			t.Fatalf("origin saw %d requests, the last %v %q", len(rs), rs[len(rs)-1].Header, rs[len(rs)-1].Body)
		}
	})
}
