package proxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
)

// countStacks returns how many goroutines run frame.
func countStacks(frame string) int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), frame)
}

func TestConnectionGoroutineReuse(t *testing.T) {
	t.Run("LIS-3/connection-goroutines-are-reused-bounded-and-end-at-shutdown", func(t *testing.T) {
		srv, err := New(Config{LoopbackDirect: true})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan struct{})
		go func() { srv.Serve(ln); close(served) }()
		// refused sends a request the proxy refuses (400, connection
		// closed): a connection's whole life on its goroutine.
		refused := func() {
			c := proxytest.Dial(t, ln.Addr().String())
			io.WriteString(c, "GET /x HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n")
			if resp, _ := proxytest.ReadResponse(t, bufio.NewReader(c), "GET"); resp.StatusCode != 400 {
				t.Errorf("status %d", resp.StatusCode)
			}
			c.Close()
		}
		// More connections at once than may wait afterwards.
		n := int(srv.maxIdle) * 3
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() { defer wg.Done(); refused() }()
		}
		wg.Wait()
		frame := "proxy.(*Server).serveLoop"
		testkit.WaitFor(t, 5*time.Second, "idle connection goroutines above the bound", func() bool {
			return countStacks(frame) <= int(srv.maxIdle) && srv.idleServers.Load() <= srv.maxIdle
		})
		// Connections one after another are served by the goroutines that
		// wait: their number does not grow.
		waiting := countStacks(frame)
		if waiting == 0 {
			t.Fatal("no connection goroutine waits for the next connection")
		}
		for range 20 {
			refused()
		}
		if got := countStacks(frame); got > waiting {
			t.Fatalf("%d connection goroutines after 20 sequential connections, %d before: not reused", got, waiting)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		srv.Shutdown(ctx)
		<-served
		// Shutdown's wait ends at each goroutine's deferred wg.Done, which
		// runs just before the goroutine is gone: poll for the exit.
		testkit.WaitFor(t, 5*time.Second, "connection goroutines left after Shutdown", func() bool { return countStacks(frame) == 0 })
	})
}
