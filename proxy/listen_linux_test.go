//go:build linux

package proxy

import (
	"context"
	"net"
	"syscall"
	"testing"
)

// listenerProtocol returns SO_PROTOCOL of ln's socket: IPPROTO_TCP, or
// IPPROTO_MPTCP (262) for a Multipath TCP listener.
func listenerProtocol(t testing.TB, ln net.Listener) int {
	t.Helper()
	rc, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	v := -1
	var serr error
	if err := rc.Control(func(fd uintptr) { v, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_PROTOCOL) }); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	return v
}

const ipprotoMPTCP = 262 // linux/in.h

// TestListenLoopbackPlainTCP: a loopback listener is a plain TCP socket,
// not Go's default Multipath TCP listener, whose set-up cost every start a
// probe socket, uname(2) and the MPTCP socket; a non-loopback
// one keeps Go's default.
func TestListenLoopbackPlainTCP(t *testing.T) {
	t.Run("LIS-1/loopback-listener-is-plain-tcp", func(t *testing.T) {
		var lc net.ListenConfig // the control: Go's default
		def, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer def.Close()
		if listenerProtocol(t, def) != ipprotoMPTCP {
			t.Skip("Go's default listener is not MPTCP here (kernel without MPTCP, or net.mptcp.enabled=0): nothing to tell apart")
		}
		ln, _, err := Listen("127.0.0.1", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		if p := listenerProtocol(t, ln); p != syscall.IPPROTO_TCP {
			t.Fatalf("SO_PROTOCOL = %d on the loopback listener, want IPPROTO_TCP (%d)", p, syscall.IPPROTO_TCP)
		}
		if c := acceptedKeepAlive(t, ln); c != 0 {
			t.Fatalf("loopback client connection has SO_KEEPALIVE %d", c)
		}
	})
}

// BenchmarkListenLoopback is Listen(127.0.0.1) and Close: the launcher's
// listener set-up at every start.
func BenchmarkListenLoopback(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		ln, _, err := Listen("127.0.0.1", 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		ln.Close()
	}
}
