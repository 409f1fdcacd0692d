package proxy

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"os"
	"runtime"
	"testing"
	"time"
)

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestRelayHoldsNoPipeWhileIdle: an idle tunnel costs its two sockets in
// the proxy, not the two splice pipes (4 more fds) io.Copy holds while it
// waits (issue 20, SPEC CON-2 relay).
func TestRelayHoldsNoPipeWhileIdle(t *testing.T) {
	t.Run("CON-2/idle-tunnel-holds-no-splice-pipe", func(t *testing.T) {
		addr, _ := startProxy(t, Config{})
		echo := tcpServer(t, "127.0.0.1:0", bufEcho) // no splice pipe of its own
		const n = 12                                 // tcpServer buffers 16 connections
		before := openFDs(t)
		buf := make([]byte, 5)
		for i := range n {
			c := openTunnel(t, addr, echo)
			// Bytes both ways, so each direction has spliced once and
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
		delta := openFDs(t) - before
		for end := time.Now().Add(2 * time.Second); delta > 4*n+8 && time.Now().Before(end); delta = openFDs(t) - before {
			runtime.GC()
			runtime.Gosched()
		}
		if delta > 4*n+8 {
			t.Fatalf("%d idle tunnels hold %d fds (%.1f per tunnel, want ≤ 4: 2 in the proxy)", n, delta, float64(delta)/n)
		}
	})
	t.Run("CON-2/bulk-both-ways-intact", func(t *testing.T) {
		addr, _ := startProxy(t, Config{})
		echo := tcpServer(t, "127.0.0.1:0", func(c net.Conn) { io.Copy(c, c) })
		c := openTunnel(t, addr, echo)
		c.SetDeadline(time.Now().Add(20 * time.Second))
		want := make([]byte, 8<<20)
		rand.Read(want)
		go func() { c.Write(want); c.(*net.TCPConn).CloseWrite() }()
		got, err := io.ReadAll(c)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("echoed %d of %d bytes intact=%v: %v", len(got), len(want), bytes.Equal(got, want), err)
		}
	})
}

// bufEcho echoes through a buffer: io.Copy(c, c) would splice and hold a
// pipe of its own while waiting, hiding the proxy's count.
func bufEcho(c net.Conn) {
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
