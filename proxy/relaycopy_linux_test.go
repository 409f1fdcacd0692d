package proxy

import (
	"bytes"
	"crypto/rand"
	"errors"
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
// waits (SPEC CON-2 relay).
func TestRelayHoldsNoPipeWhileIdle(t *testing.T) {
	t.Run("CON-2/idle-tunnel-holds-no-splice-pipe", func(t *testing.T) {
		addr, _ := startProxy(t, Config{})
		echo := tcpServer(t, "127.0.0.1:0", bufEcho) // no splice pipe of its own
		const n = 12                                 // tcpServer buffers 16 connections
		before := openFDs(t)
		buf := make([]byte, 5)
		for i := range n {
			c := openTunnel(t, addr, echo)
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

// TestCopyTunnel covers copyTunnel's copy loop on real TCP pairs (SPEC
// CON-2 relay): bytes and EOF, a reset, and the read deadline of a wait.
func TestCopyTunnel(t *testing.T) {
	pair := tcpPairs(t)
	t.Run("CON-2/copies-every-byte-until-eof", func(t *testing.T) {
		client, src := pair()
		dst, sink := pair()
		defer src.Close()
		defer dst.Close()
		want := make([]byte, 3<<20)
		rand.Read(want)
		go func() {
			for off := 0; off < len(want); off += 100_000 {
				client.Write(want[off:min(off+100_000, len(want))])
			}
			client.Close()
		}()
		got := make(chan []byte, 1)
		go func() { b, _ := io.ReadAll(sink); got <- b }()
		n, err := copyTunnel(dst, src)
		dst.Close()
		if err != nil || n != int64(len(want)) {
			t.Fatalf("copyTunnel: %d bytes, %v; want %d, nil (EOF)", n, err, len(want))
		}
		if b := <-got; !bytes.Equal(b, want) {
			t.Fatalf("destination got %d bytes, intact=%v", len(b), bytes.Equal(b, want))
		}
	})
	t.Run("CON-2/reset-by-peer-is-an-error", func(t *testing.T) {
		client, src := pair()
		dst, sink := pair()
		defer src.Close()
		defer dst.Close()
		defer sink.Close()
		client.Write([]byte("x"))
		client.(*net.TCPConn).SetLinger(0) // close sends RST
		client.Close()
		src.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := copyTunnel(dst, src); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("copyTunnel after RST: %v, want a connection error", err)
		}
	})
	t.Run("CON-2/read-deadline-ends-the-wait", func(t *testing.T) {
		client, src := pair()
		dst, sink := pair()
		defer client.Close()
		defer src.Close()
		defer dst.Close()
		defer sink.Close()
		src.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		start := time.Now()
		if n, err := copyTunnel(dst, src); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("copyTunnel on a silent source: %d, %v; want 0, deadline exceeded", n, err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("the wait ended %v after a 50 ms deadline", took)
		}
	})
}
