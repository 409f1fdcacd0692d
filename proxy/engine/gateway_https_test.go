package engine_test

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
)

// TestHTTPSGateways covers https:// gateways (SPEC GW-6): TLS to the
// gateway verified against its own name, HTTP/1.1 proxying inside.
func TestHTTPSGateways(t *testing.T) {
	ca := testworld.NewCA(t, "gateway test CA")
	trust := &tls.Config{RootCAs: ca.Pool}

	t.Run("GW-6/tunnel-plain-http-and-health-inside-tls-with-basic-auth", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw := testworld.NewGateway(t, testworld.WithTLS(ca.Leaf(t, "127.0.0.1")), testworld.WithAuth("u", "p@ss"))
		c := proxytest.Gateway(t, "https://u:p%40ss@"+gw.Addr)
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{c}, GatewayTLS: trust, HealthURL: mustURL(t, origin.URL+"/")})
		if body := proxytest.TunnelGet(t, addr, origin.Addr); body != origin.Greeting() {
			t.Fatalf("tunnel body %q", body)
		}
		resp, body, err := proxytest.Get(t, addr, origin.URL+"/plain", "")
		if err != nil || resp.StatusCode != 200 || body != origin.Greeting() {
			t.Fatalf("GET: %d %q %v", resp.StatusCode, body, err)
		}
		want := "Basic " + base64.StdEncoding.EncodeToString([]byte("u:p@ss"))
		if gw.Connects() != 1 || gw.Requests() != 1 || gw.LastProxyAuthorization() != want {
			t.Fatalf("gateway: %d CONNECT, %d requests, auth %q", gw.Connects(), gw.Requests(), gw.LastProxyAuthorization())
		}
		e.Checker().Run()
		if gw.Requests() != 2 || e.HealthState().Preferred() != c.Key() {
			t.Fatalf("health: %d requests, preferred %q", gw.Requests(), e.HealthState().Preferred())
		}
	})

	t.Run("GW-6/per-gateway-ca-file", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw := testworld.NewGateway(t, testworld.WithTLS(ca.Leaf(t, "127.0.0.1")))
		caFile := filepath.Join(t.TempDir(), "corp ca.pem")
		if err := os.WriteFile(caFile, ca.PEM, 0o600); err != nil {
			t.Fatal(err)
		}
		c := proxytest.Gateway(t, gw.URL+"/?ca="+url.QueryEscape(caFile))
		addr, _ := selProxy(t, engine.Config{Candidates: []candidate.Candidate{c}}) // no GatewayTLS: only the file trusts it
		if body := proxytest.TunnelGet(t, addr, origin.Addr); body != origin.Greeting() {
			t.Fatalf("tunnel body %q", body)
		}
	})

	t.Run("GW-6/unreadable-ca-file-is-a-startup-error", func(t *testing.T) {
		c := proxytest.Gateway(t, "https://127.0.0.1:1?ca="+url.QueryEscape(filepath.Join(t.TempDir(), "missing.pem")))
		if _, err := engine.New(engine.Config{Candidates: []candidate.Candidate{c}}); err == nil || !strings.Contains(err.Error(), "missing.pem") {
			t.Fatalf("err = %v", err)
		}
	})

	other := testworld.NewCA(t, "someone else's CA")
	for _, tc := range []struct {
		name string
		cert tls.Certificate
	}{
		{"GW-6/certificate-for-another-name-skipped-no-request-byte", ca.Leaf(t, "proxy.other.example")},
		{"GW-6/untrusted-certificate-skipped-no-request-byte", other.Leaf(t, "127.0.0.1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			origin := testworld.NewOrigin(t)
			bad := testworld.NewGateway(t, testworld.WithTLS(tc.cert))
			good := testworld.NewGateway(t, testworld.WithTLS(ca.Leaf(t, "127.0.0.1")))
			bc := proxytest.Gateway(t, bad.URL)
			addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{bc, proxytest.Gateway(t, good.URL)}, GatewayTLS: trust, Cooldown: time.Minute})
			if body := proxytest.TunnelGet(t, addr, origin.Addr); body != origin.Greeting() {
				t.Fatalf("tunnel body %q", body)
			}
			if f := proxytest.LastFailure(t, e, bc.Key()); f != "gateway-tls gateway" {
				t.Fatalf("failure %q, want gateway-tls gateway", f)
			}
			// A plain request now goes to the next gateway at once (cooling).
			if resp, body, _ := proxytest.Get(t, addr, origin.URL+"/", ""); resp.StatusCode != 200 || body != origin.Greeting() {
				t.Fatalf("GET %d %q", resp.StatusCode, body)
			}
			testkit.WaitFor(t, 5*time.Second, "the handshake failure at the bad gateway", func() bool { return bad.TLSFailures() >= 1 })
			if bad.AppBytes() != 0 || bad.Connects() != 0 || bad.Requests() != 0 {
				t.Fatalf("the rejected gateway received %d bytes (%d CONNECT, %d requests)", bad.AppBytes(), bad.Connects(), bad.Requests())
			}
			if good.Connects() != 1 || good.Requests() != 1 {
				t.Fatalf("next gateway: %d CONNECT, %d requests", good.Connects(), good.Requests())
			}
		})
	}

	t.Run("GW-6/plain-http-proxy-at-https-url-is-gateway-tls", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		plain := testworld.NewGateway(t)
		c := proxytest.Gateway(t, "https://"+plain.Addr)
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{c, candidate.Direct}, GatewayTLS: trust})
		if body := proxytest.TunnelGet(t, addr, origin.Addr); body != origin.Greeting() {
			t.Fatalf("tunnel body %q", body)
		}
		if f := proxytest.LastFailure(t, e, c.Key()); f != "gateway-tls gateway" {
			t.Fatalf("failure %q", f)
		}
	})
}

