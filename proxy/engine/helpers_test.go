package engine_test

// Helpers of the tests that drive the engine through a proxy server and
// look at what it decided; what the tests of the front end use too is in
// internal/testbed/proxytest.

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"testing"

	"go.uber.org/goleak"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// selProxy serves cfg on loopback and returns its address and engine. The
// engine is closed (health loop stopped) and the server shut down by
// t.Cleanup.
func selProxy(t *testing.T, cfg engine.Config) (string, *engine.Engine) {
	t.Helper()
	addr, srv := proxytest.Start(t, proxy.New, cfg)
	e := srv.Engine()
	t.Cleanup(e.Close) // runs before the shutdown registered by Start
	return addr, e
}

// selTLSGet runs TLS over an open tunnel (trusting pool, name example.com,
// which the testworld certificate covers) and returns the body of GET /.
func selTLSGet(t *testing.T, c net.Conn, pool *x509.CertPool) string {
	t.Helper()
	tc := tls.Client(c, &tls.Config{RootCAs: pool, ServerName: "example.com"})
	if _, err := io.WriteString(tc, "GET / HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatalf("TLS through the tunnel: %v", err)
	}
	_, body := proxytest.ReadResponse(t, bufio.NewReader(tc), "GET")
	return body
}

// selPhases lists "candidate phase" of a decision's failures.
func selPhases(d statusdoc.Decision) []string {
	var out []string
	for _, f := range d.Failed {
		out = append(out, f.Candidate+" "+f.Phase)
	}
	return out
}

// planKeys returns the candidate keys of e.plan(host, port) in order.
func planKeys(e *engine.Engine, host string, port int) []string {
	atts, _ := e.Plan(host, port)
	keys := make([]string, len(atts))
	for i, a := range atts {
		keys[i] = a.Cand().Key()
	}
	return keys
}
