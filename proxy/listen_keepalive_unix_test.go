//go:build unix

package proxy

import (
	"net"
	"syscall"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
)

// acceptedKeepAlive dials ln and returns SO_KEEPALIVE of the accepted
// connection.
func acceptedKeepAlive(t testing.TB, ln net.Listener) int {
	t.Helper()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	rc, err := a.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	v := -1
	var serr error
	if err := rc.Control(func(fd uintptr) { v, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE) }); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	return v
}

func TestListenLoopbackKeepAlive(t *testing.T) {
	t.Run("LIS-1/loopback-listener-accepts-without-tcp-keepalive", func(t *testing.T) {
		// The control: Go's default listener turns keepalive on, so the
		// probe below can tell the two apart.
		def, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer def.Close()
		if v := acceptedKeepAlive(t, def); v == 0 {
			t.Fatal("Go's default listener accepted without keepalive: the check below proves nothing")
		}
		ln, _, err := Listen("127.0.0.1", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		if v := acceptedKeepAlive(t, ln); v != 0 {
			t.Fatalf("SO_KEEPALIVE = %d on a loopback client connection, want 0", v)
		}
	})
}

// BenchmarkLoopbackAccept is one client connection's set-up and close on a
// Listen(127.0.0.1) listener, both ends in this process (the
// accepted connection's socket options).
func BenchmarkLoopbackAccept(b *testing.B) {
	ln, _, err := Listen("127.0.0.1", 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	testkit.ReportCPU(b)
	for b.Loop() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		a, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		a.Close()
		c.Close()
	}
}
