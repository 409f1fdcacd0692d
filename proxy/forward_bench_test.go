// Benchmarks of the per-request path of plain forwarding (SPEC HTTP-1..
// HTTP-6) and of the CONNECT race (ORD-6): a client keeping its connection
// sends absolute-form requests through the proxy to a loopback origin
// that answers each head at once; the race opens paths that are open at
// once (no sockets), so only the race's own work is measured.
//
//	go test -run '^$' -bench 'Forward|Race' -benchmem ./proxy

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

// BenchmarkRace is openTunnel with two candidates whose paths open at once
// (SPEC ORD-6): the race's goroutine, channel and timer per tunnel, and
// the win's bookkeeping.
func BenchmarkRace(b *testing.B) {
	gw := candidate.Candidate{Kind: candidate.KindHTTP, Addr: "127.0.0.1:1"}
	e, err := NewEngine(Config{Candidates: []candidate.Candidate{gw, candidate.Direct}, RaceDelay: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	e.openAttempt = func(context.Context, attempt, string, string, bool) (net.Conn, error) { return c1, nil }
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := e.openTunnel(ctx, "x.test", 443); err != nil {
			b.Fatal(err)
		}
	}
}
