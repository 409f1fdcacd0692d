package engine_test

import (
	"bufio"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// TestSelectionCache covers the per-host cache in the engine (SPEC ORD-4):
// a hit skips the TLS probe; a failing cached path is dropped and the next
// candidate serves, probed again.
func TestSelectionCache(t *testing.T) {
	t.Run("ORD-4/hit-skips-tls-probe-and-failing-entry-is-dropped", func(t *testing.T) {
		origin := testworld.NewTLSOrigin(t)
		gw1 := testworld.NewGateway(t, testworld.WithRoute("a.test:443", origin.Addr))
		gw2 := testworld.NewGateway(t, testworld.WithRoute("a.test:443", origin.Addr))
		c1, c2 := proxytest.Gateway(t, gw1.URL), proxytest.Gateway(t, gw2.URL)
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{c1, c2}, TLSProbe: true, Cooldown: time.Minute})

		status, c, _ := proxytest.Connect(t, addr, "a.test:443", "")
		if status != 200 {
			t.Fatalf("first CONNECT: %d", status)
		}
		if body := selTLSGet(t, c, origin.CertPool); body != origin.Greeting() {
			t.Fatalf("body %q", body)
		}
		if n := e.TLSProbes(); n != 1 {
			t.Fatalf("TLS probes after a cache miss = %d, want 1", n)
		}
		if k, ok := e.Cache().Get("a.test"); !ok || k != c1.Key() {
			t.Fatalf("cache entry %q %v, want %q", k, ok, c1.Key())
		}

		status, c, _ = proxytest.Connect(t, addr, "a.test:443", "")
		if status != 200 {
			t.Fatalf("second CONNECT: %d", status)
		}
		if body := selTLSGet(t, c, origin.CertPool); body != origin.Greeting() {
			t.Fatalf("body %q", body)
		}
		if n := e.TLSProbes(); n != 1 {
			t.Fatalf("TLS probes after a cache hit = %d, want still 1", n)
		}
		if n := gw1.Connects(); n != 3 { // probe + tunnel, tunnel
			t.Fatalf("gw1 saw %d CONNECTs, want 3", n)
		}

		gw1.SetMode(testworld.ModeStatus(502))
		status, c, _ = proxytest.Connect(t, addr, "a.test:443", "")
		if status != 200 {
			t.Fatalf("CONNECT after the cached gateway broke: %d", status)
		}
		if body := selTLSGet(t, c, origin.CertPool); body != origin.Greeting() {
			t.Fatalf("body %q", body)
		}
		d := proxytest.LastDecision(t, e)
		if d.Candidate != c2.String() || !slices.Equal(selPhases(d), []string{c1.String() + " connect-response"}) {
			t.Fatalf("decision %+v: want served by %s after %s failed in connect-response", d, c2, c1)
		}
		if n := e.TLSProbes(); n != 2 {
			t.Fatalf("TLS probes = %d, want 2: the next candidate is a cache miss and is probed (CON-1)", n)
		}
		if k, _ := e.Cache().Get("a.test"); k != c2.Key() {
			t.Fatalf("cache entry %q, want the candidate that served (%q)", k, c2.Key())
		}
	})

	t.Run("ORD-4/failed-cached-candidate-entry-removed", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw1 := testworld.NewGateway(t)
		c1 := proxytest.Gateway(t, gw1.URL)
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{c1}, Cooldown: time.Minute})
		if status, _, _ := proxytest.Connect(t, addr, origin.Addr, ""); status != 200 {
			t.Fatalf("CONNECT: %d", status)
		}
		if _, ok := e.Cache().Get("127.0.0.1"); !ok {
			t.Fatal("no cache entry after a success")
		}
		gw1.SetMode(testworld.ModeStatus(403))
		if status, _, _ := proxytest.Connect(t, addr, origin.Addr, ""); status != 502 {
			t.Fatalf("CONNECT through a refusing only candidate: %d, want 502", status)
		}
		if k, ok := e.Cache().Get("127.0.0.1"); ok {
			t.Fatalf("cache entry %q survived the failure of its candidate", k)
		}
	})
}

