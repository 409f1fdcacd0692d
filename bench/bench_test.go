package main

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/proxy"
)

// Micro-benchmarks of dual-proxy's hot paths through its public server
// (proxy.New + Serve on loopback), in-process so that
//
//	go test -run '^$' -bench . -benchmem -cpuprofile cpu.out .   (in bench/)
//
// profiles the proxy and the load together. The request-head parser and
// hop-by-hop filtering are unexported in package proxy; they are measured
// here by BenchmarkPlainManyHeaders (a request with 24 fields, 3 of them
// named by Connection). Ordering and host normalization have their own
// benchmarks in proxy/route.

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startProxy runs a direct-only dual-proxy server on 127.0.0.1:0 and an
// origin, both stopped by b.Cleanup.
func startProxy(tb testing.TB) (proxyAddr string, o *origin) {
	tb.Helper()
	o, err := newOrigin("127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(o.close) // runs after the proxy's shutdown (cleanups run last first)
	srv, err := proxy.New(proxy.Config{LoopbackDirect: true})
	if err != nil {
		tb.Fatal(err)
	}
	// Shutdown also closes the engine New made for srv.
	return testkit.Serve(tb, srv), o
}

// roundTrips sends n requests over one keep-alive connection of p.
func roundTrips(tb testing.TB, p path, req []byte, n int) {
	c, br, err := p.dial(time.Now().Add(opTimeout))
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	for i := 0; i < n; i++ {
		if _, err := c.Write(req); err != nil {
			tb.Fatal(err)
		}
		status, ok, err := readResponse(br)
		if err != nil || status != 200 || !ok {
			tb.Fatalf("request %d: status %d reusable %v err %v", i, status, ok, err)
		}
	}
}

// Each scenario below runs n operations after reset (b.ResetTimer in a
// benchmark); TestScenariosRun runs each with a small n.

// plainDirect is the baseline: the origin without a proxy.
func plainDirect(tb testing.TB, n int, reset func()) {
	_, o := startProxy(tb)
	p := path{origin: o.plainAddr()}
	reset()
	roundTrips(tb, p, p.reqLine("/", false), n)
}

// plainProxy is one keep-alive client sending absolute-form GETs through
// dual-proxy's direct path (SPEC HTTP-1): head parse, hop-by-hop filtering,
// per-host plan, net/http transport, response write.
func plainProxy(tb testing.TB, n int, reset func()) {
	addr, o := startProxy(tb)
	p := path{proxy: addr, origin: o.plainAddr()}
	reset()
	roundTrips(tb, p, p.reqLine("/", false), n)
}

// manyHeaders is a request head with 24 fields, three of them named by
// Connection (hop-by-hop per RFC 9110 §7.6.1), like an agent SDK sends.
func manyHeaders(origin string) []byte {
	var b strings.Builder
	b.WriteString("GET http://" + origin + "/v1/models?limit=20 HTTP/1.1\r\nHost: " + origin + "\r\n")
	b.WriteString("Connection: keep-alive, X-Hop-A, X-Hop-B, X-Hop-C\r\nX-Hop-A: 1\r\nX-Hop-B: 2\r\nX-Hop-C: 3\r\n")
	b.WriteString("Proxy-Connection: keep-alive\r\nUser-Agent: claude-cli/2.1.197 (external, sdk-cli)\r\nAccept: application/json\r\n")
	b.WriteString("Accept-Encoding: gzip, deflate, br\r\nAccept-Language: en-US,en;q=0.9\r\nanthropic-version: 2023-06-01\r\n")
	b.WriteString("anthropic-beta: claude-code-20250219,context-1m-2025-08-07,interleaved-thinking-2025-05-14\r\n")
	b.WriteString("X-Stainless-Lang: js\r\nX-Stainless-Package-Version: 0.94.0\r\nX-Stainless-OS: Linux\r\nX-Stainless-Arch: x64\r\n")
	b.WriteString("X-Stainless-Runtime: node\r\nX-Stainless-Runtime-Version: v26.3.0\r\nX-Stainless-Retry-Count: 0\r\n")
	b.WriteString("X-Claude-Code-Session-Id: 6f1c1a52-6a57-4c55-9a0e-1f2b3c4d5e6f\r\nTE: trailers\r\nx-app: cli\r\n\r\n")
	return []byte(b.String())
}

// plainManyHeaders exercises the raw head parser (framing checks over
// every field line) and hop-by-hop removal on a realistic head.
func plainManyHeaders(tb testing.TB, n int, reset func()) {
	addr, o := startProxy(tb)
	p := path{proxy: addr, origin: o.plainAddr()}
	reset()
	roundTrips(tb, p, manyHeaders(o.plainAddr()), n)
}

// tunnelReused is one CONNECT tunnel carrying n cleartext requests: the
// relay (SPEC CON-2) without TLS cost.
func tunnelReused(tb testing.TB, n int, reset func()) {
	addr, o := startProxy(tb)
	p := path{proxy: addr, origin: o.plainAddr(), tunnel: true}
	reset()
	roundTrips(tb, p, p.reqLine("/", false), n)
}

// tunnelNew opens a new CONNECT tunnel per request (no TLS, port not 443:
// no probe): plan, dial, 200, relay set-up and tear-down.
func tunnelNew(tb testing.TB, n int, reset func()) {
	addr, o := startProxy(tb)
	newTunnels(tb, n, reset, path{proxy: addr, origin: o.plainAddr(), tunnel: true})
}

// tunnelNewRelay is tunnelNew through the bench's minimal Go CONNECT relay
// (gateway.go, io.Copy): the same client and origin work, so the
// difference to BenchmarkTunnelNew is dual-proxy's own cost per tunnel.
func tunnelNewRelay(tb testing.TB, n int, reset func()) {
	_, o := startProxy(tb)
	g, err := newGoGateway("127.0.0.1:0", false)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(g.kill)
	newTunnels(tb, n, reset, path{proxy: g.addr, origin: o.plainAddr(), tunnel: true})
}

// newTunnels runs n requests over p, each on a new tunnel.
func newTunnels(tb testing.TB, n int, reset func(), p path) {
	req := p.reqLine("/", true)
	reset()
	for i := 0; i < n; i++ {
		c, br, err := p.dial(time.Now().Add(opTimeout))
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := c.Write(req); err != nil {
			tb.Fatal(err)
		}
		if status, _, err := readResponse(br); err != nil || status != 200 {
			tb.Fatalf("status %d err %v", status, err)
		}
		c.Close()
	}
}

// tunnelBulk reads n × 64 KiB through one tunnel.
func tunnelBulk(tb testing.TB, n int, reset func()) {
	addr, o := startProxy(tb)
	p := path{proxy: addr, origin: o.plainAddr(), tunnel: true}
	c, br, err := p.dial(time.Now().Add(opTimeout))
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	c.Write(p.reqLine("/bulk", false))
	if _, _, err := readHead(br); err != nil {
		tb.Fatal(err)
	}
	reset()
	if _, err := io.CopyN(io.Discard, br, int64(n)*int64(len(bulkChunk))); err != nil {
		tb.Fatal(err)
	}
}

// probeHandshakes runs n TLS handshakes like dual-proxy's TLS probe (SPEC
// CON-1: certificate not verified, connection closed after the handshake)
// against the origin, with the given key-exchange groups (nil: Go's
// default, which puts the hybrid X25519MLKEM768 first).
func probeHandshakes(tb testing.TB, n int, reset func(), curves []tls.CurveID) {
	o, err := newOrigin("127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer o.close()
	cfg := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12, CurvePreferences: curves}
	reset()
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", o.tlsAddr())
		if err != nil {
			tb.Fatal(err)
		}
		tc := tls.Client(c, cfg)
		tc.SetDeadline(time.Now().Add(opTimeout))
		if err := tc.Handshake(); err != nil {
			tb.Fatal(err)
		}
		c.Close()
	}
}

