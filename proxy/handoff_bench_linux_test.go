package proxy

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/config"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// agentConn is an agent's client connection: kept while the answers allow
// it (HTTP/1.1 keep-alive, as Node's fetch and Go's Transport do), dialled
// again when an answer closes it.
type agentConn struct {
	addr string
	dial bool // a new connection per call regardless of the answer
	c    net.Conn
	br   *bufio.Reader
}

// call sends one streamed call and reads it to its end; ttft is the time
// from the request (dial included when one is needed) to the first text
// delta.
func (a *agentConn) call(tb testing.TB, req string) (ttft time.Duration) {
	start := time.Now()
	if a.c == nil {
		c, err := net.Dial("tcp", a.addr)
		if err != nil {
			tb.Fatal(err)
		}
		a.c, a.br = c, bufio.NewReader(c)
	}
	if _, err := io.WriteString(a.c, req); err != nil {
		tb.Fatal(err)
	}
	resp, err := http.ReadResponse(a.br, &http.Request{Method: "POST"})
	if err != nil {
		tb.Fatal(err)
	}
	body := bufio.NewReader(resp.Body)
	for {
		line, err := body.ReadString('\n')
		if err != nil {
			tb.Fatalf("stream ended without a delta: %v", err)
		}
		if strings.Contains(line, `"text":"hi"`) {
			ttft = time.Since(start)
			break
		}
	}
	io.Copy(io.Discard, body)
	resp.Body.Close()
	if resp.Close || a.dial {
		a.close()
	}
	return ttft
}

func (a *agentConn) close() {
	if a.c != nil {
		a.c.Close()
		a.c, a.br = nil, nil
	}
}

// BenchmarkHandoffPool is an agent-shaped loop (SPEC HTTP-5b):
// sequential streamed calls of the model pool on the proxy's listener, the
// client keeping its connection while the answers allow it
// ("pool-dial-per-call": a new connection per call, what a client of an
// answer with Connection: close does); "direct" calls the same channel
// without the pool. ttft-µs is the time to the first
// delta, cpu-ns/op the process's CPU per call (client, proxy and channel:
// the pool's cost is the difference to direct).
func BenchmarkHandoffPool(b *testing.B) {
	up := streamingChannel(b, nil)
	cfg, err := config.ParseConfig([]byte("channels:\n  x: {api: anthropic, base_url: "+up.URL+", api_key: sk-test}\npools:\n  p: {members: [x]}\n"), nil)
	if err != nil {
		b.Fatal(err)
	}
	tr := &http.Transport{}
	b.Cleanup(tr.CloseIdleConnections)
	mux := NewMux()
	mux.Handle("/pool/", pool.New(cfg, pool.Options{Transport: tr, Logger: slog.New(slog.DiscardHandler)}))
	srv, err := New(Config{Handler: mux, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Shutdown(b.Context()) })
	call := poolCall("say ok")
	direct := strings.Replace(call, "/pool/p/v1/messages", "/v1/messages", 1)
	for _, c := range []struct {
		name, addr, req string
		dial            bool
	}{
		{"direct", up.Listener.Addr().String(), direct, false},
		{"pool", ln.Addr().String(), call, false},
		{"pool-dial-per-call", ln.Addr().String(), call, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			a := &agentConn{addr: c.addr, dial: c.dial}
			defer a.close()
			var ttft time.Duration
			cpu0 := testworld.CPUTime(b)
			for b.Loop() {
				ttft += a.call(b, c.req)
			}
			b.ReportMetric(float64(testworld.CPUTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(ttft.Microseconds())/float64(b.N), "ttft-µs")
		})
	}
}
