package engine_test

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
)

// TestSOCKSGateways covers SOCKS5 gateways (SPEC GW-7) on every path the
// engine opens, with the in-process testworld SOCKS5 gateway.
func TestSOCKSGateways(t *testing.T) {
	t.Run("GW-7/socks5h-tunnel-plain-http-and-health-with-rfc1929", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw := testworld.NewGateway(t, testworld.WithSOCKS5(), testworld.WithAuth("gw user", "p@ss"))
		c := proxytest.Gateway(t, "socks5h://gw%20user:p%40ss@"+gw.Addr)
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{c}, HealthURL: mustURL(t, origin.URL+"/")})

		if body := proxytest.TunnelGet(t, addr, origin.Addr); body != origin.Greeting() {
			t.Fatalf("tunnel body %q", body)
		}
		resp, body, err := proxytest.Get(t, addr, origin.URL+"/plain?q=1", "Proxy-Authorization: Basic Y2xpZW50OnNlY3JldA==\r\n")
		if err != nil || resp.StatusCode != 200 || body != origin.Greeting() {
			t.Fatalf("GET: %d %q %v", resp.StatusCode, body, err)
		}
		if gw.Connects() != 2 || gw.LastProxyAuthorization() != "socks5 gw user" {
			t.Fatalf("gateway saw %d CONNECTs, auth %q", gw.Connects(), gw.LastProxyAuthorization())
		}
		seen := origin.Requests()
		last := seen[len(seen)-1]
		// Through SOCKS5 the origin gets origin-form and no proxy credentials.
		if last.RequestURI != "/plain?q=1" || last.Header.Get("Proxy-Authorization") != "" {
			t.Fatalf("origin saw %q, Proxy-Authorization %q", last.RequestURI, last.Header.Get("Proxy-Authorization"))
		}
		e.Checker().Run()
		if gw.Connects() != 3 || e.HealthState().Preferred() != c.Key() {
			t.Fatalf("health check: %d CONNECTs, preferred %q", gw.Connects(), e.HealthState().Preferred())
		}
		// OPS-2: the status shows the kind and never the password.
		st := e.Status()
		doc, _ := json.Marshal(st)
		if st.Candidates[0].Kind != "socks5h" || st.Candidates[0].Candidate != "socks5h://gw%20user:***@"+gw.Addr || strings.Contains(string(doc), "p@ss") {
			t.Fatalf("status candidate %+v", st.Candidates[0])
		}
	})

	t.Run("GW-7/socks5-resolves-names-socks5h-sends-them", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		_, port, _ := strings.Cut(origin.Addr, ":")
		local := testworld.NewGateway(t, testworld.WithSOCKS5())
		remote := testworld.NewGateway(t, testworld.WithSOCKS5())
		for _, tc := range []struct {
			url  string
			gw   *testworld.Gateway
			want string
		}{{"socks5://" + local.Addr, local, "127.0.0.1:" + port}, {"socks5h://" + remote.Addr, remote, "localhost:" + port}} {
			addr, _ := selProxy(t, engine.Config{Candidates: []candidate.Candidate{proxytest.Gateway(t, tc.url)}})
			// "localhost" is in /etc/hosts: resolving it sends no DNS query.
			if body := proxytest.TunnelGet(t, addr, "localhost:"+port); body != origin.Greeting() {
				t.Fatalf("%s: tunnel body %q", tc.url, body)
			}
			if got := tc.gw.Targets(); !slices.Equal(got, []string{tc.want}) {
				t.Errorf("%s: gateway asked for %v, want %s", tc.url, got, tc.want)
			}
		}
	})

	t.Run("GW-7/ipv6-destination-atyp-ipv6", func(t *testing.T) {
		dst := proxytest.TCPServer(t, "[::1]:0", func(c net.Conn) { c.Write([]byte("six")) })
		gw := testworld.NewGateway(t, testworld.WithSOCKS5())
		addr, _ := selProxy(t, engine.Config{Candidates: []candidate.Candidate{proxytest.Gateway(t, "socks5://"+gw.Addr)}})
		status, _, br := proxytest.Connect(t, addr, dst, "")
		b := make([]byte, 3)
		if _, err := io.ReadFull(br, b); status != 200 || err != nil || string(b) != "six" {
			t.Fatalf("CONNECT %s: %d, read %q %v", dst, status, b, err)
		}
		if got := gw.Targets(); !slices.Equal(got, []string{dst}) {
			t.Fatalf("gateway asked for %v, want %s", got, dst)
		}
	})

	t.Run("GW-7/dead-socks-gateway-first-next-serves", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw := testworld.NewGateway(t, testworld.WithSOCKS5())
		dead := proxytest.Gateway(t, "socks5h://"+testworld.RefusedAddr(t))
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{dead, proxytest.Gateway(t, gw.URL)}, Cooldown: 30 * time.Second})
		if body := proxytest.TunnelGet(t, addr, origin.Addr); body != origin.Greeting() {
			t.Fatalf("tunnel body %q", body)
		}
		if f := proxytest.LastFailure(t, e, dead.Key()); f != "gateway-connect gateway" {
			t.Fatalf("dead gateway failure %q", f)
		}
		resp, body, _ := proxytest.Get(t, addr, origin.URL+"/", "")
		if resp.StatusCode != 200 || body != origin.Greeting() || gw.Connects() != 2 {
			t.Fatalf("GET %d %q, %d CONNECTs", resp.StatusCode, body, gw.Connects())
		}
	})

	t.Run("GW-7/wrong-password-gateway-cooldown-next-serves", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		locked := testworld.NewGateway(t, testworld.WithSOCKS5(), testworld.WithAuth("gwuser", "right"))
		next := testworld.NewGateway(t, testworld.WithSOCKS5())
		bad := proxytest.Gateway(t, "socks5h://gwuser:wrong@"+locked.Addr)
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{bad, proxytest.Gateway(t, next.URL)}, Cooldown: 30 * time.Second})
		resp, body, _ := proxytest.Get(t, addr, origin.URL+"/", "")
		if resp.StatusCode != 200 || body != origin.Greeting() {
			t.Fatalf("GET %d %q", resp.StatusCode, body)
		}
		if f := proxytest.LastFailure(t, e, bad.Key()); f != "socks-handshake gateway" {
			t.Fatalf("failure %q, want socks-handshake gateway", f)
		}
		if !e.Cooldowns().Cooling(bad.Key(), "other.test:443") {
			t.Fatal("refused credentials must cool the gateway for every host")
		}
	})

	t.Run("GW-7/reply-host-unreachable-is-host-scoped", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw := testworld.NewGateway(t, testworld.WithSOCKS5())
		gw.SetMode(testworld.ModeSOCKSReply(0x04))
		c := proxytest.Gateway(t, gw.URL)
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{c, candidate.Direct}, Cooldown: 30 * time.Second})
		if body := proxytest.TunnelGet(t, addr, origin.Addr); body != origin.Greeting() {
			t.Fatalf("tunnel body %q", body)
		}
		if f := proxytest.LastFailure(t, e, c.Key()); f != "connect-response host" {
			t.Fatalf("failure %q, want connect-response host", f)
		}
		if !e.Cooldowns().Cooling(c.Key(), origin.Addr) || e.Cooldowns().Cooling(c.Key(), "other.test:80") {
			t.Fatal("want a cooldown for this host only")
		}
	})

	t.Run("GW-7/garbage-and-silence-are-the-gateways", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		for _, m := range []testworld.Mode{testworld.ModeStatus(400), testworld.ModeSOCKSReply(0x07), testworld.ModeReset} {
			gw := testworld.NewGateway(t, testworld.WithSOCKS5())
			gw.SetMode(m)
			c := proxytest.Gateway(t, gw.URL)
			addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{c, candidate.Direct}, Cooldown: 30 * time.Second})
			if body := proxytest.TunnelGet(t, addr, origin.Addr); body != origin.Greeting() {
				t.Fatalf("%s: tunnel body %q", m, body)
			}
			if f := proxytest.LastFailure(t, e, c.Key()); !strings.HasSuffix(f, " gateway") {
				t.Errorf("%s: failure %q, want gateway tier", m, f)
			}
		}
	})

	t.Run("GW-7/origin-5xx-through-socks-is-the-origins-answer", func(t *testing.T) {
		origin := testworld.NewOriginHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
		}))
		gw := testworld.NewGateway(t, testworld.WithSOCKS5())
		c := proxytest.Gateway(t, gw.URL)
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{c, candidate.Direct}})
		resp, _, _ := proxytest.Get(t, addr, origin.URL+"/", "")
		if resp.StatusCode != 502 || origin.Count() != 1 || proxytest.LastFailure(t, e, c.Key()) != "" {
			t.Fatalf("status %d, origin saw %d, failure %q", resp.StatusCode, origin.Count(), proxytest.LastFailure(t, e, c.Key()))
		}
	})

	t.Run("GW-7/tls-probe-through-socks5h", func(t *testing.T) {
		origin := testworld.NewTLSOrigin(t)
		gw := testworld.NewGateway(t, testworld.WithSOCKS5(), testworld.WithRoute("api.example.com:443", origin.Addr))
		// A refused second gateway, never direct: nothing may resolve
		// api.example.com (SPEC "Test safety"); two candidates make the probe run.
		spare := proxytest.Gateway(t, "http://"+testworld.RefusedAddr(t))
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{proxytest.Gateway(t, gw.URL), spare}, TLSProbe: true})
		status, conn, _ := proxytest.Connect(t, addr, "api.example.com:443", "")
		if status != 200 {
			t.Fatalf("CONNECT: %d", status)
		}
		if body := selTLSGet(t, conn, origin.CertPool); body != origin.Greeting() {
			t.Fatalf("body %q", body)
		}
		if e.TLSProbes() != 1 || gw.Connects() != 2 {
			t.Fatalf("probes %d, gateway CONNECTs %d (probe + tunnel)", e.TLSProbes(), gw.Connects())
		}
	})

	t.Run("GW-7/go-api-routes-through-socks", func(t *testing.T) {
		plain := testworld.NewOrigin(t)
		secure := testworld.NewTLSOrigin(t)
		gw := testworld.NewGateway(t, testworld.WithSOCKS5())
		e, err := engine.New(engine.Config{Candidates: []candidate.Candidate{proxytest.Gateway(t, gw.URL)}})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		tr := &engine.Transport{Engine: e, TLSClientConfig: &tls.Config{RootCAs: secure.CertPool}}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr}
		for _, o := range []*testworld.Origin{plain, secure} {
			resp, err := client.Get(o.URL + "/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("%s: %d", o.URL, resp.StatusCode)
			}
		}
		if gw.Connects() != 2 {
			t.Fatalf("gateway CONNECTs %d, want one per origin", gw.Connects())
		}
	})
}