// BenchmarkProbeHandshakeDefault and BenchmarkProbeHandshakeX25519 show
// what the TLS probe costs (client and origin CPU, both in this process)
// and what choosing plain X25519 for the probe would save: the probe only
// checks that a TLS server answers, so post-quantum key exchange buys it
// nothing.
func BenchmarkProbeHandshakeDefault(b *testing.B) { probeHandshakes(b, b.N, b.ResetTimer, nil) }
func BenchmarkProbeHandshakeX25519(b *testing.B) {
	probeHandshakes(b, b.N, b.ResetTimer, []tls.CurveID{tls.X25519})
}

func BenchmarkPlainDirect(b *testing.B)      { plainDirect(b, b.N, cpuReset(b)) }
func BenchmarkPlainProxy(b *testing.B)       { plainProxy(b, b.N, cpuReset(b)) }
func BenchmarkPlainManyHeaders(b *testing.B) { plainManyHeaders(b, b.N, cpuReset(b)) }
func BenchmarkTunnelReused(b *testing.B)     { tunnelReused(b, b.N, cpuReset(b)) }
func BenchmarkTunnelNew(b *testing.B)        { tunnelNew(b, b.N, cpuReset(b)) }
func BenchmarkTunnelNewRelay(b *testing.B)   { tunnelNewRelay(b, b.N, cpuReset(b)) }
func BenchmarkTunnelBulk(b *testing.B) {
	b.SetBytes(int64(len(bulkChunk)))
	tunnelBulk(b, b.N, cpuReset(b))
}