// TestSelectionCooldown covers the two cooldown tiers end to end (SPEC
// CD-1, CD-2, ORD-2).
func TestSelectionCooldown(t *testing.T) {
	t.Run("CD-1/refused-gateway-is-last-for-every-host-for-cooldown", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		routes := []testworld.GatewayOption{
			testworld.WithRoute("h1.test:80", origin.Addr),
			testworld.WithRoute("h2.test:80", origin.Addr),
			testworld.WithRoute("h3.test:80", origin.Addr),
		}
		gw2 := testworld.NewGateway(t, routes...)
		dead := proxytest.Gateway(t, "http://"+testworld.RefusedAddr(t))
		c2 := proxytest.Gateway(t, gw2.URL)
		clk := testkit.NewClock(testkit.Epoch)
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{dead, c2}, Cooldown: 10 * time.Second, Now: clk.Now})

		resp, _, err := proxytest.Get(t, addr, "http://h1.test/", "")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("h1: %v %v", resp.Status, err)
		}
		d := proxytest.LastDecision(t, e)
		if !slices.Equal(selPhases(d), []string{dead.String() + " gateway-connect"}) || d.Candidate != c2.String() {
			t.Fatalf("h1 decision %+v", d)
		}
		// Another host: the refusing gateway is now last, so it is not tried.
		if got := planKeys(e, "h2.test", 80); !slices.Equal(got, []string{c2.Key(), dead.Key()}) {
			t.Fatalf("h2 plan %v", got)
		}
		resp, _, err = proxytest.Get(t, addr, "http://h2.test/", "")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("h2: %v %v", resp.Status, err)
		}
		if d := proxytest.LastDecision(t, e); len(d.Failed) != 0 || d.Candidate != c2.String() {
			t.Fatalf("h2 decision %+v: the cooling gateway was tried first", d)
		}
		// A CONNECT to yet another host sees the same gateway-wide cooldown.
		if got := planKeys(e, "h9.test", 443); got[0] != c2.Key() {
			t.Fatalf("h9 plan %v", got)
		}
		clk.Advance(10*time.Second + time.Millisecond)
		if got := planKeys(e, "h3.test", 80); !slices.Equal(got, []string{dead.Key(), c2.Key()}) {
			t.Fatalf("h3 plan after the cooldown %v", got)
		}
		resp, _, err = proxytest.Get(t, addr, "http://h3.test/", "")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("h3: %v %v", resp.Status, err)
		}
		if d := proxytest.LastDecision(t, e); len(d.Failed) != 1 || d.Failed[0].Candidate != dead.String() {
			t.Fatalf("h3 decision %+v: after the cooldown the gateway is first again", d)
		}
	})

	t.Run("CD-1/tls-probe-failure-for-host-a-does-not-demote-for-host-b", func(t *testing.T) {
		tlsOrigin := testworld.NewTLSOrigin(t)
		plain := testworld.NewOrigin(t) // not a TLS server: the probe fails
		gw1 := testworld.NewGateway(t,
			testworld.WithRoute("a.test:443", plain.Addr),
			testworld.WithRoute("b.test:443", tlsOrigin.Addr))
		gw2 := testworld.NewGateway(t, testworld.WithRoute("a.test:443", tlsOrigin.Addr))
		c1, c2 := proxytest.Gateway(t, gw1.URL), proxytest.Gateway(t, gw2.URL)
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{c1, c2}, TLSProbe: true, Cooldown: time.Minute})

		status, c, _ := proxytest.Connect(t, addr, "a.test:443", "")
		if status != 200 {
			t.Fatalf("a.test: %d", status)
		}
		if body := selTLSGet(t, c, tlsOrigin.CertPool); body != tlsOrigin.Greeting() {
			t.Fatalf("a.test body %q", body)
		}
		d := proxytest.LastDecision(t, e)
		if d.Candidate != c2.String() || !slices.Equal(selPhases(d), []string{c1.String() + " tls-probe"}) {
			t.Fatalf("a.test decision %+v", d)
		}
		if !e.Cooldowns().Cooling(c1.Key(), "a.test:443") || e.Cooldowns().Cooling(c1.Key(), "b.test:443") {
			t.Fatal("want gw1 cooling for a.test only")
		}
		status, c, _ = proxytest.Connect(t, addr, "b.test:443", "")
		if status != 200 {
			t.Fatalf("b.test: %d", status)
		}
		if body := selTLSGet(t, c, tlsOrigin.CertPool); body != tlsOrigin.Greeting() {
			t.Fatalf("b.test body %q", body)
		}
		if d := proxytest.LastDecision(t, e); d.Candidate != c1.String() || len(d.Failed) != 0 {
			t.Fatalf("b.test decision %+v: want gw1 first and serving", d)
		}
	})

	t.Run("CD-1/reset-after-response-started-records-no-cooldown", func(t *testing.T) {
		// The origin sends a head announcing 100000 bytes, 1000 of them,
		// then resets the connection.
		cut := proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
			br := bufio.NewReader(c)
			for {
				line, err := br.ReadString('\n')
				if err != nil || line == "\r\n" {
					break
				}
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"+strings.Repeat("x", 1000))
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetLinger(0)
			}
			c.Close()
		})
		for _, tc := range []struct {
			name string
			via  func(t *testing.T) candidate.Candidate
		}{
			{"gateway", func(t *testing.T) candidate.Candidate { return proxytest.Gateway(t, testworld.NewGateway(t).URL) }},
			{"direct", func(*testing.T) candidate.Candidate { return candidate.Direct }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cand := tc.via(t)
				addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{cand}, Cooldown: time.Minute})
				resp, body, err := proxytest.Get(t, addr, "http://"+cut+"/stream", "")
				if resp.StatusCode != 200 || err == nil || len(body) >= 100000 {
					t.Fatalf("want a 200 with a truncated body, got %d, %d bytes, %v", resp.StatusCode, len(body), err)
				}
				if e.Cooldowns().Cooling(cand.Key(), cut) {
					t.Fatal("a failure after the body started cooled the candidate")
				}
				for _, s := range e.Cooldowns().Snapshot() {
					if s.Key == cand.Key() && (s.Failures != 0 || s.Successes != 1) {
						t.Fatalf("state %+v: want 1 success, no failure", s)
					}
				}
			})
		}
	})
}

