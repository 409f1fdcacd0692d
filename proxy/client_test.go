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
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
)

// rawOrigin answers every request on a connection with "ok" and counts
// connections; closeAfter > 0 closes each connection after that many
// answers (keep-alive origin that drops idle connections).
func rawOrigin(t *testing.T, closeAfter int) (addr string, conns *atomic.Int64) {
	conns = new(atomic.Int64)
	addr = proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
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
		c := proxytest.Dial(t, proxyAddr)
		body := ""
		if method == "POST" {
			body = "Content-Length: 2\r\n\r\nhi"
		} else {
			body = "\r\n"
		}
		fmt.Fprintf(c, "%s http://%s/ HTTP/1.1\r\nHost: %s\r\n%s", method, origin, origin, body)
		resp, b := proxytest.ReadResponse(t, bufio.NewReader(c), method)
		return resp.StatusCode, b
	}
	t.Run("HTTP-3/idempotent-requests-reuse-upstream-connections", func(t *testing.T) {
		origin, conns := rawOrigin(t, 0)
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
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
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
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
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
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
		origin := proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
			conns.Add(1)
			br := bufio.NewReader(c)
			for {
				if _, err := http.ReadRequest(br); err != nil {
					return
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil")
			}
		})
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		for i := 0; i < 3; i++ {
			c := proxytest.Dial(t, addr)
			fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", origin, origin)
			resp, b := proxytest.ReadResponse(t, bufio.NewReader(c), "GET")
			if resp.StatusCode != 200 || b != "ok" {
				t.Fatalf("request %d: %d %q (surplus bytes answered a later request)", i, resp.StatusCode, b)
			}
		}
	})
}

// scriptedOrigin answers each request on a connection with the next
// writer of script (called with the connection), then keeps it open.
func scriptedOrigin(t *testing.T, script ...func(c net.Conn, br *bufio.Reader)) string {
	return proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
		br := bufio.NewReader(c)
		for _, step := range script {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_ = req
			step(c, br)
		}
		io.Copy(io.Discard, br)
	})
}

func TestUpstreamClientHostileOrigins(t *testing.T) {
	send := func(t *testing.T, addr, raw string) (*http.Response, string, time.Duration) {
		c := proxytest.Dial(t, addr)
		start := time.Now()
		io.WriteString(c, raw)
		resp, b := proxytest.ReadResponse(t, bufio.NewReader(c), strings.SplitN(raw, " ", 2)[0])
		return resp, b, time.Since(start)
	}
	get := func(o string) string { return "GET http://" + o + "/ HTTP/1.1\r\nHost: " + o + "\r\n\r\n" }

	t.Run("HTTP-5/late-unsolicited-bytes-never-answer-the-next-request", func(t *testing.T) {
		var fresh atomic.Int64
		// The first connection answers, waits until the client has that
		// answer (release), then sends a second, unsolicited response
		// while the connection sits idle in the proxy's pool (written).
		release, written := make(chan struct{}), make(chan struct{})
		origin := proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
			br := bufio.NewReader(c)
			if fresh.Add(1) == 1 {
				http.ReadRequest(br)
				io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
				select {
				case <-release:
				case <-time.After(10 * time.Second):
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nSMUGGLED")
				close(written)
				io.Copy(io.Discard, br)
				return
			}
			for {
				if _, err := http.ReadRequest(br); err != nil {
					return
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}
		})
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		if resp, _, _ := send(t, addr, get(origin)); resp.StatusCode != 204 {
			t.Fatalf("first: %d", resp.StatusCode)
		}
		close(release)
		select {
		case <-written:
		case <-time.After(10 * time.Second):
			t.Fatal("origin did not send its unsolicited response")
		}
		if resp, b, _ := send(t, addr, get(origin)); resp.StatusCode != 200 || b != "ok" {
			t.Fatalf("second request got %d %q: the unsolicited bytes answered it", resp.StatusCode, b)
		}
	})
	t.Run("HTTP-5/oversized-response-head-502", func(t *testing.T) {
		origin := scriptedOrigin(t, func(c net.Conn, _ *bufio.Reader) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Big: "+strings.Repeat("a", 2<<20)+"\r\nContent-Length: 2\r\n\r\nok")
		})
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		if resp, _, _ := send(t, addr, get(origin)); resp.StatusCode != 502 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	for _, tc := range []struct{ name, answer string }{
		{"HTTP-5/space-before-colon-in-response-502", "HTTP/1.1 200 OK\r\nTransfer-Encoding : chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"},
		{"HTTP-5/status-099-502", "HTTP/1.1 099 Weird\r\nContent-Length: 0\r\n\r\n"},
		{"HTTP-5/unrequested-101-502", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x05hello"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			origin := scriptedOrigin(t, func(c net.Conn, _ *bufio.Reader) { io.WriteString(c, tc.answer) })
			addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
			if resp, b, _ := send(t, addr, get(origin)); resp.StatusCode != 502 {
				t.Fatalf("status %d %q", resp.StatusCode, b)
			}
		})
	}
	t.Run("HTTP-3/early-answer-during-upload-reaches-client", func(t *testing.T) {
		origin := proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
			br := bufio.NewReader(c)
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			io.WriteString(c, "HTTP/1.1 413 Payload Too Large\r\nConnection: close\r\nContent-Length: 8\r\n\r\ntoo big!")
			c.(*net.TCPConn).CloseWrite()
			time.Sleep(200 * time.Millisecond) // stop reading, then reset: the upload fails mid-way
			c.(*net.TCPConn).SetLinger(0)
		})
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		body := strings.Repeat("x", 6<<20)
		c := proxytest.Dial(t, addr)
		go func() {
			fmt.Fprintf(c, "POST http://%s/up HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n%s", origin, origin, len(body), body)
		}()
		resp, b := proxytest.ReadResponse(t, bufio.NewReader(c), "POST")
		if resp.StatusCode != 413 || b != "too big!" {
			t.Fatalf("got %d %q, want the origin's early 413", resp.StatusCode, b)
		}
	})
	t.Run("HTTP-4/slow-small-body-head-not-held-back", func(t *testing.T) {
		origin := scriptedOrigin(t, func(c net.Conn, _ *bufio.Reader) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n")
			for i := 0; i < 10; i++ {
				time.Sleep(150 * time.Millisecond) // a slow origin
				io.WriteString(c, "x")
			}
		})
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		start := time.Now()
		io.WriteString(c, get(origin))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el > 1200*time.Millisecond {
			t.Fatalf("head arrived after %v: held back until the slow body was complete (1.5 s)", el)
		}
		b, _ := io.ReadAll(resp.Body)
		if string(b) != "xxxxxxxxxx" {
			t.Fatalf("body %q", b)
		}
	})
}
