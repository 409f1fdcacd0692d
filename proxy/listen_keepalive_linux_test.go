package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
)

// socketKeepAlive finds this process's socket whose local address is
// local and whose peer is peer (/proc/self/fd, getsockname/getpeername)
// and returns its SO_KEEPALIVE.
func socketKeepAlive(t *testing.T, local, peer string) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	name := func(sa syscall.Sockaddr) string {
		if sa, ok := sa.(*syscall.SockaddrInet4); ok {
			return net.JoinHostPort(net.IP(sa.Addr[:]).String(), strconv.Itoa(sa.Port))
		}
		return ""
	}
	for _, e := range es {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		sn, err1 := syscall.Getsockname(fd)
		pn, err2 := syscall.Getpeername(fd)
		if err1 != nil || err2 != nil || name(sn) != local || name(pn) != peer {
			continue
		}
		v, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	t.Fatalf("no socket %s -> %s in this process", local, peer)
	return 0
}

// startProxyListen is proxytest.Start on the listener the command line uses
// (Listen: no keepalive on loopback clients, SPEC LIS-1).
func startProxyListen(t *testing.T, cfg Config) string {
	t.Helper()
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, _, err := Listen("127.0.0.1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.ShutdownGrace)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	})
	return ln.Addr().String()
}

// TestLoopbackSocketsHaveNoKeepAlive: through the whole proxy, every socket it
// holds to a loopback peer has no TCP keepalive (SPEC GW-3, LIS-1; proxy/dial
// decides it): the accepted client, a plain request's
// pooled upstream connection and a tunnel's, to a loopback http gateway
// and on the direct path; and no socket is left once the proxy and
// its peers are gone.
func TestLoopbackSocketsHaveNoKeepAlive(t *testing.T) {
	before := countSockets(t)
	t.Run("GW-3/every-socket-to-a-loopback-peer-has-no-keepalive", func(t *testing.T) {
		peers := make(chan [2]string, 8) // the proxy's end, the peer's end
		serve := func(c net.Conn) {
			peers <- [2]string{c.RemoteAddr().String(), c.LocalAddr().String()}
			br := bufio.NewReader(c)
			for {
				h, err := httpmsg.ReadRequestHead(br)
				if err != nil {
					return
				}
				if h.Method == http.MethodConnect {
					io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
					io.Copy(c, br) // echo until the tunnel's end
					return
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}
		}
		gw := manyServer(t, serve)
		origin := manyServer(t, serve)           // a loopback destination, direct
		echo := manyServer(t, func(c net.Conn) { // a direct tunnel's destination
			peers <- [2]string{c.RemoteAddr().String(), c.LocalAddr().String()}
			io.Copy(c, c)
		})
		for _, via := range []string{"gateway", "direct"} {
			cfg := Config{Candidates: proxytest.Gateways(t, false, "http://"+gw), ConnectTimeout: 10 * time.Second}
			target := "example.test"
			if via == "direct" {
				cfg = Config{LoopbackDirect: true, ConnectTimeout: 10 * time.Second}
				target = origin
			}
			addr := startProxyListen(t, cfg)
			c := proxytest.Dial(t, addr)
			br := bufio.NewReader(c)
			fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
			if resp, body := proxytest.ReadResponse(t, br, "GET"); resp.StatusCode != 200 || body != "ok" {
				t.Fatalf("%s plain: %d %q", via, resp.StatusCode, body)
			}
			// Answered: the proxy has accepted the connection.
			if got := socketKeepAlive(t, addr, c.LocalAddr().String()); got != 0 {
				t.Errorf("%s: the accepted loopback client has SO_KEEPALIVE %d", via, got)
			}
			p := <-peers
			if got := socketKeepAlive(t, p[0], p[1]); got != 0 {
				t.Errorf("%s: the plain request's upstream connection has SO_KEEPALIVE %d", via, got)
			}
			tc := proxytest.Dial(t, addr)
			ct := echo
			if via == "gateway" {
				ct = target + ":443"
			}
			fmt.Fprintf(tc, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", ct, ct)
			tbr := bufio.NewReader(tc)
			if code, _ := proxytest.ReadConnectReply(t, tbr); code != 200 {
				t.Fatalf("%s CONNECT: %d", via, code)
			}
			io.WriteString(tc, "ping")
			echo := make([]byte, 4)
			if _, err := io.ReadFull(tbr, echo); err != nil || string(echo) != "ping" {
				t.Fatalf("%s tunnel: %q %v", via, echo, err)
			}
			p = <-peers
			if got := socketKeepAlive(t, p[0], p[1]); got != 0 {
				t.Errorf("%s: the tunnel's upstream connection has SO_KEEPALIVE %d", via, got)
			}
			tc.(*net.TCPConn).CloseWrite()
			if _, err := io.ReadAll(tbr); err != nil {
				t.Fatalf("%s tunnel end: %v", via, err)
			}
		}
	})
	// Sockets only: the splice relay's pipes are cached for reuse.
	deadline := time.Now().Add(10 * time.Second)
	for n := countSockets(t); n > before; n = countSockets(t) {
		if time.Now().After(deadline) {
			t.Fatalf("LIS-3/no-socket-left-after-the-proxy-and-its-peers-are-gone: %d open, %d before", n, before)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline, not synchronisation
	}
}

// countSockets is the number of this process's open sockets.
func countSockets(t *testing.T) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}
