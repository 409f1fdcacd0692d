package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testworld"
)

// TestGatewayKindsEndToEnd runs the binary with an https:// gateway that
// only a test CA trusts (SPEC GW-6): SSL_CERT_FILE, as Go reads it, makes
// it trusted; without it the gateway fails its handshake and direct serves.
func TestGatewayKindsEndToEnd(t *testing.T) {
	curl := needCurl(t)
	ca := testworld.NewCA(t, "e2e gateway CA")
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	origin := testworld.NewOrigin(t)
	gw := testworld.NewGateway(t, testworld.WithTLS(ca.Leaf(t, "127.0.0.1")))
	// run takes the subtest's t, so a failure is reported under its name.
	run := func(t *testing.T, env ...string) string {
		t.Helper()
		out, errOut, code := launch(t, env, "run", "--listen-port", "0", "--upstream-url", gw.URL, "--loopback-direct=false",
			"--health-url", "", "--", curl, "-sS", "-f", "--noproxy", "", origin.URL+"/kinds")
		if code != 0 {
			t.Fatalf("status %d; stdout %q stderr %q", code, out, errOut)
		}
		return out
	}
	t.Run("GW-6/SSL_CERT_FILE-trusts-the-gateway", func(t *testing.T) {
		if out := run(t, "SSL_CERT_FILE="+caFile); out != origin.Greeting() || gw.Requests() != 1 {
			t.Fatalf("child printed %q, gateway saw %d requests", out, gw.Requests())
		}
	})
	t.Run("GW-6/untrusted-gateway-skipped-direct-serves", func(t *testing.T) {
		before := gw.Requests()
		out := run(t, "SSL_CERT_DIR="+t.TempDir()) // no roots that know the test CA
		if !strings.HasPrefix(out, "origin ") || gw.Requests() != before || gw.TLSFailures() == 0 {
			t.Fatalf("child printed %q, gateway requests %d→%d, TLS failures %d", out, before, gw.Requests(), gw.TLSFailures())
		}
	})
}
