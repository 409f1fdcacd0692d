//go:build unix

package upstream

import (
	"bufio"
	"context"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// rawOrigin answers every request head on a connection with a 3-byte
// body, parsing nothing but the blank line that ends a head (no
// allocation per request: the benchmark's allocations are Send's).
func rawOrigin(tb testing.TB) string {
	tb.Helper()
	return testkit.ServeConns(tb, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			for {
				line, err := br.ReadSlice('\n')
				if err != nil {
					return
				}
				if len(line) <= 2 {
					break
				}
			}
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n"); err != nil {
				return
			}
		}
	})
}

// BenchmarkSend is one GET on a pooled loopback connection, the upstream
// half of every plain request: Send, the body read and Close.
// cpu-ns/op is the process's CPU per request, the origin's included.
func BenchmarkSend(b *testing.B) {
	addr := rawOrigin(b)
	c := newTestClient()
	defer c.CloseIdle()
	r := getRequest(addr)
	ctx, cancel := context.WithCancel(context.Background()) // cancellable, as the proxy's
	defer cancel()
	buf := make([]byte, 64)
	send := func() {
		res := c.Send(ctx, candidate.Direct, r, nil, time.Second, true)
		if res.Err != nil {
			b.Fatal(res.Err)
		}
		if n, err := io.ReadFull(res.Resp.Body, buf[:3]); n != 3 || err != nil {
			b.Fatal(n, err)
		}
		res.Resp.Body.Close()
	}
	send()
	b.ReportAllocs()
	start := rusageCPU()
	for b.Loop() {
		send()
	}
	if used := rusageCPU() - start; start > 0 {
		b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// rusageCPU is the process's user+system CPU time.
func rusageCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
