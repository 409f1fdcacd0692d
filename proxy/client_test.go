package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
)

// rawOrigin answers every request on a connection with "ok" and counts
// connections; closeAfter > 0 closes each connection after that many
// answers (keep-alive origin that drops idle connections).
func rawOrigin(t *testing.T, closeAfter int) (addr string, conns *atomic.Int64) {
	conns = new(atomic.Int64)
	addr = tcpServer(t, "127.0.0.1:0", func(c net.Conn) {
		conns.Add(1)
		br := bufio.NewReader(c)
		for n := 1; ; n++ {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			if closeAfter > 0 && n >= closeAfter {
				return
			}
		}
	})
	return addr, conns
}

func TestUpstreamClient(t *testing.T) {
	get := func(t *testing.T, proxyAddr, method, origin string) (int, string) {
		c := dialProxy(t, proxyAddr)
		body := ""
		if method == "POST" {
			body = "Content-Length: 2\r\n\r\nhi"
		} else {
			body = "\r\n"
		}
		fmt.Fprintf(c, "%s http://%s/ HTTP/1.1\r\nHost: %s\r\n%s", method, origin, origin, body)
		resp, b := readResponse(t, bufio.NewReader(c), method)
		return resp.StatusCode, b
	}
	t.Run("HTTP-3/idempotent-requests-reuse-upstream-connections", func(t *testing.T) {
		origin, conns := rawOrigin(t, 0)
		addr, _ := startProxy(t, Config{LoopbackDirect: true})
		for i := 0; i < 5; i++ {
			if st, b := get(t, addr, "GET", origin); st != 200 || b != "ok" {
				t.Fatalf("%d %q", st, b)
			}
		}
		if n := conns.Load(); n != 1 {
			t.Fatalf("origin saw %d connections for 5 sequential GETs, want 1 (pooled)", n)
		}
	})
	t.Run("HTTP-3/stale-pooled-connection-retried-for-GET", func(t *testing.T) {
		origin, conns := rawOrigin(t, 1) // closes after every answer, without saying so
		addr, _ := startProxy(t, Config{LoopbackDirect: true})
		for i := 0; i < 5; i++ {
			if st, b := get(t, addr, "GET", origin); st != 200 || b != "ok" {
				t.Fatalf("request %d: %d %q", i, st, b)
			}
		}
		if n := conns.Load(); n < 5 {
			t.Fatalf("origin saw %d connections", n)
		}
	})
	t.Run("HTTP-3/non-idempotent-never-on-a-pooled-connection", func(t *testing.T) {
		origin, conns := rawOrigin(t, 0)
		addr, _ := startProxy(t, Config{LoopbackDirect: true})
		get(t, addr, "GET", origin) // leaves one pooled connection
		for i := 0; i < 3; i++ {
			if st, b := get(t, addr, "POST", origin); st != 200 || b != "ok" {
				t.Fatalf("%d %q", st, b)
			}
		}
		if n := conns.Load(); n != 4 {
			t.Fatalf("origin saw %d connections, want 4 (one per POST plus the GET's)", n)
		}
	})
}

func TestUpstreamClientFraming(t *testing.T) {
	t.Run("HTTP-5/extra-bytes-after-response-not-reused", func(t *testing.T) {
		// An origin that sends more than Content-Length says: the surplus
		// must never be read as the answer to the next request.
		var conns atomic.Int64
		origin := tcpServer(t, "127.0.0.1:0", func(c net.Conn) {
			conns.Add(1)
			br := bufio.NewReader(c)
			for {
				if _, err := http.ReadRequest(br); err != nil {
					return
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil")
			}
		})
		addr, _ := startProxy(t, Config{LoopbackDirect: true})
		for i := 0; i < 3; i++ {
			c := dialProxy(t, addr)
			fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", origin, origin)
			resp, b := readResponse(t, bufio.NewReader(c), "GET")
			if resp.StatusCode != 200 || b != "ok" {
				t.Fatalf("request %d: %d %q (surplus bytes answered a later request)", i, resp.StatusCode, b)
			}
		}
	})
}
