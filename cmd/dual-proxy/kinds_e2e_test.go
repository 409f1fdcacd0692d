package main

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// kindsWorld is an https:// gateway that only a test CA trusts (SPEC GW-6), the CA's PEM
// file and a loopback origin.
type kindsWorld struct {
	caFile string
	origin *testworld.Origin
	gw     *testworld.Gateway
}

func newKindsWorld(t *testing.T) *kindsWorld {
	t.Helper()
	ca := testworld.NewCA(t, "e2e gateway CA")
	w := &kindsWorld{caFile: filepath.Join(t.TempDir(), "ca.pem"), origin: testworld.NewOrigin(t)}
	if err := os.WriteFile(w.caFile, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	w.gw = testworld.NewGateway(t, testworld.WithTLS(ca.Leaf(t, "127.0.0.1")))
	return w
}

// run launches a child fetching the origin with gateway as the first gateway and returns
// what the child printed. It takes the subtest's t, so a failure is reported under its name.
func (w *kindsWorld) run(t *testing.T, gateway string, env ...string) string {
	t.Helper()
	// Racing off: the gateway's TLS handshake on a busy machine may take
	// longer than the race delay, and direct (the origin is on loopback)
	// would then serve the request the test means for the gateway (ORD-6).
	out, errOut, code := launch(t, env, runArgs(testworld.Child(t, "fetch", w.origin.URL+"/kinds"), "--upstream-url", gateway, "--loopback-direct=false", "--race-delay-ms", "0")...)
	if code != 0 {
		t.Fatalf("status %d; stdout %q stderr %q", code, out, errOut)
	}
	return out
}

// TestGatewayKindsEndToEnd runs the binary with an https:// gateway that only a test CA
// trusts: ?ca=FILE in its URL makes it trusted; with the system roots it fails its handshake
// and direct serves. (SSL_CERT_FILE, which Go reads on Unix: e2e_unix_test.go.)
func TestGatewayKindsEndToEnd(t *testing.T) {
	w := newKindsWorld(t)
	t.Run("GW-6/ca-file-in-the-url-trusts-the-gateway", func(t *testing.T) {
		before := w.gw.Requests()
		if out := w.run(t, w.gw.URL+"/?ca="+url.QueryEscape(w.caFile)); out != w.origin.Greeting() || w.gw.Requests() != before+1 {
			t.Fatalf("child printed %q, gateway requests %d→%d", out, before, w.gw.Requests())
		}
	})
	t.Run("GW-6/untrusted-gateway-skipped-direct-serves", func(t *testing.T) {
		before := w.gw.Requests()
		out := w.run(t, w.gw.URL, "SSL_CERT_DIR="+t.TempDir()) // no roots that know the test CA
		if !strings.HasPrefix(out, "origin ") || w.gw.Requests() != before || w.gw.TLSFailures() == 0 {
			t.Fatalf("child printed %q, gateway requests %d→%d, TLS failures %d", out, before, w.gw.Requests(), w.gw.TLSFailures())
		}
	})
}
