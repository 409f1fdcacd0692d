package pool

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// BenchmarkChannelWiring measures, per streamed call, the time to the first
// visible delta (ttfb-µs) and the TCP connections opened to the channel
// (conns/call): direct to the mock channel, and through the pool wired the
// way internal/app/cli wires it (proxy Engine.PoolRoundTripper, SPEC POOL-17).
// The pool's added TTFB is the difference of the two lines; conns/call
// near 0 means keep-alive reuse (it was 1.0 before POOL-17).
func BenchmarkChannelWiring(b *testing.B) {
	var conns atomic.Int64
	up := benchUpstream()
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	defer up.Close()
	cfg, err := config.ParseConfig([]byte("channels:\n  x: {api: anthropic, base_url: "+up.URL+", api_key: sk-bench}\npools:\n  p: {members: [x]}\n"), nil)
	if err != nil {
		b.Fatal(err)
	}
	e, err := proxy.NewEngine(proxy.Config{Candidates: []candidate.Candidate{candidate.Direct}, LoopbackDirect: true})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	upTr := e.PoolRoundTripper()
	defer upTr.CloseIdleConnections()
	ps := httptest.NewServer(New(cfg, Options{Transport: upTr, Logger: discardLogger()}))
	defer ps.Close()
	body := msgBody("m", true)
	for _, target := range []struct{ name, url string }{
		{"direct", up.URL + "/v1/messages"}, {"pool-via-proxy-transport", ps.URL + "/pool/p/v1/messages"},
	} {
		b.Run(fmt.Sprintf("%s/streams=1", target.name), func(b *testing.B) {
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			var ttfb int64
			c0 := conns.Load()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t, _, _, err := benchCall(tr, target.url, body)
				if err != nil {
					b.Fatal(err)
				}
				ttfb += int64(t)
			}
			b.StopTimer()
			b.ReportMetric(float64(ttfb)/float64(b.N)/1e3, "ttfb-µs")
			b.ReportMetric(float64(conns.Load()-c0)/float64(b.N), "conns/call")
		})
	}
}
