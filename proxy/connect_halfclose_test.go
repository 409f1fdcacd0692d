package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// mixedGateway is an HTTP gateway that answers plain requests at once
// (keep-alive, "ok:" and the request-target) and CONNECTs with 200 once
// release is closed, then answers "got:" and what the tunnel carried to
// its EOF.
func mixedGateway(t *testing.T) (addr string, release chan struct{}) {
	release = make(chan struct{})
	addr = manyServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			h, err := httpmsg.ReadRequestHead(br)
			if err != nil {
				return
			}
			if h.Method != "CONNECT" {
				b := "ok:" + h.Target
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
				continue
			}
			<-release
			io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
			got, _ := io.ReadAll(br)
			io.WriteString(c, "got:"+string(got))
			return
		}
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	return addr, release
}

// TestConnectHalfCloseDuringOpen: a client that half-closes while its
// CONNECT is still opening, after plain requests on the same connection,
// gets its tunnel and its bytes; racing opens of such clients leave no
// goroutine or socket behind (SPEC CON-1, CON-2).
func TestConnectHalfCloseDuringOpen(t *testing.T) {
	for _, early := range []string{"", "ping"} {
		t.Run("CON-1/half-close-during-a-slow-open-after-plain-requests-on-the-connection/early="+early, func(t *testing.T) {
			// The connection's reads went raw with its first plain request
			// (conn.go); the CONNECT's watch and probe still work.
			gw, release := mixedGateway(t)
			addr, _ := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, "http://"+gw), ConnectTimeout: 30 * time.Second})
			c := proxytest.Dial(t, addr)
			br := bufio.NewReader(c)
			for i := range 3 {
				fmt.Fprintf(c, "GET http://example.test/%d HTTP/1.1\r\nHost: example.test\r\n\r\n", i)
				if resp, body := proxytest.ReadResponse(t, br, "GET"); resp.StatusCode != 200 || body != fmt.Sprintf("ok:http://example.test/%d", i) {
					t.Fatalf("plain %d: %d %q", i, resp.StatusCode, body)
				}
			}
			io.WriteString(c, "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n"+early)
			waitStack(t, 10*time.Second, "proxy.(*clientWatch).run")
			c.(*net.TCPConn).CloseWrite()
			first := make([]byte, 1)
			if _, err := io.ReadFull(br, first); err != nil || string(first) != "H" {
				t.Fatalf("first byte %q %v: the open was abandoned", first, err)
			}
			close(release)
			rest, err := io.ReadAll(br)
			want := "HTTP/1.1 200 Connection established\r\n\r\ngot:" + early
			if got := string(first) + string(rest); got != want || err != nil {
				t.Fatalf("client read %q %v, want %q", got, err, want)
			}
			waitNoStack(t, 10*time.Second, "proxy.(*clientWatch).halfClosed", "proxy.(*clientWatch).run")
		})
	}

	t.Run("CON-1/racing-opens-of-half-closed-clients-leave-nothing-behind", func(t *testing.T) {
		// A silent first gateway, a slow second one raced after RaceDelay:
		// clients that half-close right after their CONNECT (and early
		// bytes) all get their tunnel; the losing attempts, the watches
		// and their probes' tickers all end.
		silent := testworld.NewSilentGateway(t)
		gw, release := mixedGateway(t)
		addr, srv := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, "http://"+silent.Addr, "http://"+gw),
			ConnectTimeout: 30 * time.Second, RaceDelay: 20 * time.Millisecond})
		before := runtime.NumGoroutine()
		const n = 20
		conns := make([]net.Conn, n)
		for i := range conns {
			conns[i] = proxytest.Dial(t, addr)
			fmt.Fprintf(conns[i], "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\nearly%d", i)
			conns[i].(*net.TCPConn).CloseWrite()
		}
		testkit.WaitFor(t, 10*time.Second, "the watches never probed", func() bool { return countStacks("proxy.(*clientWatch).halfClosed") == n })
		close(release)
		for i, c := range conns {
			got, err := io.ReadAll(c)
			want := fmt.Sprintf("HTTP/1.1 200 Connection established\r\n\r\ngot:early%d", i)
			if string(got) != want || err != nil {
				t.Fatalf("client %d read %q %v, want %q", i, got, err, want)
			}
			c.Close()
		}
		testkit.WaitFor(t, 10*time.Second, "losing attempts left open", func() bool { return silent.Open() == 0 })
		waitNoStack(t, 10*time.Second, append(openFrames, "proxy.(*clientWatch).halfClosed", "relay.(*tunnel).pipe")...)
		limit := before + int(srv.maxIdle) + 4
		testkit.WaitFor(t, 10*time.Second, "goroutines left over", func() bool { return runtime.NumGoroutine() <= limit })
	})

	t.Run("CON-2/early-bytes-past-the-watch-buffer-then-a-half-close-arrive-whole", func(t *testing.T) {
		// More early bytes than br holds (4 KiB): the watch ends without a
		// probe, the open runs on, and every byte reaches the destination.
		gw, release := mixedGateway(t)
		addr, _ := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, "http://"+gw), ConnectTimeout: 30 * time.Second})
		c := proxytest.Dial(t, addr)
		early := string(pattern(10000))
		io.WriteString(c, "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n")
		waitStack(t, 10*time.Second, "proxy.(*clientWatch).run")
		io.WriteString(c, early)
		c.(*net.TCPConn).CloseWrite()
		waitNoStack(t, 10*time.Second, "proxy.(*clientWatch).run")
		close(release)
		got, err := io.ReadAll(c)
		if want := "HTTP/1.1 200 Connection established\r\n\r\ngot:" + early; string(got) != want || err != nil {
			t.Fatalf("client read %d bytes %v, want %d", len(got), err, len(want))
		}
	})

	t.Run("CON-1/plain-requests-then-a-tunnel-on-one-connection-carry-bytes-both-ways", func(t *testing.T) {
		gw, release := mixedGateway(t)
		close(release)
		addr, _ := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, "http://"+gw)})
		c := proxytest.Dial(t, addr)
		br := bufio.NewReader(c)
		io.WriteString(c, "GET http://example.test/a HTTP/1.1\r\nHost: example.test\r\n\r\n")
		if resp, body := proxytest.ReadResponse(t, br, "GET"); resp.StatusCode != 200 || body != "ok:http://example.test/a" {
			t.Fatalf("plain: %d %q", resp.StatusCode, body)
		}
		payload := string(pattern(100000))
		io.WriteString(c, "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n"+payload[:10])
		if st, body := proxytest.ReadConnectReply(t, br); st != 200 {
			t.Fatalf("CONNECT %d %q", st, body)
		}
		io.WriteString(c, payload[10:])
		c.(*net.TCPConn).CloseWrite()
		got, err := io.ReadAll(br)
		if err != nil || string(got) != "got:"+payload {
			t.Fatalf("tunnel carried %d bytes (%v), want %d", len(got), err, len(payload)+4)
		}
	})

}
