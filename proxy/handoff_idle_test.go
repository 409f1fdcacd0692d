package proxy

import (
	"bufio"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
)

// TestOwnEndpointIdleKeepAliveCost: an idle keep-alive connection to the
// proxy's own endpoints holds at most two goroutines and two descriptors
// (SPEC HTTP-1, HTTP-5b).
func TestOwnEndpointIdleKeepAliveCost(t *testing.T) {
	t.Run("HTTP-1/idle-keep-alive-connections-to-own-endpoints-hold-at-most-two-goroutines-and-two-fds-each", func(t *testing.T) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "own") })
		addr, _ := proxytest.Start(t, New, Config{Handler: h})
		const n = 60
		before := runtime.NumGoroutine()
		fds := countFDs(t)
		for range n {
			c := proxytest.Dial(t, addr)
			br := bufio.NewReader(c)
			io.WriteString(c, "GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n")
			if resp, body := proxytest.ReadResponse(t, br, "GET"); resp.StatusCode != 200 || !strings.Contains(body, "own") {
				t.Fatalf("own endpoint: %d %q", resp.StatusCode, body)
			}
		}
		// Each idle connection: the proxy's goroutine in the head read
		// and net/http's, parked in the hand-off (handoff.go); 2 fds
		// (client end here and the proxy's end).
		deadline := time.Now().Add(10 * time.Second)
		for runtime.NumGoroutine()-before > 2*n+4 {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				dump := string(buf[:runtime.Stack(buf, true)])
				t.Fatalf("%d goroutines for %d idle keep-alive connections; e.g.\n%s", runtime.NumGoroutine()-before, n, dump[len(dump)-6000:])
			}
			time.Sleep(10 * time.Millisecond) // polling with a deadline
		}
		if got := countFDs(t) - fds; got > 2*n+4 {
			t.Fatalf("%d fds for %d idle connections", got, n)
		}
	})
}
