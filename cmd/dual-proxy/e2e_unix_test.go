//go:build unix

package main

import (
	"os/exec"
	"syscall"
	"testing"
)

// stoppedStatus is the exit status of a dual-proxy stopped by testworld's Instance.Stop:
// SIGTERM, which it answers with a graceful shutdown (SPEC LIS-3).
const stoppedStatus = 0

// needCurl returns curl's path; the end-to-end suite needs it here (.ci/run installs it).
func needCurl(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("curl is required for the end-to-end tests (.ci/run installs it)")
	}
	return p
}

func TestSignalExitStatus(t *testing.T) {
	t.Run("RUN-3/exit-statuses/killed-by-sigterm-143", func(t *testing.T) {
		// A child ended by a signal: 128+N, as a shell reports it (Windows has no signals).
		_, errOut, status := launch(t, nil, runArgs([]string{"sh", "-c", "kill -TERM $$"})...)
		if want := 128 + int(syscall.SIGTERM); status != want {
			t.Fatalf("status %d, want %d (stderr %q)", status, want, errOut)
		}
	})
}

// envLabel is the source label --print-config gives a parent's proxy variable: its own name.
func envLabel(name string) string { return name }

func TestGatewayTrustFromSSLCertFile(t *testing.T) {
	// Go's crypto/x509 reads SSL_CERT_FILE and SSL_CERT_DIR here; on Windows it verifies
	// against the system store instead (?ca=FILE works everywhere: TestGatewayKindsEndToEnd).
	w := newKindsWorld(t)
	t.Run("GW-6/SSL_CERT_FILE-trusts-the-gateway", func(t *testing.T) {
		if out := w.run(t, w.gw.URL, "SSL_CERT_FILE="+w.caFile); out != w.origin.Greeting() || w.gw.Requests() != 1 {
			t.Fatalf("child printed %q, gateway saw %d requests", out, w.gw.Requests())
		}
	})
}
