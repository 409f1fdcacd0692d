package proxy

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// TestRelayHoldsNoPipeWhileIdle: an idle tunnel costs its two sockets in
// the proxy, not the two splice pipes (4 more fds) io.Copy holds while it
// waits (SPEC CON-2 relay).
func TestRelayHoldsNoPipeWhileIdle(t *testing.T) {
	t.Run("CON-2/idle-tunnel-holds-no-splice-pipe", func(t *testing.T) {
		addr, _ := proxytest.Start(t, New, Config{})
		echo := proxytest.TCPServer(t, "127.0.0.1:0", testworld.EchoBuffered) // no splice pipe of its own
		const n = 12                                                          // tcpServer buffers 16 connections
		before := countFDs(t)
		buf := make([]byte, 5)
		for i := range n {
			c, _ := proxytest.Tunnel(t, addr, echo)
			// Bytes both ways, so each direction has copied once and
			// now waits (io.Copy would wait holding its pipe).
			if _, err := c.Write([]byte("hello")); err != nil {
				t.Fatalf("tunnel %d: %v", i, err)
			}
			if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "hello" {
				t.Fatalf("tunnel %d echo: %q %v", i, buf, err)
			}
		}
		// Per tunnel in this process: client, proxy's two sockets, origin.
		// Go's pipe pool may keep a few pipes for the next splice (slack 8);
		// pipes it dropped are closed by their finalizers after a GC.
		delta := countFDs(t) - before
		for end := time.Now().Add(2 * time.Second); delta > 4*n+8 && time.Now().Before(end); delta = countFDs(t) - before {
			runtime.GC()
			runtime.Gosched()
		}
		if delta > 4*n+8 {
			t.Fatalf("%d idle tunnels hold %d fds (%.1f per tunnel, want ≤ 4: 2 in the proxy)", n, delta, float64(delta)/n)
		}
	})
	t.Run("CON-2/bulk-both-ways-intact", func(t *testing.T) {
		addr, _ := proxytest.Start(t, New, Config{})
		echo := proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) { io.Copy(c, c) })
		c, _ := proxytest.Tunnel(t, addr, echo)
		c.SetDeadline(time.Now().Add(20 * time.Second))
		want := make([]byte, 8<<20)
		rand.Read(want)
		go func() { c.Write(want); c.CloseWrite() }()
		got, err := io.ReadAll(c)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("echoed %d of %d bytes intact=%v: %v", len(got), len(want), bytes.Equal(got, want), err)
		}
	})
}

// TestRelayIdleAfterBulk: a tunnel that carried small messages and a bulk
// burst both ways and is now idle holds its two sockets, no pipe and no
// buffer (SPEC CON-2 relay; ≤ 2 fds per idle tunnel in the proxy).
func TestRelayIdleAfterBulk(t *testing.T) {
	t.Run("CON-2/idle-after-bulk-holds-no-pipe-nor-buffer", func(t *testing.T) {
		addr, _ := proxytest.Start(t, New, Config{})
		echo := proxytest.TCPServer(t, "127.0.0.1:0", testworld.EchoBuffered)
		const n = 12 // tcpServer buffers 16 connections
		before := countFDs(t)
		for range n {
			c, _ := proxytest.Tunnel(t, addr, echo)
			testworld.PingPong(t, c, c, []int{5, 256 << 10, 7}) // through a tunnel to an echo origin
		}
		delta := countFDs(t) - before
		for end := time.Now().Add(2 * time.Second); delta > 4*n+8 && time.Now().Before(end); delta = countFDs(t) - before {
			runtime.GC()
			runtime.Gosched()
		}
		if delta > 4*n+8 {
			t.Fatalf("%d idle tunnels after a bulk burst hold %d fds (%.1f per tunnel, want ≤ 4: 2 in the proxy)", n, delta, float64(delta)/n)
		}
	})
}