// TestSelectionFastFail covers SPEC ORD-5: a known path that has gone
// silent costs FastFail, not ConnectTimeout.
func TestSelectionFastFail(t *testing.T) {
	t.Run("ORD-5/cached-blackholed-gateway-abandoned-after-fast-fail", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw1, gw2 := testworld.NewGateway(t), testworld.NewGateway(t)
		c1, c2 := proxytest.Gateway(t, gw1.URL), proxytest.Gateway(t, gw2.URL)
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{c1, c2},
			ConnectTimeout: 5 * time.Second, FastFail: 300 * time.Millisecond, Cooldown: time.Minute})
		if status, _, _ := proxytest.Connect(t, addr, origin.Addr, ""); status != 200 {
			t.Fatalf("warm-up CONNECT: %d", status)
		}
		atts, hit := e.Plan("127.0.0.1", 80)
		if !hit || atts[0].Cand().Key() != c1.Key() || atts[0].Timeout() != 300*time.Millisecond || atts[1].Timeout() != 5*time.Second {
			t.Fatalf("plan %+v hit=%v: want the cached gateway first with the fast-fail timeout", atts, hit)
		}
		gw1.SetMode(testworld.ModeBlackhole)
		start := time.Now()
		status, _, _ := proxytest.Connect(t, addr, origin.Addr, "")
		took := time.Since(start)
		if status != 200 {
			t.Fatalf("CONNECT: %d", status)
		}
		if took >= 2*time.Second {
			t.Fatalf("took %v: the silent cached gateway was not abandoned after FastFail", took)
		}
		d := proxytest.LastDecision(t, e)
		if d.Candidate != c2.String() || !slices.Equal(selPhases(d), []string{c1.String() + " connect-response"}) {
			t.Fatalf("decision %+v", d)
		}
	})

	t.Run("ORD-5/health-preferred-first-gets-fast-fail", func(t *testing.T) {
		c1 := proxytest.Gateway(t, "http://127.0.0.1:1")
		c2 := proxytest.Gateway(t, "http://127.0.0.1:2")
		e, err := engine.New(engine.Config{Candidates: []candidate.Candidate{c1, c2}, FastFail: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		e.HealthState().Record([]route.HealthResult{{Key: c1.Key()}, {Key: c2.Key(), Alive: true}})
		atts, hit := e.Plan("x.test", 443)
		if hit || atts[0].Cand().Key() != c2.Key() || atts[0].Timeout() != 300*time.Millisecond || atts[1].Timeout() != engine.DefaultConnectTimeout {
			t.Fatalf("plan %+v: want the preferred gateway first with the fast-fail timeout", atts)
		}
	})
}

// TestSelectionRules covers destination rules end to end (SPEC ORD-3,
// ORD-3b, ORD-2).
func TestSelectionRules(t *testing.T) {
	for _, tc := range []struct {
		name   string
		direct []string
		noProx string
	}{
		{"ORD-3/prefer-direct-goes-direct-before-a-working-gateway", []string{"127.0.0.1"}, ""},
		{"ORD-3b/no-proxy-entry-goes-direct-before-a-working-gateway", nil, "example.invalid,127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			origin := testworld.NewOrigin(t)
			gw := testworld.NewGateway(t)
			rules, err := route.ParseRules(tc.direct, nil, tc.noProx)
			if err != nil {
				t.Fatal(err)
			}
			cands := []candidate.Candidate{proxytest.Gateway(t, gw.URL), candidate.Direct}
			addr, e := selProxy(t, engine.Config{Candidates: cands, Rules: rules})
			resp, body, err := proxytest.Get(t, addr, origin.URL+"/", "")
			if err != nil || resp.StatusCode != 200 || body != origin.Greeting() {
				t.Fatalf("GET: %d %q %v", resp.StatusCode, body, err)
			}
			if status, _, _ := proxytest.Connect(t, addr, origin.Addr, ""); status != 200 {
				t.Fatalf("CONNECT: %d", status)
			}
			if gw.Requests() != 0 || gw.Connects() != 0 {
				t.Fatalf("the gateway saw %d requests, %d CONNECTs; want the rule's host direct", gw.Requests(), gw.Connects())
			}
			if d := proxytest.LastDecision(t, e); d.Candidate != "direct" {
				t.Fatalf("decision %+v", d)
			}
			// Control: without the rule the same request takes the gateway.
			addr2, _ := selProxy(t, engine.Config{Candidates: cands})
			if resp, _, err := proxytest.Get(t, addr2, origin.URL+"/", ""); err != nil || resp.StatusCode != 200 || gw.Requests() != 1 {
				t.Fatalf("control: %v %v, gateway requests %d", resp.Status, err, gw.Requests())
			}
		})
	}

	t.Run("ORD-2/prefer-proxy-rule-never-pulls-a-cooling-gateway-forward", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw := testworld.NewGateway(t)
		gw.SetMode(testworld.ModeStatus(407)) // gateway-wide cooldown (CD-1)
		rules, err := route.ParseRules(nil, []string{"127.0.0.1"}, "")
		if err != nil {
			t.Fatal(err)
		}
		c := proxytest.Gateway(t, gw.URL)
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{c, candidate.Direct}, Rules: rules, Cooldown: time.Minute})
		resp, _, err := proxytest.Get(t, addr, origin.URL+"/", "")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("first GET: %v %v", resp.Status, err)
		}
		if d := proxytest.LastDecision(t, e); d.Candidate != "direct" || len(d.Failed) != 1 || d.Failed[0].Tier != "gateway" {
			t.Fatalf("first decision %+v: want the gateway's 407 (gateway tier), then direct", d)
		}
		gw.SetMode(testworld.ModePass)
		for i := 0; i < 2; i++ {
			resp, _, err = proxytest.Get(t, addr, origin.URL+"/", "")
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("GET %d: %v %v", i, resp.Status, err)
			}
		}
		if gw.Requests() != 1 {
			t.Fatalf("the cooling gateway saw %d requests, want only the first", gw.Requests())
		}
		if got := planKeys(e, "127.0.0.1", 80); !slices.Equal(got, []string{"direct", c.Key()}) {
			t.Fatalf("plan %v", got)
		}
	})
}