// cpuReset is b.ResetTimer that also starts a "cpu-ns/op" metric: this
// process's CPU time (proxy, client and origin) per operation, which a
// busy shared machine disturbs far less than ns/op (wall time).
func cpuReset(b *testing.B) func() {
	return func() {
		b.ResetTimer()
		start := selfCPU()
		// Registered after the set-up's cleanups, so it runs before
		// them: the server's shutdown is not counted.
		b.Cleanup(func() {
			if used := selfCPU() - start; start > 0 && b.N > 0 {
				b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
			}
		})
	}
}

// BenchmarkPlainProxyParallel is plainProxy from GOMAXPROCS clients (-cpu
// to change).
func BenchmarkPlainProxyParallel(b *testing.B) {
	addr, o := startProxy(b)
	p := path{proxy: addr, origin: o.plainAddr()}
	req := p.reqLine("/", false)
	cpuReset(b)()
	b.RunParallel(func(pb *testing.PB) {
		c, br, err := p.dial(time.Now().Add(opTimeout))
		if err != nil {
			b.Error(err)
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Minute))
		for pb.Next() {
			if _, err := c.Write(req); err != nil {
				b.Error(err)
				return
			}
			if _, _, err := readResponse(br); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkTunnelNewParallel is tunnelNew from 8 clients at once (the
// scenario-2 load: each connection's goroutine, stack and tracking work
// runs next to others').
func BenchmarkTunnelNewParallel(b *testing.B) {
	addr, o := startProxy(b)
	p := path{proxy: addr, origin: o.plainAddr(), tunnel: true}
	req := p.reqLine("/", true)
	b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
	cpuReset(b)()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c, br, err := p.dial(time.Now().Add(opTimeout))
			if err != nil {
				b.Error(err)
				return
			}
			if _, err := c.Write(req); err != nil {
				b.Error(err)
			} else if status, _, err := readResponse(br); err != nil || status != 200 {
				b.Errorf("status %d err %v", status, err)
			}
			c.Close()
		}
	})
}

// TestScenariosRun runs every benchmark body with a few operations, so the
// harness (origin, client, proxy set-up and teardown) is checked by
// `go test ./...` in bench/ and leaks are caught by goleak.
func TestScenariosRun(t *testing.T) {
	for name, f := range map[string]func(testing.TB, int, func()){
		"PlainDirect": plainDirect, "PlainProxy": plainProxy, "PlainManyHeaders": plainManyHeaders,
		"TunnelReused": tunnelReused, "TunnelNew": tunnelNew, "TunnelNewRelay": tunnelNewRelay, "TunnelBulk": tunnelBulk,
		"ProbeHandshake": func(tb testing.TB, n int, reset func()) { probeHandshakes(tb, n, reset, nil) },
	} {
		t.Run(name, func(t *testing.T) { f(t, 20, func() {}) })
	}
}

// TestClientParsesFraming checks the load generator's response reader on
// the framings the gateways use.
func TestClientParsesFraming(t *testing.T) {
	for _, tc := range []struct {
		name, resp   string
		status       int
		reusable     bool
		restExpected string
	}{
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\nNEXT", 200, true, "NEXT"},
		{"chunked-with-trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nok\n\r\n0\r\nT: 1\r\n\r\nNEXT", 200, true, "NEXT"},
		{"connection-close", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", 200, false, ""},
		{"http10-default-close", "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", 200, false, ""},
		{"http10-keep-alive", "HTTP/1.0 200 OK\r\nContent-Length: 0\r\nProxy-Connection: keep-alive\r\n\r\nNEXT", 200, true, "NEXT"},
		{"close-delimited", "HTTP/1.1 200 OK\r\n\r\nbody until close", 200, false, ""},
		{"no-body-304", "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\nNEXT", 304, true, "NEXT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReader(strings.NewReader(tc.resp))
			status, reusable, err := readResponse(br)
			if err != nil || status != tc.status || reusable != tc.reusable {
				t.Fatalf("got %d %v %v, want %d %v", status, reusable, err, tc.status, tc.reusable)
			}
			rest, _ := io.ReadAll(br)
			if string(rest) != tc.restExpected {
				t.Fatalf("left %q, want %q", rest, tc.restExpected)
			}
		})
	}
	t.Run("malformed", func(t *testing.T) {
		for _, s := range []string{"", "SSH-2.0-x\r\n", "HTTP/1.1 2x0 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"} {
			if _, _, err := readResponse(bufio.NewReader(strings.NewReader(s))); err == nil {
				t.Errorf("%q: no error", s)
			}
		}
	})
}

func TestStats(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	sorted := append([]time.Duration(nil), ds...)
	for i := range sorted { // insertion sort keeps the test free of the code under test
		for j := i; j > 0 && sorted[j] < sorted[j-1]; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	if got := percentile(sorted, 0.5); got != 5 {
		t.Errorf("p50 = %v, want 5", got)
	}
	if got := percentile(sorted, 0.99); got != 10 {
		t.Errorf("p99 = %v, want 10", got)
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("empty p50 = %v", got)
	}
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median odd = %v", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median even = %v", got)
	}
	if got := spreadPct([]float64{90, 100, 110}); got != 20 {
		t.Errorf("spread = %v, want 20", got)
	}
	if got := commas(1234567); got != "1,234,567" {
		t.Errorf("commas = %q", got)
	}
}

