package testworld

import (
	"net"
	"sync"
	"testing"
)

// RefusedAddr returns "127.0.0.1:PORT" where nothing listens: the port was
// bound and released, so a dial is refused (ECONNREFUSED) unless another
// test happens to take the same port in between.
func RefusedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testworld: listen: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Blackhole returns "127.0.0.1:PORT" of a listener that accepts TCP
// connections and never reads or answers: TCP connects, then silence. The
// listener and every accepted connection are closed by t.Cleanup.
func Blackhole(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testworld: listen: %v", err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}
