package testkit

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"
)

// Server is a server that serves connections from a listener until it is
// shut down, like *proxy.Server and *http.Server.
type Server interface {
	Serve(ln net.Listener) error
	Shutdown(ctx context.Context) error
}

// ShutdownGrace is how long Serve's cleanup lets srv finish in-flight work
// before Shutdown returns (the proxy's own grace).
const ShutdownGrace = 1500 * time.Millisecond

// Serve listens on 127.0.0.1:0, runs srv.Serve on that listener in a
// goroutine and returns the listener's "host:port". A tb.Cleanup shuts srv
// down with a ShutdownGrace deadline and waits until Serve has returned, so
// no goroutine of it outlives the test (goleak). Listen errors fail tb.
func Serve(tb testing.TB, srv Server) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	})
	return ln.Addr().String()
}

// ServeConns listens on 127.0.0.1:0 and runs serve on every accepted
// connection in its own goroutine, returning the listener's "host:port".
// serve need not close its connection: a tb.Cleanup closes the listener
// and every accepted connection, then waits for the accept loop and every
// serve call to return (goleak). Listen errors fail tb.
func ServeConns(tb testing.TB, serve func(net.Conn)) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	closed := false
	tb.Cleanup(func() {
		ln.Close()
		mu.Lock()
		closed = true
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if closed { // accepted just before the listener closed
				mu.Unlock()
				c.Close()
				continue
			}
			open = append(open, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}