func TestDocumentKeepsHandWrittenNotes(t *testing.T) {
	prev := "# old\n| table |\n" + keepMarker + "\n## Analysis\nkept text\n"
	doc := document(prev, time.Unix(0, 0), []string{"fact"}, []row{{sec: "1", path: "a|b", verdict: "PASS"}}, []string{"note"}, nil, time.Second)
	for _, want := range []string{"## Analysis\nkept text\n", "- fact\n", `a\|b`, "| PASS |", "- note\n"} {
		if !strings.Contains(doc, want) {
			t.Errorf("document lacks %q:\n%s", want, doc)
		}
	}
	if strings.Contains(doc, "# old") || strings.Count(doc, keepMarker) != 1 {
		t.Errorf("old generated part kept or marker duplicated:\n%s", doc)
	}
	// A marker line that names another command still starts the notes.
	other := "# old\n" + keepMarkerPrefix + "`make bench` -->\n## Analysis\nkept text\n"
	doc = document(other, time.Unix(0, 0), nil, nil, nil, nil, time.Second)
	if !strings.HasSuffix(doc, keepMarker+"\n## Analysis\nkept text\n") || strings.Contains(doc, "make bench") {
		t.Errorf("notes under a marker naming another command not kept once:\n%s", doc)
	}
}

