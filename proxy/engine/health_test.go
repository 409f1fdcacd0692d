package engine_test

import (
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
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
// (no interval); tests drive checks with e.checker.Run().
func healthEngine(t *testing.T, cfg engine.Config) *engine.Engine {
	t.Helper()
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	if e.Checker() == nil {
		t.Fatal("no health checker")
	}
	return e
}

// The engine side of the health checks (proxy/health runs them and holds
// the probe and schedule tests): the preference leads the plan, a path
// failure kicks a check, a passing check ends a gateway cooldown, Close
// stops the loop (SPEC HC-1, HC-2, HC-4, CD-2, LIS-3).
func TestHealth(t *testing.T) {
	t.Run("HC-1/ORD-1/preferred-candidate-leads-the-plan", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw1, gw2 := testworld.NewGateway(t), testworld.NewGateway(t)
		gw1.SetMode(testworld.ModeStatus(502)) // its own 502 page: not alive
		c1, c2 := proxytest.Gateway(t, gw1.URL), proxytest.Gateway(t, gw2.URL)
		e := healthEngine(t, engine.Config{Candidates: []candidate.Candidate{c1, c2, candidate.Direct}, HealthURL: mustURL(t, origin.URL+"/health")})
		e.Checker().Run()
		if p := e.HealthState().Preferred(); p != c2.Key() {
			t.Fatalf("preferred %q, want %q; results %+v", p, c2.Key(), e.HealthState().Snapshot().Results)
		}
		if got := planKeys(e, "x.test", 80); got[0] != c2.Key() {
			t.Fatalf("plan %v: the preference leads (ORD-1)", got)
		}
		if e.HealthRuns() != 1 {
			t.Fatalf("health runs %d, want 1", e.HealthRuns())
		}
	})

	t.Run("HC-1/ORD-1/all-failing-plan-falls-back-to-default-order", func(t *testing.T) {
		var status atomic.Int32
		status.Store(200)
		origin := statusOrigin(t, &status)
		gw := testworld.NewGateway(t)
		c := proxytest.Gateway(t, gw.URL)
		e := healthEngine(t, engine.Config{Candidates: []candidate.Candidate{c, candidate.Direct}, HealthURL: mustURL(t, origin.URL)})
		e.Checker().Run()
		if p := e.HealthState().Preferred(); p != c.Key() {
			t.Fatalf("preferred %q", p)
		}
		status.Store(503)
		e.Checker().Run()
		if p := e.HealthState().Preferred(); p != "" {
			t.Fatalf("preferred %q after every candidate failed, want none", p)
		}
		atts, _ := e.Plan("x.test", 80)
		if atts[0].Cand().Key() != c.Key() || atts[0].Timeout() != engine.DefaultConnectTimeout {
			t.Fatalf("plan %+v: want the default order with the normal timeout", atts)
		}
	})

	t.Run("HC-4/flapping-never-wins-traffic-back-with-recover-count-2", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw1 := testworld.NewGateway(t, testworld.WithName("gw1"))
		gw2 := testworld.NewGateway(t, testworld.WithName("gw2"))
		c1, c2 := proxytest.Gateway(t, gw1.URL), proxytest.Gateway(t, gw2.URL)
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{c1, c2}, HealthURL: mustURL(t, origin.URL),
			HealthRecoverCount: 2, PrefTTL: -1}) // no cache: the preference alone orders
		e.Checker().Run()
		if p := e.HealthState().Preferred(); p != c1.Key() {
			t.Fatalf("initial preferred %q", p)
		}
		for i, pass := range []bool{false, true, false, true} {
			mode := testworld.ModeStatus(502)
			if pass {
				mode = testworld.ModePass
			}
			gw1.SetMode(mode)
			e.Checker().Run()
			if p := e.HealthState().Preferred(); p != c2.Key() {
				t.Fatalf("check %d (gw1 pass=%v): preferred %q, want gw2", i, pass, p)
			}
			resp, _, err := proxytest.Get(t, addr, origin.URL+"/", "")
			if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Testworld-Gateway") != "gw2" {
				t.Fatalf("check %d: traffic went %q (%v %v), want gw2", i, resp.Header.Get("X-Testworld-Gateway"), resp.Status, err)
			}
		}
		e.Checker().Run() // a second consecutive pass: gw1 recovers
		if p := e.HealthState().Preferred(); p != c1.Key() {
			t.Fatalf("after two passes in a row preferred %q, want gw1", p)
		}
	})

	t.Run("CD-2/passing-health-check-clears-gateway-cooldown", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw := testworld.NewGateway(t)
		gw.SetMode(testworld.ModeStatus(407))
		c := proxytest.Gateway(t, gw.URL)
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{c, candidate.Direct}, Cooldown: time.Hour,
			HealthURL: mustURL(t, origin.URL)})
		if status, _, _ := proxytest.Connect(t, addr, origin.Addr, ""); status != 200 {
			t.Fatalf("CONNECT: %d", status)
		}
		if !e.Cooldowns().Cooling(c.Key(), "other.test") {
			t.Fatal("407 did not cool the gateway for every host")
		}
		gw.SetMode(testworld.ModePass)
		e.Checker().Run() // waits for the kicked run, if any, then checks
		if e.Cooldowns().Cooling(c.Key(), "other.test") {
			t.Fatal("the gateway still cools after a passing health check")
		}
	})

	t.Run("HC-2/path-failure-kicks-a-check", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw := testworld.NewGateway(t)
		dead := proxytest.Gateway(t, "http://"+testworld.RefusedAddr(t))
		c := proxytest.Gateway(t, gw.URL)
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{dead, c}, HealthURL: mustURL(t, origin.URL)})
		if e.HealthRuns() != 0 {
			t.Fatalf("runs before any failure: %d", e.HealthRuns())
		}
		if resp, _, err := proxytest.Get(t, addr, origin.URL+"/", ""); err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET: %v %v", resp.Status, err)
		}
		testkit.WaitFor(t, 3*time.Second, "a kicked health check", func() bool { return e.HealthRuns() >= 1 })
		testkit.WaitFor(t, 3*time.Second, "the preference", func() bool { return e.HealthState().Preferred() == c.Key() })
	})

	t.Run("LIS-3/engine-close-stops-the-health-loop", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		before := goleak.IgnoreCurrent()
		e, err := engine.New(engine.Config{HealthURL: mustURL(t, origin.URL), HealthInterval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 3*time.Second, "periodic checks", func() bool { return e.HealthRuns() >= 3 })
		e.Close()
		e.Close() // idempotent
		runs := e.HealthRuns()
		e.KickHealth() // after Close: never blocks, never runs
		goleak.VerifyNone(t, before)
		if e.HealthRuns() != runs {
			t.Fatal("a check ran after Close")
		}
	})

	t.Run("LIS-3/engine-close-cuts-a-hanging-check", func(t *testing.T) {
		hole := testworld.Blackhole(t) // accepts, never answers
		e, err := engine.New(engine.Config{HealthURL: mustURL(t, "http://"+hole+"/"), ConnectTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		e.KickHealth()
		testkit.WaitFor(t, 3*time.Second, "the check to start", func() bool { return e.HealthRuns() == 1 })
		start := time.Now()
		e.Close()
		if took := time.Since(start); took > time.Second {
			t.Fatalf("Close took %v with a check hanging on a silent origin", took)
		}
		if p := e.HealthState().Snapshot(); !p.LastRun.IsZero() {
			t.Fatalf("a run cut by Close was recorded: %+v", p)
		}
	})
}
