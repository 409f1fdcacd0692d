package engine_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
)

// TestReconfigure covers SPEC OPS-7 at the engine: a change applies to the
// next request and tunnel, never to one already open, and the state of a
// removed candidate goes with it.
func TestReconfigure(t *testing.T) {
	t.Run("OPS-7/dead-gateway-replaced-next-request-served-open-tunnel-keeps-relaying", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		tlsOrigin := testworld.NewTLSOrigin(t)
		good := testworld.NewGateway(t, testworld.WithRoute("a.test:80", origin.Addr))
		dead := proxytest.Gateway(t, "http://"+testworld.RefusedAddr(t))
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{dead, candidate.Direct}, Cooldown: time.Minute})

		// A tunnel opened before the change (direct: the gateway is dead).
		status, tunnel, _ := proxytest.Connect(t, addr, tlsOrigin.Addr, "")
		if status != 200 {
			t.Fatalf("CONNECT before the change: %d", status)
		}
		defer tunnel.Close()
		if resp, _, _ := proxytest.Get(t, addr, "http://a.test/", ""); resp.StatusCode != 502 {
			t.Fatalf("through the dead gateway: %d, want 502", resp.StatusCode)
		}
		if !cooling(e, dead.Key()) {
			t.Fatal("the dead gateway does not cool")
		}

		if err := e.Reconfigure(engine.Config{Candidates: []candidate.Candidate{proxytest.Gateway(t, good.URL), candidate.Direct}, Cooldown: time.Minute}); err != nil {
			t.Fatal(err)
		}
		resp, body, err := proxytest.Get(t, addr, "http://a.test/", "")
		if err != nil || resp.StatusCode != 200 || !strings.Contains(body, "origin") || good.Requests() != 1 {
			t.Fatalf("after the change: %v %q %v, gateway saw %d", resp.Status, body, err, good.Requests())
		}
		if d := proxytest.LastDecision(t, e); d.Candidate != proxytest.Gateway(t, good.URL).String() {
			t.Fatalf("served by %q", d.Candidate)
		}
		if got := selTLSGet(t, tunnel, tlsOrigin.CertPool); !strings.Contains(got, "origin") {
			t.Fatalf("the tunnel opened before the change: %q", got)
		}
		if cooling(e, dead.Key()) {
			t.Fatal("the removed gateway's cooldown stayed")
		}
		for _, c := range e.Status().Candidates {
			if c.Key == dead.Key() {
				t.Fatal("the removed gateway is still listed")
			}
		}
	})
	t.Run("OPS-7/cache-entry-of-a-removed-gateway-dropped", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw1 := testworld.NewGateway(t, testworld.WithRoute("a.test:80", origin.Addr))
		gw2 := testworld.NewGateway(t, testworld.WithRoute("a.test:80", origin.Addr))
		c1, c2 := proxytest.Gateway(t, gw1.URL), proxytest.Gateway(t, gw2.URL)
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{c1, c2, candidate.Direct}})
		if resp, _, _ := proxytest.Get(t, addr, "http://a.test/", ""); resp.StatusCode != 200 {
			t.Fatal(resp.Status)
		}
		if k, ok := e.Cache().Get("a.test"); !ok || k != c1.Key() {
			t.Fatalf("cache %q %v", k, ok)
		}
		if err := e.Reconfigure(engine.Config{Candidates: []candidate.Candidate{c2, c1, candidate.Direct}}); err != nil {
			t.Fatal(err)
		}
		if k, _ := e.Cache().Get("a.test"); k != c1.Key() {
			t.Fatal("a reorder dropped the cache entry of a candidate still listed")
		}
		if err := e.Reconfigure(engine.Config{Candidates: []candidate.Candidate{c2, candidate.Direct}}); err != nil {
			t.Fatal(err)
		}
		if _, ok := e.Cache().Get("a.test"); ok {
			t.Fatal("the cache still names the removed gateway")
		}
		if resp, _, _ := proxytest.Get(t, addr, "http://a.test/", ""); resp.StatusCode != 200 || gw2.Requests() != 1 {
			t.Fatalf("%s, second gateway saw %d", resp.Status, gw2.Requests())
		}
		// A gateway added after the one the cache names leaves the entry
		// alone; one added before it takes the next request.
		for _, cands := range [][]candidate.Candidate{{c2, candidate.Direct, c1}, {c2, candidate.Direct}} {
			if err := e.Reconfigure(engine.Config{Candidates: cands}); err != nil {
				t.Fatal(err)
			}
			if k, _ := e.Cache().Get("a.test"); k != c2.Key() {
				t.Fatalf("a gateway added or removed after the cached one dropped the entry (%q)", k)
			}
		}
		if err := e.Reconfigure(engine.Config{Candidates: []candidate.Candidate{c1, c2, candidate.Direct}}); err != nil {
			t.Fatal(err)
		}
		if _, ok := e.Cache().Get("a.test"); ok {
			t.Fatal("the cache still prefers a gateway ranked after one just added")
		}
		if resp, _, _ := proxytest.Get(t, addr, "http://a.test/", ""); resp.StatusCode != 200 || gw1.Requests() != 2 {
			t.Fatalf("%s, the added gateway saw %d requests, want 2", resp.Status, gw1.Requests())
		}
	})
	t.Run("OPS-7/health-check-turned-on-live", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw := testworld.NewGateway(t, testworld.WithRoute("h.test:80", origin.Addr))
		c := proxytest.Gateway(t, gw.URL)
		_, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{c, candidate.Direct}})
		u, _ := url.Parse("http://h.test/")
		if err := e.Reconfigure(engine.Config{Candidates: []candidate.Candidate{c, candidate.Direct}, HealthURL: u, HealthInterval: time.Hour}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for e.HealthState().Preferred() != c.Key() {
			if time.Now().After(deadline) {
				t.Fatalf("no health preference after turning checks on: runs %d", e.HealthRuns())
			}
			time.Sleep(10 * time.Millisecond) // polling with a deadline
		}
		target, _, err := e.Probe(t.Context(), c)
		if err != nil || target != "http://h.test" {
			t.Fatalf("probe %q %v", target, err)
		}
		if _, _, err := e.Probe(t.Context(), proxytest.Gateway(t, "http://"+testworld.RefusedAddr(t))); err == nil {
			t.Fatal("a probe through a refused gateway passed")
		}
	})
	t.Run("OPS-7/invalid-change-keeps-the-configuration", func(t *testing.T) {
		gw := testworld.NewGateway(t)
		c := proxytest.Gateway(t, gw.URL)
		_, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{c, candidate.Direct}, RaceDelay: time.Second})
		if err := e.Reconfigure(engine.Config{Candidates: []candidate.Candidate{candidate.Direct}, RaceDelay: -1}); err == nil {
			t.Fatal("a negative race delay was accepted")
		}
		if got := e.Candidates(); len(got) != 2 || got[0] != c {
			t.Fatalf("candidates %v", got)
		}
	})
}

// cooling reports whether candidate key has a gateway-wide or host-scoped
// cooldown record that is running.
func cooling(e *engine.Engine, key string) bool {
	for _, s := range e.Cooldowns().Snapshot() {
		if s.Key != key {
			continue
		}
		if s.Until.After(time.Now()) || len(s.Hosts) > 0 {
			return true
		}
	}
	return false
}