func TestDocumentGlanceCountsTargets(t *testing.T) {
	rows := []row{
		{sec: "1", path: "direct", result: "9 req/s"},
		{sec: "1", path: "dual-proxy", conc: "32", result: "5 req/s", vsSquid: "2.6×", target: "≥ 2.5× squid", verdict: "PASS"},
		{sec: "5", path: "run", result: "12 ms", target: "≤ 10 ms", verdict: "MISS"},
		{sec: "2", path: "relay", result: "7 req/s", target: "≥ relay; ≥ 0.75× direct", verdict: "PASS; MISS"},
	}
	doc := document("", time.Unix(0, 0), nil, rows, nil, nil, time.Second)
	for _, want := range []string{"Targets in this run: 2 PASS, 2 MISS", "| 1 | dual-proxy | 32 | ≥ 2.5× squid | 5 req/s; 2.6× | PASS |", "| 5 | run | – | ≤ 10 ms | 12 ms | MISS |"} {
		if !strings.Contains(doc, want) {
			t.Errorf("document lacks %q:\n%s", want, doc)
		}
	}
	if g := glance(rows[:1]); g != "" {
		t.Errorf("a run without targets got a glance list %q", g)
	}
}

// TestLoadAgainstOrigin runs the load generator for a short round against
// the origin directly, keep-alive and new connection per request. The rounds
// are 500 ms: at 50 ms a round of new-connection requests under -race on a
// loaded 2-core machine once counted no operation (load 20).
func TestLoadAgainstOrigin(t *testing.T) {
	o, err := newOrigin("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	for _, newConn := range []bool{false, true} {
		s, err := load{p: path{origin: o.plainAddr()}, conc: 2, newConn: newConn, target: "/"}.run(phases{warm: 50 * time.Millisecond, round: 500 * time.Millisecond, rounds: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(s) != 2 || s[0].ops == 0 || s[1].ops == 0 || s[0].errs != 0 {
			t.Fatalf("newConn=%v: samples %+v", newConn, s)
		}
	}
}

// TestChartOfOneLoad: a run that measured one load (-pool-streams 1, or
// any one value) draws each curve as one point on its log axis instead of
// panicking on a log scale that reaches 0.
func TestChartOfOneLoad(t *testing.T) {
	for _, c := range []float64{1, 16} {
		w := &world{}
		w.point("pool-ttft.svg", "TTFT", "concurrent streams", "ms", true, "direct", c, 3)
		w.point("pool-ttft.svg", "", "", "", true, "dual-proxy pool", c, 3.2)
		w.point("pool-cpu.svg", "CPU", "concurrent streams", "µs/event", true, "dual-proxy pool", c, 0)
		dir := t.TempDir()
		if err := w.writeCharts(dir); err != nil {
			t.Fatalf("%v streams: %v", c, err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "pool-ttft.svg"))
		if err != nil || !strings.Contains(string(b), "dual-proxy pool") {
			t.Fatalf("%v streams: pool-ttft.svg %v, want the series in its legend", c, err)
		}
	}
}

// TestChartsWriteSVG: the curves of a run become SVG files with every
// series in the legend, and the document links them.
func TestChartsWriteSVG(t *testing.T) {
	w := &world{}
	for _, c := range []float64{1, 16, 512} {
		w.point("plain-rps.svg", "Plain", "clients", "req/s", true, "dual-proxy", c, 1000*c)
		w.point("plain-rps.svg", "", "", "", true, "squid", c, 500*c)
	}
	w.point("idle-fds.svg", "fds", "tunnels", "fds", false, "dual-proxy", 0, 10)
	w.point("idle-fds.svg", "", "", "", false, "dual-proxy", 9000, 18010)
	dir := t.TempDir()
	if err := w.writeCharts(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "plain-rps.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "dual-proxy", "squid"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("plain-rps.svg lacks %q", want)
		}
	}
	if len(w.charts) != 2 || len(w.charts[0].series[1].xs) != 3 {
		t.Fatalf("charts %+v", w.charts)
	}
	doc := document("", time.Unix(0, 0), nil, nil, nil, w.charts, time.Second)
	if !strings.Contains(doc, "](benchmarks/plain-rps.svg)") {
		t.Fatal("document does not link the chart")
	}
}