// TestSelectionPhases checks that failures carry the SPEC CD-3 phase in the
// decisions and in the logs, and that logs hold no path or password.
func TestSelectionPhases(t *testing.T) {
	type setup struct {
		cfg     engine.Config
		connect string // CONNECT target, or
		get     string // absolute URL
	}
	for _, tc := range []struct {
		phase string
		make  func(t *testing.T) setup
	}{
		{"gateway-connect", func(t *testing.T) setup {
			o := testworld.NewOrigin(t)
			return setup{cfg: engine.Config{Candidates: []candidate.Candidate{proxytest.Gateway(t, "http://u:hunter2@"+testworld.RefusedAddr(t)), candidate.Direct}},
				get: o.URL + "/secret-path?token=abc"}
		}},
		{"connect-response", func(t *testing.T) setup {
			o := testworld.NewOrigin(t)
			gw := testworld.NewGateway(t)
			gw.SetMode(testworld.ModeStatus(503))
			return setup{cfg: engine.Config{Candidates: []candidate.Candidate{proxytest.Gateway(t, gw.URL), candidate.Direct}}, connect: o.Addr}
		}},
		{"tls-probe", func(t *testing.T) setup {
			o := testworld.NewOrigin(t)
			gw := testworld.NewGateway(t, testworld.WithRoute("a.test:443", o.Addr))
			// A second candidate: with a single one the probe is skipped.
			return setup{cfg: engine.Config{Candidates: []candidate.Candidate{proxytest.Gateway(t, gw.URL), proxytest.Gateway(t, "http://"+testworld.RefusedAddr(t))}, TLSProbe: true}, connect: "a.test:443"}
		}},
		{"origin-connect", func(t *testing.T) setup {
			return setup{cfg: engine.Config{LoopbackDirect: true}, connect: testworld.RefusedAddr(t)}
		}},
		{"response-header", func(t *testing.T) setup {
			return setup{cfg: engine.Config{LoopbackDirect: true, ResponseTimeout: 300 * time.Millisecond},
				get: "http://" + testworld.Blackhole(t) + "/secret-path?token=abc"}
		}},
	} {
		t.Run("CD-3/"+tc.phase, func(t *testing.T) {
			s := tc.make(t)
			var logs testkit.LogBuffer
			s.cfg.Logger = logs.Logger()
			s.cfg.Cooldown = time.Minute
			addr, e := selProxy(t, s.cfg)
			if s.connect != "" {
				proxytest.Connect(t, addr, s.connect, "")
			} else {
				proxytest.Get(t, addr, s.get, "")
			}
			d := proxytest.LastDecision(t, e)
			if len(d.Failed) == 0 || d.Failed[0].Phase != tc.phase {
				t.Fatalf("decision %+v: want a failure in phase %s", d, tc.phase)
			}
			out := logs.String()
			proxytest.MustContain(t, out, "phase="+tc.phase)
			proxytest.MustContain(t, out, "candidate=")
			for _, secret := range []string{"secret-path", "token=abc", "hunter2"} {
				if strings.Contains(out, secret) {
					t.Fatalf("log holds %q:\n%s", secret, out)
				}
			}
		})
	}
}

