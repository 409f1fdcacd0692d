package engine_test

import (
	"crypto/tls"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
)

// TestSelectionAuth covers gateway credentials (SPEC GW-4) on every path
// the engine opens: CONNECT, plain HTTP and health checks.
func TestSelectionAuth(t *testing.T) {
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("user name:p@ss"))
	clientAuth := "Proxy-Authorization: Basic Y2xpZW50OnNlY3JldA==\r\n" // client:secret

	noProxyAuth := func(t *testing.T, o *testworld.Origin) {
		t.Helper()
		for _, r := range o.Requests() {
			if v := r.Header.Get("Proxy-Authorization"); v != "" {
				t.Fatalf("origin saw Proxy-Authorization %q", v)
			}
		}
	}

	t.Run("GW-4/decoded-credentials-on-connect-plain-http-and-health", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw := testworld.NewGateway(t, testworld.WithAuth("user name", "p@ss"))
		c := proxytest.Gateway(t, "http://user%20name:p%40ss@"+gw.Addr)
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{c}, HealthURL: mustURL(t, origin.URL+"/")})

		status, conn, br := proxytest.Connect(t, addr, origin.Addr, clientAuth)
		if status != 200 {
			t.Fatalf("CONNECT: %d", status)
		}
		if got := gw.LastProxyAuthorization(); got != want {
			t.Fatalf("CONNECT carried %q, want %q", got, want)
		}
		conn.Write([]byte("GET /in-tunnel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
		if _, body := proxytest.ReadResponse(t, br, "GET"); body != origin.Greeting() {
			t.Fatalf("tunnel body %q", body)
		}

		resp, body, err := proxytest.Get(t, addr, origin.URL+"/plain", clientAuth)
		if err != nil || resp.StatusCode != 200 || body != origin.Greeting() {
			t.Fatalf("GET: %d %q %v", resp.StatusCode, body, err)
		}
		if got := gw.LastProxyAuthorization(); got != want {
			t.Fatalf("plain HTTP carried %q, want %q", got, want)
		}

		before := gw.Requests()
		e.Checker().Run()
		if gw.Requests() != before+1 || gw.LastProxyAuthorization() != want {
			t.Fatalf("health check: %d requests, auth %q", gw.Requests()-before, gw.LastProxyAuthorization())
		}
		if p := e.HealthState().Preferred(); p != c.Key() {
			t.Fatalf("preferred %q: the authenticated gateway is alive", p)
		}
		noProxyAuth(t, origin)
	})

	t.Run("GW-4/https-health-check-connect-carries-credentials", func(t *testing.T) {
		origin := testworld.NewTLSOrigin(t)
		gw := testworld.NewGateway(t, testworld.WithAuth("user name", "p@ss"))
		c := proxytest.Gateway(t, "http://user%20name:p%40ss@"+gw.Addr)
		e := healthEngine(t, engine.Config{Candidates: []candidate.Candidate{c}, HealthURL: mustURL(t, origin.URL+"/"),
			HealthTLS: &tls.Config{RootCAs: origin.CertPool}})
		e.Checker().Run()
		if gw.Connects() != 1 || gw.LastProxyAuthorization() != want || e.HealthState().Preferred() != c.Key() {
			t.Fatalf("CONNECTs %d, auth %q, preferred %q", gw.Connects(), gw.LastProxyAuthorization(), e.HealthState().Preferred())
		}
		noProxyAuth(t, origin)
	})

	t.Run("GW-4/client-proxy-authorization-never-forwarded", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw := testworld.NewGateway(t) // no credentials configured
		addr, _ := selProxy(t, engine.Config{Candidates: []candidate.Candidate{proxytest.Gateway(t, gw.URL)}})
		if status, _, _ := proxytest.Connect(t, addr, origin.Addr, clientAuth); status != 200 {
			t.Fatalf("CONNECT: %d", status)
		}
		if got := gw.LastProxyAuthorization(); got != "" {
			t.Fatalf("gateway got the client's CONNECT credentials %q", got)
		}
		if resp, _, err := proxytest.Get(t, addr, origin.URL+"/", clientAuth); err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET: %v %v", resp.Status, err)
		}
		if got := gw.LastProxyAuthorization(); got != "" {
			t.Fatalf("gateway got the client's credentials %q", got)
		}
		direct, _ := selProxy(t, engine.Config{LoopbackDirect: true})
		if resp, _, err := proxytest.Get(t, direct, origin.URL+"/", clientAuth); err != nil || resp.StatusCode != 200 {
			t.Fatalf("direct GET: %v %v", resp.Status, err)
		}
		if origin.Count() != 2 {
			t.Fatalf("origin saw %d requests, want 2", origin.Count())
		}
		noProxyAuth(t, origin)
	})

	t.Run("GW-4/407-cools-gateway-wide-and-next-candidate-serves", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gwA := testworld.NewGateway(t, testworld.WithAuth("user name", "p@ss"))
		gw2 := testworld.NewGateway(t)
		bad := proxytest.Gateway(t, "http://user%20name:wr0ng@"+gwA.Addr)
		c2 := proxytest.Gateway(t, gw2.URL)
		for _, kind := range []string{"connect", "plain"} {
			t.Run(kind, func(t *testing.T) {
				var logs testkit.LogBuffer
				addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{bad, c2}, Cooldown: time.Minute, Logger: logs.Logger()})
				if kind == "connect" {
					if status, _, _ := proxytest.Connect(t, addr, origin.Addr, ""); status != 200 {
						t.Fatalf("CONNECT: %d", status)
					}
				} else if resp, body, err := proxytest.Get(t, addr, origin.URL+"/", ""); err != nil || resp.StatusCode != 200 || body != origin.Greeting() {
					t.Fatalf("GET: %d %q %v", resp.StatusCode, body, err)
				}
				d := proxytest.LastDecision(t, e)
				if d.Candidate != c2.String() || len(d.Failed) != 1 || d.Failed[0].Status != 407 || d.Failed[0].Tier != "gateway" {
					t.Fatalf("decision %+v: want a gateway-tier 407 from %s, then %s", d, bad, c2)
				}
				if !e.Cooldowns().Cooling(bad.Key(), "any.other.test") {
					t.Fatal("407 did not cool the gateway for every host")
				}
				out := logs.String()
				proxytest.MustContain(t, out, "candidate=http://user%20name:***@"+gwA.Addr)
				proxytest.MustContain(t, out, "407")
				if strings.Contains(out, "wr0ng") {
					t.Fatalf("log holds the password:\n%s", out)
				}
			})
		}
		noProxyAuth(t, origin)
	})
}
