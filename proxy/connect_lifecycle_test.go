package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
)

// slowGateway is an HTTP CONNECT gateway that answers each CONNECT with 200
// once release is readable (closed: at once), then echoes what it reads
// and half-closes at the client's EOF.
type slowGateway struct {
	addr    string
	release chan struct{}
	heads   atomic.Int32
	live    atomic.Int32 // connections past their CONNECT head, not yet ended
	open    func()       // closes release once
}

func newSlowGateway(t *testing.T) *slowGateway {
	g := &slowGateway{release: make(chan struct{})}
	var once sync.Once
	g.open = func() { once.Do(func() { close(g.release) }) }
	g.addr = manyServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := httpmsg.ReadRequestHead(br); err != nil {
			return
		}
		g.heads.Add(1)
		g.live.Add(1)
		defer g.live.Add(-1)
		<-g.release
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		io.Copy(c, br)
		c.(*net.TCPConn).CloseWrite()
		io.Copy(io.Discard, c)
	})
	t.Cleanup(g.open) // before manyServer's: no handler waits on release
	return g
}

// pattern returns n bytes that reveal a loss, duplicate or reorder.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

// TestConnectOpenAndTeardown: bytes sent during a slow open arrive once
// and in order; connection goroutines, tunnels and clients that reset at
// once leave nothing behind; shutdown ends idle and busy tunnels; the Via
// loop check holds for tunnels (SPEC CON-1, CON-2, LIS-3).
func TestConnectOpenAndTeardown(t *testing.T) {
	for _, inHead := range []bool{true, false} {
		t.Run(fmt.Sprintf("CON-2/early-bytes-during-a-slow-open-arrive-once-and-in-order/with-head=%v", inHead), func(t *testing.T) {
			g := newSlowGateway(t)
			addr, _ := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, "http://"+g.addr)})
			c := proxytest.Dial(t, addr)
			io.WriteString(c, "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n")
			if inHead {
				io.WriteString(c, "EARLY1.")
			}
			testkit.WaitFor(t, 10*time.Second, "the gateway never got the CONNECT", func() bool { return g.heads.Load() == 1 })
			if !inHead {
				// The client watch reads c once the open is past
				// clientWatchDelay: early bytes then land in its Peek.
				waitStack(t, 10*time.Second, "proxy.(*clientWatch).run")
				io.WriteString(c, "EARLY1.")
			}
			io.WriteString(c, "EARLY2.")
			g.open()
			br := bufio.NewReader(c)
			if code, _ := proxytest.ReadConnectReply(t, br); code != 200 {
				t.Fatalf("CONNECT: %d", code)
			}
			io.WriteString(c, "LATE.")
			c.(*net.TCPConn).CloseWrite()
			got, err := io.ReadAll(br)
			if err != nil || string(got) != "EARLY1.EARLY2.LATE." {
				t.Fatalf("echo %q (%v), want EARLY1.EARLY2.LATE.", got, err)
			}
		})
	}

	t.Run("CON-1/connection-goroutines-and-tunnels-leave-nothing-behind", func(t *testing.T) {
		g := newSlowGateway(t)
		g.open()
		addr, srv := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, "http://"+g.addr)})
		before := runtime.NumGoroutine()
		for i := range 40 {
			c, _ := proxytest.Tunnel(t, addr, "example.test:443")
			fmt.Fprintf(c, "m%d", i)
			c.CloseWrite()
			if b, err := io.ReadAll(c); err != nil || string(b) != fmt.Sprintf("m%d", i) {
				t.Fatalf("tunnel %d: %q %v", i, b, err)
			}
			c.Close()
		}
		waitNoStack(t, 10*time.Second, "relay.(*tunnel).pipe")
		// Waiting connection goroutines are bounded by maxIdle.
		limit := before + int(srv.maxIdle) + 4
		testkit.WaitFor(t, 10*time.Second, "goroutines left over", func() bool { return runtime.NumGoroutine() <= limit })
	})

	t.Run("CON-1/clients-that-reset-right-after-connect-leave-nothing-behind", func(t *testing.T) {
		g := newSlowGateway(t)
		g.open()
		addr, _ := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, "http://"+g.addr)})
		for i := range 30 {
			c := proxytest.Dial(t, addr)
			io.WriteString(c, "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\nearly")
			if i%2 == 1 {
				// during or after the 200: its write or the relay fails
				c.Read(make([]byte, 1))
			}
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
		testkit.WaitFor(t, 10*time.Second, "gateway connections left open", func() bool { return g.live.Load() == 0 })
		waitNoStack(t, 10*time.Second, "relay.(*tunnel).pipe", "proxy.(*Server).handleConnect", "proxy.(*clientWatch).run")
	})

	t.Run("CON-2/shutdown-ends-idle-and-busy-tunnels", func(t *testing.T) {
		g := newSlowGateway(t)
		g.open()
		addr, srv := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, "http://"+g.addr)})
		idle, _ := proxytest.Tunnel(t, addr, "example.test:443")
		busy, _ := proxytest.Tunnel(t, addr, "example.test:443")
		go func() { // a client that writes bulk and never reads: the echo stalls
			for {
				if _, err := busy.Write(make([]byte, 64<<10)); err != nil {
					return
				}
			}
		}()
		testkit.WaitFor(t, 10*time.Second, "no two tunnels", func() bool { return g.heads.Load() == 2 })
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		srv.Shutdown(ctx)
		for _, c := range []*net.TCPConn{idle, busy} {
			if !endsWithin(c, 5*time.Second) {
				t.Fatal("a tunnel outlived Shutdown")
			}
		}
		testkit.WaitFor(t, 10*time.Second, "gateway connections left open", func() bool { return g.live.Load() == 0 })
		waitNoStack(t, 10*time.Second, "relay.(*tunnel).pipe")
	})

	t.Run("CON-1/via-carrying-connect-keeps-its-tunnel-after-the-open-context-ends", func(t *testing.T) {
		g := newSlowGateway(t)
		g.open()
		addr, _ := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, "http://"+g.addr)})
		c := proxytest.Dial(t, addr)
		io.WriteString(c, "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\nVia: 1.1 other-proxy\r\n\r\n")
		br := bufio.NewReader(c)
		if code, _ := proxytest.ReadConnectReply(t, br); code != 200 {
			t.Fatalf("CONNECT: %d", code)
		}
		for i := range 3 {
			fmt.Fprintf(c, "ping%d", i)
			buf := make([]byte, 5)
			if _, err := io.ReadFull(br, buf); err != nil || string(buf) != fmt.Sprintf("ping%d", i) {
				t.Fatalf("echo %d: %q %v", i, buf, err)
			}
		}
	})

	t.Run("CON-1/forged-via-token-of-this-proxy-is-a-loop", func(t *testing.T) {
		g := newSlowGateway(t)
		g.open()
		addr, srv := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, "http://"+g.addr)})
		c := proxytest.Dial(t, addr)
		fmt.Fprintf(c, "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\nVia: 1.1 a, 1.1 %s\r\n\r\n", srv.engine.Via().Name())
		if code, _ := proxytest.ReadConnectReply(t, bufio.NewReader(c)); code != http.StatusLoopDetected {
			t.Fatalf("CONNECT with our own Via token: %d, want 508", code)
		}
		if g.heads.Load() != 0 {
			t.Fatal("a looped CONNECT reached the gateway")
		}
	})
}
