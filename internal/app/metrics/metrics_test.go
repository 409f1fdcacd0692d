package metrics

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/route"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// world is a running proxy (candidates as given) with /metrics mounted.
type world struct {
	addr string
	m    *Metrics
	mux  *proxy.Mux
	srv  *proxy.Server
}

func newWorld(t *testing.T, cands []candidate.Candidate) *world {
	t.Helper()
	mux := proxy.NewMux()
	srv, err := proxy.New(proxy.Config{Candidates: cands, Cooldown: time.Minute, Handler: mux})
	if err != nil {
		t.Fatal(err)
	}
	mux.Attach(srv)
	m := New()
	m.AttachEngine(srv.Engine())
	mux.Handle("/metrics", statusdoc.LocalOnly(m.Handler()))
	return &world{addr: testkit.Serve(t, srv), m: m, mux: mux, srv: srv}
}

// scrape GETs /metrics and parses it with the Prometheus text parser.
func (w *world) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	tr := &http.Transport{Proxy: nil}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("http://" + w.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("OPS-5: /metrics does not parse: %v", err)
	}
	return fams
}

// value is the value of the series of family name whose labels include
// want (label=value pairs); 0 when absent.
func value(fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	var sum float64
next:
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(want); i += 2 {
			if labels[want[i]] != want[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// series counts every sample line of the families (cardinality).
func series(fams map[string]*dto.MetricFamily) int {
	n := 0
	for _, f := range fams {
		n += len(f.Metric)
	}
	return n
}

// connect sends CONNECT target through the proxy and returns the status
// code and, on 200, the open connection.
func connect(t *testing.T, proxyAddr, target string) (int, net.Conn) {
	t.Helper()
	c, err := net.DialTimeout("tcp", proxyAddr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(15 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	if resp.StatusCode != 200 {
		c.Close()
		return resp.StatusCode, nil
	}
	return 200, c
}

func TestProxyMetrics(t *testing.T) {
	origin := testworld.NewOrigin(t)
	deadGW, err := route.ParseGateway("http://"+testworld.RefusedAddr(t), "gateway")
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, []candidate.Candidate{deadGW, candidate.Direct})
	dead := deadGW.String()

	t.Run("OPS-5/failover-moves-failures-and-failovers", func(t *testing.T) {
		st, c := connect(t, w.addr, origin.Addr)
		if st != 200 {
			t.Fatalf("CONNECT: %d", st)
		}
		// A request through the tunnel: bytes are counted when it ends.
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", origin.Addr)
		open := w.scrape(t)
		if v := value(open, "dual_proxy_open_tunnels"); v != 1 {
			t.Fatalf("open tunnels %v, want 1", v)
		}
		io.Copy(io.Discard, c)
		c.Close()
		f := w.scrape(t)
		if v := value(f, "dual_proxy_failures_total", "candidate", dead, "phase", "gateway-connect"); v != 1 {
			t.Fatalf("failures{%s,gateway-connect} = %v, want 1", dead, v)
		}
		if v := value(f, "dual_proxy_failovers_total", "kind", "connect"); v != 1 {
			t.Fatalf("failovers = %v", v)
		}
		if v := value(f, "dual_proxy_requests_total", "kind", "connect", "candidate", "direct"); v != 1 {
			t.Fatalf("requests{direct} = %v", v)
		}
		if v := value(f, "dual_proxy_path_open_seconds", "candidate", "direct"); v != 1 {
			t.Fatalf("path-open histogram count %v", v)
		}
		if v := value(f, "dual_proxy_candidate_cooling", "candidate", dead); v != 1 {
			t.Fatalf("cooling{%s} = %v", dead, v)
		}
		testkit.WaitFor(t, 5*time.Second, "tunnel bytes counted", func() bool {
			f := w.scrape(t)
			return value(f, "dual_proxy_tunnel_bytes_total", "candidate", "direct", "direction", "down") > 0 &&
				value(f, "dual_proxy_tunnel_bytes_total", "candidate", "direct", "direction", "up") > 0 &&
				value(f, "dual_proxy_open_tunnels") == 0
		})
	})
	t.Run("OPS-5/success-moves-requests-only", func(t *testing.T) {
		before := w.scrape(t)
		st, c := connect(t, w.addr, origin.Addr)
		if st != 200 {
			t.Fatalf("CONNECT: %d", st)
		}
		c.Close()
		after := w.scrape(t)
		if d := value(after, "dual_proxy_requests_total", "candidate", "direct") - value(before, "dual_proxy_requests_total", "candidate", "direct"); d != 1 {
			t.Fatalf("requests{direct} moved by %v", d)
		}
		if d := value(after, "dual_proxy_failovers_total") - value(before, "dual_proxy_failovers_total"); d != 0 {
			t.Fatalf("a first-try success counted as failover (%v)", d)
		}
	})
	t.Run("OPS-5/all-failed-counts-none", func(t *testing.T) {
		if st, _ := connect(t, w.addr, testworld.RefusedAddr(t)); st == 200 {
			t.Fatal("CONNECT to a refused port succeeded")
		}
		f := w.scrape(t)
		if v := value(f, "dual_proxy_requests_total", "candidate", "none"); v != 1 {
			t.Fatalf("requests{none} = %v", v)
		}
		if v := value(f, "dual_proxy_failures_total", "candidate", "direct", "phase", "origin-connect"); v != 1 {
			t.Fatalf("failures{direct,origin-connect} = %v", v)
		}
		if v := value(f, "dual_proxy_candidate_host_cooldowns", "candidate", "direct"); v != 1 {
			t.Fatalf("host cooldowns{direct} = %v", v)
		}
	})
	t.Run("OPS-5/plain-http-response-bytes", func(t *testing.T) {
		before := value(w.scrape(t), "dual_proxy_http_response_bytes_total")
		c, err := net.Dial("tcp", w.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", origin.Addr, origin.Addr)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET: %d", resp.StatusCode)
		}
		// The proxy counts after its last write: the client may see the
		// body first.
		var d float64
		testkit.WaitFor(t, 5*time.Second, "response bytes counted", func() bool {
			d = value(w.scrape(t), "dual_proxy_http_response_bytes_total") - before
			return d >= float64(len(b))
		})
		if d != float64(len(b)) {
			t.Fatalf("response bytes moved by %v, body %d bytes", d, len(b))
		}
	})
	t.Run("HTTP-5d/not-http-clients-counted-by-first-byte", func(t *testing.T) {
		before := w.scrape(t)
		for _, first := range [][]byte{{0x16, 0x03, 0x01}, {0x05, 0x01, 0x00}, {0x00}} {
			c, err := net.Dial("tcp", w.addr)
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			c.Write(first)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			c.Close()
			if err != nil || resp.StatusCode != 400 {
				t.Fatalf("%q: %v %v", first, resp, err)
			}
		}
		after := w.scrape(t)
		for _, kind := range []string{"tls", "socks", "other"} {
			d := value(after, "dual_proxy_not_http_refused_total", "first_byte", kind) - value(before, "dual_proxy_not_http_refused_total", "first_byte", kind)
			if d != 1 {
				t.Errorf("not_http_refused{%s} moved by %v, want 1", kind, d)
			}
		}
	})
	t.Run("OPS-5/host-guard-as-status", func(t *testing.T) {
		c, err := net.Dial("tcp", w.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
			t.Fatalf("foreign Host: %v %v", resp, err)
		}
	})
}

// TestRuntimeSeries: the Go runtime and process series, registered on the
// first scrape rather than at start, are in the first and every
// later scrape, once each.
func TestRuntimeSeries(t *testing.T) {
	t.Run("OPS-5/runtime-and-process-series-on-every-scrape", func(t *testing.T) {
		w := newWorld(t, []candidate.Candidate{candidate.Direct})
		for i := range 3 {
			fams := w.scrape(t)
			for _, name := range []string{"go_goroutines", "go_gc_duration_seconds", "go_memstats_heap_alloc_bytes", "process_start_time_seconds"} {
				if f := fams[name]; f == nil || len(f.GetMetric()) != 1 {
					t.Fatalf("scrape %d: %s missing or repeated: %v", i+1, name, f)
				}
			}
		}
	})
}

// TestCardinalityBounded: 1,000 destination hosts add no series.
func TestCardinalityBounded(t *testing.T) {
	t.Run("OPS-5/series-bounded-under-1000-hosts", func(t *testing.T) {
		w := newWorld(t, []candidate.Candidate{candidate.Direct})
		refused := testworld.RefusedAddr(t)
		_, port, _ := net.SplitHostPort(refused)
		hosts := func(from, to int) {
			for i := from; i < to; i++ {
				target := net.JoinHostPort("127.0."+strconv.Itoa(i/250)+"."+strconv.Itoa(i%250+1), port)
				if st, c := connect(t, w.addr, target); st == 200 {
					c.Close()
				}
			}
		}
		hosts(0, 10)
		small := series(w.scrape(t))
		hosts(10, 1000)
		fams := w.scrape(t)
		if big := series(fams); big != small {
			t.Fatalf("series grew from %d (10 hosts) to %d (1000 hosts)", small, big)
		}
		if v := value(fams, "dual_proxy_requests_total", "candidate", "none"); v != 1000 {
			t.Fatalf("requests{none} = %v, want 1000", v)
		}
		for name, f := range fams {
			for _, m := range f.Metric {
				for _, l := range m.Label {
					if strings.HasPrefix(l.GetValue(), "127.0.") && l.GetName() != "candidate" {
						t.Fatalf("%s has a destination as label %s=%s", name, l.GetName(), l.GetValue())
					}
				}
			}
		}
	})
}

// TestPoolMetrics: a call that fails over from an overloaded member to a
// working one moves calls, failovers, TTFT, tokens, bound sessions and the
// member's cooldown.
func TestPoolMetrics(t *testing.T) {
	bad := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(529)
		io.WriteString(rw, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	}))
	defer bad.Close()
	good := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"m","content":[],"usage":{"input_tokens":7,"cache_read_input_tokens":5}}}`,
			`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}`,
			`event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`,
			`event: message_stop` + "\n" + `data: {"type":"message_stop"}`,
		} {
			fmt.Fprint(rw, ev+"\n\n")
			rw.(http.Flusher).Flush()
		}
	}))
	defer good.Close()
	cfg, err := config.ParseConfig([]byte(fmt.Sprintf("channels:\n  bad: {api: anthropic, base_url: %q, api_key: sk-a}\n  good: {api: anthropic, base_url: %q, api_key: sk-b}\npools:\n  p: {strategy: sticky, members: [bad, good]}\n", bad.URL, good.URL)), nil)
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, []candidate.Candidate{candidate.Direct})
	p := pool.New(cfg, pool.Options{Transport: w.srv.Engine().RoundTripper(), Observer: w.m.PoolObserver()})
	w.m.AttachPool(func() *pool.Pool { return p })
	w.mux.Handle("/pool/", p)

	t.Run("OPS-5/pool-call-with-failover", func(t *testing.T) {
		tr := &http.Transport{Proxy: nil}
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequest(http.MethodPost, "http://"+w.addr+"/pool/p/v1/messages",
			strings.NewReader(`{"model":"m","stream":true,"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Session-Id", "s1")
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Pool-Member") != "good" {
			t.Fatalf("%s member %q", resp.Status, resp.Header.Get("X-Pool-Member"))
		}
		f := w.scrape(t)
		for _, c := range []struct {
			name   string
			labels []string
			want   float64
		}{
			{"dual_proxy_pool_calls_total", []string{"pool", "p", "member", "good", "class", "ok"}, 1},
			{"dual_proxy_pool_failovers_total", []string{"pool", "p"}, 1},
			{"dual_proxy_pool_ttft_seconds", []string{"pool", "p", "member", "good"}, 1},
			{"dual_proxy_pool_tokens_total", []string{"pool", "p", "member", "good", "kind", "input"}, 7},
			{"dual_proxy_pool_tokens_total", []string{"pool", "p", "member", "good", "kind", "output"}, 3},
			{"dual_proxy_pool_tokens_total", []string{"pool", "p", "member", "good", "kind", "cache_read"}, 5},
			{"dual_proxy_pool_member_cooling", []string{"pool", "p", "member", "bad"}, 1},
			{"dual_proxy_pool_member_cooling", []string{"pool", "p", "member", "good"}, 0},
			{"dual_proxy_pool_bound_sessions", []string{"pool", "p", "member", "good"}, 1},
		} {
			if v := value(f, c.name, c.labels...); v != c.want {
				t.Errorf("%s%v = %v, want %v", c.name, c.labels, v, c.want)
			}
		}
		// OPS-5/member-cooldown-since-and-retry-in: the page's "since T,
		// retry in M s" as numbers, only for the cooling member.
		if v := value(f, "dual_proxy_pool_member_cooldown_remaining_seconds", "pool", "p", "member", "bad"); v <= 0 || v > 3600 {
			t.Errorf("bad's cooldown remaining = %v s", v)
		}
		if v := value(f, "dual_proxy_pool_member_cooldown_start_time_seconds", "pool", "p", "member", "bad"); time.Since(time.UnixMilli(int64(v*1000))).Abs() > time.Minute {
			t.Errorf("bad's cooldown start = %v", v)
		}
		if v := value(f, "dual_proxy_pool_member_cooldown_remaining_seconds", "pool", "p", "member", "good"); v != 0 {
			t.Errorf("ready member has a cooldown remaining: %v", v)
		}
	})
}

