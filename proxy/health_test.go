package proxy

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dual-proxy/dual-proxy/internal/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testworld"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// statusOrigin is a loopback origin answering its current status.
func statusOrigin(t *testing.T, status *atomic.Int32) *testworld.Origin {
	return testworld.NewOriginHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(status.Load()))
	}))
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// healthEngine returns an engine whose health loop only runs when kicked
// (no interval); tests drive checks with e.checker.run().
func healthEngine(t *testing.T, cfg Config) *Engine {
	t.Helper()
	e, err := NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	if e.checker == nil {
		t.Fatal("no health checker")
	}
	return e
}

func TestHealth(t *testing.T) {
	t.Run("HC-1/first-passing-candidate-preferred-502-gateway-not-alive", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw1, gw2 := testworld.NewGateway(t), testworld.NewGateway(t)
		gw1.SetMode(testworld.ModeStatus(502)) // its own 502 page
		c1, c2 := selCand(t, gw1.URL), selCand(t, gw2.URL)
		e := healthEngine(t, Config{Candidates: []candidate.Candidate{c1, c2, candidate.Direct}, HealthURL: mustURL(t, origin.URL+"/health")})
		e.checker.run()
		st := e.health.Snapshot()
		if st.Preferred != c2.Key() {
			t.Fatalf("preferred %q, want %q; results %+v", st.Preferred, c2.Key(), st.Results)
		}
		if len(st.Results) != 2 || st.Results[0].Alive || !st.Results[1].Alive {
			t.Fatalf("results %+v: want gw1 dead, gw2 alive, direct not checked", st.Results)
		}
		if gw2.Requests() != 1 || origin.Count() != 1 {
			t.Fatalf("gw2 requests %d, origin requests %d", gw2.Requests(), origin.Count())
		}
		if got := planKeys(e, "x.test", 80); got[0] != c2.Key() {
			t.Fatalf("plan %v: the preference leads (ORD-1)", got)
		}
	})

	t.Run("HC-1/all-failing-clears-preference", func(t *testing.T) {
		var status atomic.Int32
		status.Store(200)
		origin := statusOrigin(t, &status)
		gw := testworld.NewGateway(t)
		c := selCand(t, gw.URL)
		e := healthEngine(t, Config{Candidates: []candidate.Candidate{c, candidate.Direct}, HealthURL: mustURL(t, origin.URL)})
		e.checker.run()
		if p := e.health.Preferred(); p != c.Key() {
			t.Fatalf("preferred %q", p)
		}
		status.Store(503)
		e.checker.run()
		if p := e.health.Preferred(); p != "" {
			t.Fatalf("preferred %q after every candidate failed, want none", p)
		}
		atts, _ := e.plan("x.test", 80)
		if atts[0].cand.Key() != c.Key() || atts[0].timeout != DefaultConnectTimeout {
			t.Fatalf("plan %+v: want the default order with the normal timeout", atts)
		}
	})

	t.Run("HC-1/no-candidate-alive-logs-why-per-candidate", func(t *testing.T) {
		var status atomic.Int32
		status.Store(503)
		origin := statusOrigin(t, &status)
		gw := testworld.NewGateway(t)
		gw.SetMode(testworld.ModeStatus(502))
		c := selCand(t, gw.URL)
		var logs logBuffer
		logger := slog.New(slog.NewTextHandler(&logs, nil))
		e := healthEngine(t, Config{Candidates: []candidate.Candidate{c, candidate.Direct}, HealthURL: mustURL(t, origin.URL+"/secret-path"), Logger: logger})
		e.checker.run()
		out := logs.String()
		for _, want := range []string{"level=WARN", "no candidate reached the health URL", c.Key() + ": gateway answered 502", "direct: status 503"} {
			if !strings.Contains(out, want) {
				t.Errorf("log lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "secret-path") {
			t.Errorf("log names the health URL's path (OPS-1):\n%s", out)
		}
	})

	t.Run("HC-1/origin-401-403-count-as-alive", func(t *testing.T) {
		for _, code := range []int32{401, 403, 404} {
			var status atomic.Int32
			status.Store(code)
			origin := statusOrigin(t, &status)
			gw := testworld.NewGateway(t)
			c := selCand(t, gw.URL)
			e := healthEngine(t, Config{Candidates: []candidate.Candidate{c}, HealthURL: mustURL(t, origin.URL)})
			e.checker.run()
			if p := e.health.Preferred(); p != c.Key() {
				t.Fatalf("origin %d: preferred %q", code, p)
			}
		}
	})

	t.Run("HC-1/https-health-url-connect-tls-status", func(t *testing.T) {
		origin := testworld.NewTLSOrigin(t)
		gw1, gw2 := testworld.NewGateway(t), testworld.NewGateway(t)
		gw1.SetMode(testworld.ModeStatus(403)) // non-2xx to CONNECT: the gateway's answer
		c1, c2 := selCand(t, gw1.URL), selCand(t, gw2.URL)
		e := healthEngine(t, Config{Candidates: []candidate.Candidate{c1, c2, candidate.Direct},
			HealthURL: mustURL(t, origin.URL+"/"), HealthTLS: &tls.Config{RootCAs: origin.CertPool}})
		e.checker.run()
		if p := e.health.Preferred(); p != c2.Key() {
			t.Fatalf("preferred %q, want %q; %+v", p, c2.Key(), e.health.Snapshot().Results)
		}
		if gw1.Connects() != 1 || gw2.Connects() != 1 || origin.Count() != 1 {
			t.Fatalf("CONNECTs %d/%d, origin %d", gw1.Connects(), gw2.Connects(), origin.Count())
		}
		// Without the right roots TLS fails: not alive.
		e2 := healthEngine(t, Config{Candidates: []candidate.Candidate{c2}, HealthURL: mustURL(t, origin.URL+"/"),
			HealthTLS: &tls.Config{}})
		e2.checker.run()
		if p := e2.health.Preferred(); p != "" {
			t.Fatalf("preferred %q through an untrusted certificate", p)
		}
	})

	t.Run("HC-4/flapping-never-wins-traffic-back-with-recover-count-2", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw1 := testworld.NewGateway(t, testworld.WithName("gw1"))
		gw2 := testworld.NewGateway(t, testworld.WithName("gw2"))
		c1, c2 := selCand(t, gw1.URL), selCand(t, gw2.URL)
		addr, e := selProxy(t, Config{Candidates: []candidate.Candidate{c1, c2}, HealthURL: mustURL(t, origin.URL),
			HealthRecoverCount: 2, PrefTTL: -1}) // no cache: the preference alone orders
		e.checker.run()
		if p := e.health.Preferred(); p != c1.Key() {
			t.Fatalf("initial preferred %q", p)
		}
		for i, pass := range []bool{false, true, false, true} {
			mode := testworld.ModeStatus(502)
			if pass {
				mode = testworld.ModePass
			}
			gw1.SetMode(mode)
			e.checker.run()
			if p := e.health.Preferred(); p != c2.Key() {
				t.Fatalf("check %d (gw1 pass=%v): preferred %q, want gw2", i, pass, p)
			}
			resp, _, err := selGet(t, addr, origin.URL+"/", "")
			if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Testworld-Gateway") != "gw2" {
				t.Fatalf("check %d: traffic went %q (%v %v), want gw2", i, resp.Header.Get("X-Testworld-Gateway"), resp.Status, err)
			}
		}
		e.checker.run() // a second consecutive pass: gw1 recovers
		if p := e.health.Preferred(); p != c1.Key() {
			t.Fatalf("after two passes in a row preferred %q, want gw1", p)
		}
	})

	t.Run("CD-2/passing-health-check-clears-gateway-cooldown", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw := testworld.NewGateway(t)
		gw.SetMode(testworld.ModeStatus(407))
		c := selCand(t, gw.URL)
		addr, e := selProxy(t, Config{Candidates: []candidate.Candidate{c, candidate.Direct}, Cooldown: time.Hour,
			HealthURL: mustURL(t, origin.URL)})
		if status, _, _ := selConnect(t, addr, origin.Addr, ""); status != 200 {
			t.Fatalf("CONNECT: %d", status)
		}
		if !e.cooldowns.Cooling(c.Key(), "other.test") {
			t.Fatal("407 did not cool the gateway for every host")
		}
		gw.SetMode(testworld.ModePass)
		e.checker.run() // waits for the kicked run, if any, then checks
		if e.cooldowns.Cooling(c.Key(), "other.test") {
			t.Fatal("the gateway still cools after a passing health check")
		}
	})

	t.Run("HC-2/path-failure-kicks-a-check", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw := testworld.NewGateway(t)
		dead := selCand(t, "http://"+testworld.RefusedAddr(t))
		c := selCand(t, gw.URL)
		addr, e := selProxy(t, Config{Candidates: []candidate.Candidate{dead, c}, HealthURL: mustURL(t, origin.URL)})
		if e.HealthRuns() != 0 {
			t.Fatalf("runs before any failure: %d", e.HealthRuns())
		}
		if resp, _, err := selGet(t, addr, origin.URL+"/", ""); err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET: %v %v", resp.Status, err)
		}
		testkit.WaitFor(t, 3*time.Second, "a kicked health check", func() bool { return e.HealthRuns() >= 1 })
		testkit.WaitFor(t, 3*time.Second, "the preference", func() bool { return e.health.Preferred() == c.Key() })
	})

	t.Run("HC-2/kick-storm-runs-at-most-2-checks-per-second", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		e := healthEngine(t, Config{HealthURL: mustURL(t, origin.URL)})
		pe := &candidate.PathError{Candidate: candidate.Direct, Phase: candidate.PhaseOriginConnect, Tier: candidate.TierHost, Err: errors.New("refused")}
		start := time.Now()
		for i := 0; i < 100; i++ {
			e.fail("x.test", 80, pe)
		}
		// Keep kicking for most of a second, every 10 ms (bounded).
		for i := 0; i < 200 && time.Since(start) < 900*time.Millisecond; i++ {
			e.kickHealth()
			time.Sleep(10 * time.Millisecond) // pacing the storm, not synchronisation
		}
		if n := e.HealthRuns(); n < 1 || n > 2 {
			t.Fatalf("%d health checks within a second of a kick storm, want 1 or 2", n)
		}
		// The coalesced kick is not lost: one more check follows the gap.
		testkit.WaitFor(t, 3*time.Second, "the coalesced check", func() bool { return e.HealthRuns() >= 2 })
	})

	t.Run("LIS-3/engine-close-stops-the-health-loop", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		before := goleak.IgnoreCurrent()
		e, err := NewEngine(Config{HealthURL: mustURL(t, origin.URL), HealthInterval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 3*time.Second, "periodic checks", func() bool { return e.HealthRuns() >= 3 })
		e.Close()
		e.Close() // idempotent
		runs := e.HealthRuns()
		e.kickHealth() // after Close: never blocks, never runs
		goleak.VerifyNone(t, before)
		if e.HealthRuns() != runs {
			t.Fatal("a check ran after Close")
		}
	})

	t.Run("LIS-3/engine-close-cuts-a-hanging-check", func(t *testing.T) {
		hole := testworld.Blackhole(t) // accepts, never answers
		e, err := NewEngine(Config{HealthURL: mustURL(t, "http://"+hole+"/"), ConnectTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		e.kickHealth()
		testkit.WaitFor(t, 3*time.Second, "the check to start", func() bool { return e.HealthRuns() == 1 })
		start := time.Now()
		e.Close()
		if took := time.Since(start); took > time.Second {
			t.Fatalf("Close took %v with a check hanging on a silent origin", took)
		}
		if p := e.health.Snapshot(); !p.LastRun.IsZero() {
			t.Fatalf("a run cut by Close was recorded: %+v", p)
		}
	})
}