// TestSelectionHealthOff covers SPEC HC-3: without a health check, 443
// still TLS-probes and plain HTTP tries the candidates in order.
func TestSelectionHealthOff(t *testing.T) {
	t.Run("HC-3/443-still-tls-probes", func(t *testing.T) {
		origin := testworld.NewTLSOrigin(t)
		gw := testworld.NewGateway(t, testworld.WithRoute("a.test:443", origin.Addr))
		// A second candidate: with a single one the probe is skipped.
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{proxytest.Gateway(t, gw.URL), proxytest.Gateway(t, "http://"+testworld.RefusedAddr(t))}, TLSProbe: true})
		status, c, _ := proxytest.Connect(t, addr, "a.test:443", "")
		defer func() {
			if n := e.HealthRuns(); n != 0 {
				t.Fatalf("%d health checks ran without a health URL", n)
			}
		}()
		if status != 200 {
			t.Fatalf("CONNECT: %d", status)
		}
		if body := selTLSGet(t, c, origin.CertPool); body != origin.Greeting() {
			t.Fatalf("body %q", body)
		}
		if e.TLSProbes() != 1 || gw.Connects() != 2 {
			t.Fatalf("probes %d, CONNECTs %d; want 1 probe and 2 CONNECTs", e.TLSProbes(), gw.Connects())
		}
	})

	t.Run("CON-1/single-candidate-not-probed", func(t *testing.T) {
		origin := testworld.NewTLSOrigin(t)
		gw := testworld.NewGateway(t, testworld.WithRoute("a.test:443", origin.Addr))
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{proxytest.Gateway(t, gw.URL)}, TLSProbe: true})
		if status, _, _ := proxytest.Connect(t, addr, "a.test:443", ""); status != 200 {
			t.Fatalf("CONNECT: %d", status)
		}
		if e.TLSProbes() != 0 || gw.Connects() != 1 {
			t.Fatalf("probes %d, CONNECTs %d; want no probe with one candidate", e.TLSProbes(), gw.Connects())
		}
	})

	t.Run("HC-3/plain-http-tries-in-order", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw1, gw2 := testworld.NewGateway(t), testworld.NewGateway(t)
		gw1.SetMode(testworld.ModeStatus(502))
		dead := proxytest.Gateway(t, "http://"+testworld.RefusedAddr(t))
		c1, c2 := proxytest.Gateway(t, gw1.URL), proxytest.Gateway(t, gw2.URL)
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{dead, c1, c2, candidate.Direct}})
		resp, body, err := proxytest.Get(t, addr, origin.URL+"/", "")
		if err != nil || resp.StatusCode != 200 || body != origin.Greeting() {
			t.Fatalf("GET: %d %q %v", resp.StatusCode, body, err)
		}
		d := proxytest.LastDecision(t, e)
		want := []string{dead.String() + " gateway-connect", c1.String() + " connect-response"}
		if d.Candidate != c2.String() || !slices.Equal(selPhases(d), want) {
			t.Fatalf("decision %+v, want failures %v then %s", d, want, c2)
		}
		if e.HealthRuns() != 0 {
			t.Fatal("health runs without a health URL")
		}
	})
}
