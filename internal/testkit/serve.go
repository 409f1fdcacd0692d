package testkit

import (
	"context"
	"net"
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
// before Shutdown returns (the proxy's own grace, SPEC LIS-3).
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
