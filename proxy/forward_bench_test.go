// Benchmarks of the per-request path of plain forwarding (SPEC HTTP-1..
// HTTP-6): a client keeping its connection sends absolute-form requests
// through the proxy to a loopback origin that answers each head at once.
// The CONNECT race's is in proxy/engine (race_bench_test.go).
//
//	go test -run '^$' -bench 'Forward' -benchmem ./proxy

package proxy

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// BenchmarkForward is one keep-alive client's sequential plain requests
// through the proxy, direct to a loopback origin: a GET, and a POST with a
// buffered body (replay state, SPEC HTTP-2, HTTP-3). allocs/op counts the
// whole process (client, proxy and origin).
func BenchmarkForward(b *testing.B) {
	origin := answerListener(b, []byte(benchAnswers["small"]))
	srv, err := New(Config{Candidates: []candidate.Candidate{candidate.Direct}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Shutdown(context.Background()) })
	for _, tc := range []struct{ name, req string }{
		{"get", "GET http://" + origin + "/x HTTP/1.1\r\nHost: " + origin + "\r\nUser-Agent: bench\r\n\r\n"},
		// The origin reads heads only: a body without a line end joins
		// the next request's first line, which it skips.
		{"post", "POST http://" + origin + "/x HTTP/1.1\r\nHost: " + origin + "\r\nContent-Length: 5\r\n\r\nhello"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(time.Minute))
			br := bufio.NewReader(c)
			req := []byte(tc.req)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || resp.Close {
					b.Fatalf("status %d, close %v", resp.StatusCode, resp.Close)
				}
			}
		})
	}
}