// TestKindsHalfClose: a client's FIN travels through every gateway kind as
// a half-close (CON-2): SOCKS5 tunnels are plain TCP; through an https
// gateway the proxy's CloseWrite is TLS close_notify, which the gateway
// turns into its own FIN towards the destination.
func TestKindsHalfClose(t *testing.T) {
	ca := testworld.NewCA(t, "half-close CA")
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	dst := proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
		io.Copy(io.Discard, c) // until the client's FIN
		c.Write(big)
	})
	for _, tc := range []struct {
		name string
		gw   *testworld.Gateway
	}{
		{"CON-2/GW-7/half-close-through-socks5", testworld.NewGateway(t, testworld.WithSOCKS5())},
		{"CON-2/GW-6/half-close-through-https-gateway", testworld.NewGateway(t, testworld.WithTLS(ca.Leaf(t, "127.0.0.1")))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, _ := proxytest.Start(t, proxy.New, engine.Config{Candidates: []candidate.Candidate{proxytest.Gateway(t, tc.gw.URL)}, GatewayTLS: &tls.Config{RootCAs: ca.Pool}})
			c, br := proxytest.Tunnel(t, addr, dst)
			io.WriteString(c, "request bytes")
			c.CloseWrite()
			got, err := io.ReadAll(br)
			if err != nil || !bytes.Equal(got, big) {
				t.Fatalf("got %d bytes (%v), want %d", len(got), err, len(big))
			}
		})
	}
}

// TestKindsProbeAndHTTPSHealth: the TLS probe (CON-1) and an https://
// health check (HC-1: CONNECT, TLS, the origin's status) run through
// SOCKS5 and https gateways too.
func TestKindsProbeAndHTTPSHealth(t *testing.T) {
	ca := testworld.NewCA(t, "probe CA")
	origin := testworld.NewTLSOrigin(t)
	for _, tc := range []struct {
		name string
		gw   *testworld.Gateway
	}{
		{"GW-7/HC-1/CON-1/socks5h", testworld.NewGateway(t, testworld.WithSOCKS5(), testworld.WithRoute("api.example.com:443", origin.Addr))},
		{"GW-6/HC-1/CON-1/https-gateway-tls-in-tls", testworld.NewGateway(t, testworld.WithTLS(ca.Leaf(t, "127.0.0.1")), testworld.WithRoute("api.example.com:443", origin.Addr))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := proxytest.Gateway(t, tc.gw.URL)
			// The second candidate is a refused gateway, never direct: no
			// path here may resolve api.example.com (SPEC "Test safety").
			spare := proxytest.Gateway(t, "http://"+testworld.RefusedAddr(t))
			cfg := engine.Config{Candidates: []candidate.Candidate{c, spare}, TLSProbe: true, GatewayTLS: &tls.Config{RootCAs: ca.Pool},
				HealthURL: mustURL(t, "https://api.example.com/health"), HealthTLS: &tls.Config{RootCAs: origin.CertPool}}
			addr, e := selProxy(t, cfg)
			status, conn, _ := proxytest.Connect(t, addr, "api.example.com:443", "")
			if status != 200 {
				t.Fatalf("CONNECT: %d", status)
			}
			if body := selTLSGet(t, conn, origin.CertPool); body != origin.Greeting() {
				t.Fatalf("body %q", body)
			}
			if e.TLSProbes() != 1 {
				t.Fatalf("TLS probes %d, want 1", e.TLSProbes())
			}
			e.Checker().Run()
			if p := e.HealthState().Preferred(); p != c.Key() {
				t.Fatalf("health preferred %q, want %s (results %+v)", p, c, e.Status().Health.Results)
			}
		})
	}
}
