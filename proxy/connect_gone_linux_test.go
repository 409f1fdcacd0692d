package proxy

import (
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// unreadBytes is how many bytes wait unread in c's receive queue.
func unreadBytes(t *testing.T, c net.Conn) int {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	n := -1
	rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
	return n
}

// TestConnectClientGoneAfterHalfClose, Linux only (SIOCINQ): a half-closed client that
// leaves without reading the watch's probe byte resets, and the watch
// cancels the open (SPEC CON-1).
func TestConnectClientGoneAfterHalfClose(t *testing.T) {
	t.Run("CON-1/a-client-gone-after-a-half-close-without-reading-cancels-the-open", func(t *testing.T) {
		// It half-closes, takes no byte, then closes: the probe byte lies
		// unread in its socket, so the close resets and the watch sees it.
		g := testworld.NewSilentGateway(t)
		addr, srv := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, "http://"+g.Addr), ConnectTimeout: 30 * time.Second, Cooldown: time.Minute})
		c := proxytest.Dial(t, addr)
		io.WriteString(c, "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n")
		testkit.WaitFor(t, 10*time.Second, "the proxy never dialled the gateway", func() bool { return g.Accepted() == 1 })
		waitStack(t, 10*time.Second, "proxy.(*clientWatch).run")
		c.(*net.TCPConn).CloseWrite()
		waitStack(t, 10*time.Second, "proxy.(*clientWatch).halfClosed")
		testkit.WaitFor(t, 10*time.Second, "the probe byte never arrived", func() bool { return unreadBytes(t, c) == 1 })
		c.Close()
		testkit.WaitFor(t, 10*time.Second, "the open outlived its client", func() bool { return g.Open() == 0 })
		waitNoStack(t, 10*time.Second, append(openFrames, "proxy.(*clientWatch).halfClosed")...)
		if d := proxytest.LastDecision(t, srv.Engine()); d.Error != "client gone" {
			t.Fatalf("decision %+v, want error \"client gone\"", d)
		}
	})
}
