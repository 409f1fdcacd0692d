package testworld

import (
	"net"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
)

// RefusedAddr returns "127.0.0.1:PORT" where nothing listens, so a dial is
// refused (ECONNREFUSED). Where the OS allows it the port stays bound (a
// socket that never listens) until t's cleanup, so no other test can take
// it meanwhile; elsewhere it was bound and released, and another test could
// take it in between (see holdRefusedPort).
func RefusedAddr(t testing.TB) string {
	t.Helper()
	if addr, release, ok := holdRefusedPort(); ok {
		t.Cleanup(release)
		return addr
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testworld: listen: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// ProcessRefusedAddr is RefusedAddr for a TestMain, before any test: the
// port stays bound until the process exits. It panics when no loopback
// port can be bound.
func ProcessRefusedAddr() string {
	if addr, _, ok := holdRefusedPort(); ok {
		return addr
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic("testworld: listen: " + err.Error())
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Blackhole returns "127.0.0.1:PORT" of a listener that accepts TCP
// connections and never reads or answers: TCP connects, then silence. The
// listener and every accepted connection are closed by t.Cleanup
// (testkit.ServeConns, whose serve here returns at once and leaves the
// connection open).
func Blackhole(t testing.TB) string {
	t.Helper()
	return testkit.ServeConns(t, func(net.Conn) {})
}

// EchoBuffered echoes what it reads from c back to c through a 4 KiB
// buffer until either direction fails, so the echo holds no splice pipe of
// its own (io.Copy(c, c) would splice and hold one while it waits, hiding a
// relay's descriptor count).
func EchoBuffered(c net.Conn) {
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
