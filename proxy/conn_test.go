package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
)

// TestClientRawIO checks which client connections switch to raw reads and
// writes (conn.go): plain ones on Linux, never a tunnel.
func TestClientRawIO(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer origin.Close()
	t.Run("HTTP-1/plain-keep-alive-requests-use-raw-io", func(t *testing.T) {
		addr, srv := proxytest.Start(t, New, Config{LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		br := bufio.NewReader(c)
		for i := 0; i < 3; i++ {
			fmt.Fprintf(c, "GET %s/x HTTP/1.1\r\nHost: %s\r\n\r\n", origin.URL, origin.Listener.Addr())
			if resp, body := proxytest.ReadResponse(t, br, "GET"); resp.StatusCode != 200 || body != "ok" {
				t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
			}
		}
		cs := endedConn(t, srv, c)
		_, isConn := cs.io.rw.(net.Conn)
		if raw := cs.io.rw != nil && !isConn; raw != (runtime.GOOS == "linux") {
			t.Fatalf("client io after plain requests: %T, raw %v, want raw on Linux only", cs.io.rw, raw)
		}
	})
	t.Run("CON-3/tunnel-keeps-the-connection-itself", func(t *testing.T) {
		addr, srv := proxytest.Start(t, New, Config{LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		br := bufio.NewReader(c)
		host := origin.Listener.Addr().String()
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", host, host)
		if st, _ := proxytest.ReadConnectReply(t, br); st != 200 {
			t.Fatalf("CONNECT: %d", st)
		}
		fmt.Fprintf(c, "GET /x HTTP/1.1\r\nHost: %s\r\n\r\n", host)
		if resp, body := proxytest.ReadResponse(t, br, "GET"); resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("through the tunnel: %d %q", resp.StatusCode, body)
		}
		if cs := endedConn(t, srv, c); cs.io.rw != nil {
			t.Fatalf("a tunnel's client io switched to %T", cs.io.rw)
		}
	})
}

// endedConn returns the state of the server's one client connection after
// closing c and waiting until the server forgot it (its goroutine's
// writes to the state happen before that, through the server's lock).
func endedConn(t *testing.T, srv *Server, c net.Conn) *connState {
	t.Helper()
	var cs *connState
	srv.mu.Lock()
	for _, s := range srv.conns {
		cs = s
	}
	n := len(srv.conns)
	srv.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d client connections tracked, want 1", n)
	}
	c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		srv.mu.Lock()
		n = len(srv.conns)
		srv.mu.Unlock()
		if n == 0 {
			return cs
		}
		if time.Now().After(deadline) {
			t.Fatal("the client connection is still tracked 10 s after it closed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