// TestGrafanaDashboard: contrib/grafana-dashboard.json is valid JSON and
// every series it queries is one /metrics serves.
func TestGrafanaDashboard(t *testing.T) {
	t.Run("OPS-5/dashboard-queries-existing-series", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "contrib", "grafana-dashboard.json"))
		if err != nil {
			t.Fatal(err)
		}
		var dash struct {
			Panels []struct {
				Title   string
				Targets []struct{ Expr string }
			}
		}
		if err := json.Unmarshal(data, &dash); err != nil || len(dash.Panels) == 0 {
			t.Fatalf("dashboard: %v (%d panels)", err, len(dash.Panels))
		}
		m := New()
		known := map[string]bool{}
		fams, err := m.registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fams {
			known[f.GetName()] = true
		}
		// Vectors without samples yet and state series are not gathered:
		// list them from the descriptors.
		descs := make(chan *prometheus.Desc, 64)
		go func() { m.registry().Describe(descs); close(descs) }()
		for d := range descs {
			if s := regexp.MustCompile(`fqName: "([a-z_]+)"`).FindStringSubmatch(d.String()); s != nil {
				known[s[1]] = true
			}
		}
		for _, p := range dash.Panels {
			for _, tg := range p.Targets {
				for _, name := range regexp.MustCompile(`dual_proxy_[a-z_]+`).FindAllString(tg.Expr, -1) {
					base := strings.TrimSuffix(name, "_bucket")
					if !known[base] {
						t.Errorf("panel %q queries %s, which /metrics does not serve", p.Title, name)
					}
				}
			}
		}
	})
}

// BenchmarkNew is what every dual-proxy and launcher start pays for the
// registry before the first scrape.
func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = New().Handler()
	}
}
