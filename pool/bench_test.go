package pool

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

// benchEvents is the number of text deltas per streamed answer.
const benchEvents = 20

// benchUpstream streams benchEvents deltas back to back; each carries its
// send time (UnixNano) so the client can measure per-event delay.
func benchUpstream() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		sseHead(w)
		messageStart(w, "x", nil)
		for i := 0; i < benchEvents; i++ {
			fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"t%d\"}}\n\n", time.Now().UnixNano())
			w.(http.Flusher).Flush()
		}
		messageEnd(w)
	}))
}

// benchCall streams one answer; it returns the time to the first delta and
// the summed delay of every delta (receive time − send time).
func benchCall(tr http.RoundTripper, url, body string) (ttfb, delay time.Duration, n int, err error) {
	return benchCallMarker(tr, url, body, `"text":"t`)
}

// benchCallMarker is benchCall for a client API whose deltas carry the text
// after marker (Chat: `"content":"t`).
func benchCallMarker(tr http.RoundTripper, url, body, marker string) (ttfb, delay time.Duration, n int, err error) {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Session-Id", "bench")
	start := time.Now()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			break
		}
		i := strings.Index(line, marker)
		if i < 0 {
			continue
		}
		now := time.Now()
		rest := line[i+len(marker):]
		sent, perr := strconv.ParseInt(rest[:strings.IndexByte(rest, '"')], 10, 64)
		if perr != nil {
			return 0, 0, 0, perr
		}
		if n == 0 {
			ttfb = now.Sub(start)
		}
		delay += now.Sub(time.Unix(0, sent))
		n++
	}
	if n != benchEvents {
		return 0, 0, n, fmt.Errorf("got %d deltas", n)
	}
	return ttfb, delay, n, nil
}

// BenchmarkStreamOverhead measures what the pool adds to a stream: time to
// the first visible delta (ttfb-µs) and the delay of each delta from the
// upstream's write to the client's read (event-µs), calling the mock channel
// directly and through the pool, at 1 and 64 concurrent streams. The pool's
// cost is the difference between the "pool" and "direct" lines (JSON parse
// of the request, model splice, commit-point parse of each preamble event,
// one extra loopback hop).
func BenchmarkStreamOverhead(b *testing.B) {
	up, ps := benchPoolServer(b)
	body := msgBody("m", true)
	for _, c := range []int{1, 64} {
		for _, target := range []struct{ name, url string }{
			{"direct", up.URL + "/v1/messages"}, {"pool", ps.URL + "/pool/p/v1/messages"},
		} {
			b.Run(fmt.Sprintf("%s/streams=%d", target.name, c), func(b *testing.B) {
				tr := &http.Transport{MaxIdleConnsPerHost: 256}
				defer tr.CloseIdleConnections()
				var ttfb, delay, events, calls atomic.Int64
				var failed atomic.Value
				one := func() {
					t, d, n, err := benchCall(tr, target.url, body)
					if err != nil {
						failed.Store(err)
						return
					}
					ttfb.Add(int64(t))
					delay.Add(int64(d))
					events.Add(int64(n))
					calls.Add(1)
				}
				b.ResetTimer()
				if c == 1 {
					for i := 0; i < b.N; i++ {
						one()
					}
				} else {
					b.SetParallelism((c + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							one()
						}
					})
				}
				b.StopTimer()
				if err, _ := failed.Load().(error); err != nil {
					b.Fatal(err)
				}
				if calls.Load() > 0 {
					b.ReportMetric(float64(ttfb.Load())/float64(calls.Load())/1e3, "ttfb-µs")
					b.ReportMetric(float64(delay.Load())/float64(events.Load())/1e3, "event-µs")
				}
			})
		}
	}
}

// benchPoolServer serves pool p with one Anthropic member x, the streaming
// benchUpstream up, on an httptest server ps; all of it ends with the
// benchmark.
func benchPoolServer(b *testing.B) (up, ps *httptest.Server) {
	up = benchUpstream()
	b.Cleanup(up.Close)
	cfg, err := config.ParseConfig([]byte("channels:\n  x: {api: anthropic, base_url: "+up.URL+", api_key: sk-bench}\npools:\n  p: {members: [x]}\n"), nil)
	if err != nil {
		b.Fatal(err)
	}
	upTr := &http.Transport{MaxIdleConnsPerHost: 256}
	b.Cleanup(upTr.CloseIdleConnections)
	ps = httptest.NewServer(New(cfg, Options{Transport: upTr, Logger: discardLogger()}))
	b.Cleanup(ps.Close)
	return up, ps
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// BenchmarkTranslatedStream measures what translation adds (SPEC POOL-21):
// the same Anthropic member streamed to an Anthropic client (passthrough)
// and to a Chat Completions client (every event decoded and re-encoded).
// ns/op is one whole call of benchEvents deltas; ttfb-µs and event-µs as in
// BenchmarkStreamOverhead. The translation cost is translated − passthrough.
func BenchmarkTranslatedStream(b *testing.B) {
	_, ps := benchPoolServer(b)
	chat := `{"model":"m","stream":true,"max_tokens":1024,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"say ok"}]}`
	for _, c := range []struct{ name, path, body, marker string }{
		{"passthrough", "/pool/p/v1/messages", msgBody("m", true), `"text":"t`},
		{"translated", "/pool/p/v1/chat/completions", chat, `"content":"t`},
	} {
		b.Run(c.name, func(b *testing.B) {
			tr := &http.Transport{MaxIdleConnsPerHost: 16}
			defer tr.CloseIdleConnections()
			var ttfb, delay time.Duration
			events := 0
			for b.Loop() {
				t, d, n, err := benchCallMarker(tr, ps.URL+c.path, c.body, c.marker)
				if err != nil {
					b.Fatal(err)
				}
				ttfb, delay, events = ttfb+t, delay+d, events+n
			}
			b.ReportMetric(float64(ttfb.Microseconds())/float64(b.N), "ttfb-µs")
			b.ReportMetric(float64(delay.Microseconds())/float64(events), "event-µs")
		})
	}
}
