package main

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// startServe runs `dual-proxy [args]` in the background with a clean
// environment (baseEnv plus env) and returns the address it logged as
// listening, a function returning its stderr so far, and a stop function
// that stops it (SIGTERM on Unix, SPEC LIS-3) and returns the exit status
// (testworld.StartInstance; t's end stops it too).
func startServe(t *testing.T, env []string, args ...string) (addr string, logs func() string, stop func() int) {
	t.Helper()
	in := testworld.StartInstance(t, bin, append(baseEnv(t.TempDir()), env...), args...)
	return in.Addr, in.Stderr, in.Stop
}

func TestStatusEndToEnd(t *testing.T) {
	t.Run("OPS-2/status-against-running-instance", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		dead := testworld.RefusedAddr(t)
		addr, logs, stop := startServe(t, nil, "--listen-port", "0", "--health-url", "", "--loopback-direct=false",
			"--upstream-url", "http://e2e:E2E-PASSWORD@"+dead, "--log-level", "debug")

		// One plain request whose path and query must stay private.
		proxyURL, _ := url.Parse("http://" + addr)
		tr := &http.Transport{Proxy: http.ProxyURL(proxyURL)}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 20 * time.Second}).Get(origin.URL + "/e2e-private?key=E2E-QUERY")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != origin.Greeting() {
			t.Fatalf("through the proxy: %d %q", resp.StatusCode, body)
		}

		out, errOut, status := launch(t, nil, "status", "--addr", addr)
		if status != 0 {
			t.Fatalf("status exited %d: %q", status, errOut)
		}
		for _, want := range []string{"CANDIDATES (default order)", "http://e2e:***@" + dead, "cooling", "gateway-connect", "direct",
			"PER-HOST CACHE", "RECENT DECISIONS", "127.0.0.1"} {
			mustContain(t, out, want)
		}
		// The page is served on the same listener.
		pr, err := (&http.Transport{Proxy: nil}).RoundTrip(mustRequest(t, "http://"+addr+"/_dual-proxy/"))
		if err != nil {
			t.Fatal(err)
		}
		pr.Body.Close()
		if pr.StatusCode != 200 || !strings.HasPrefix(pr.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("page: %d %q", pr.StatusCode, pr.Header.Get("Content-Type"))
		}
		// POOL-13: the page links to /pool/; without a pool configuration
		// that answers 404 saying why.
		pp, err := (&http.Transport{Proxy: nil}).RoundTrip(mustRequest(t, "http://"+addr+"/pool/"))
		if err != nil {
			t.Fatal(err)
		}
		pbody, _ := io.ReadAll(pp.Body)
		pp.Body.Close()
		if pp.StatusCode != 404 || !strings.Contains(string(pbody), "no model pool on this instance") {
			t.Fatalf("POOL-13: /pool/ without a pool: %d %q", pp.StatusCode, pbody)
		}
		// POOL-14: `pool test` against it passes that line on.
		_, errOut, status = launch(t, nil, "pool", "test", "--addr", addr, "p", "m")
		if status != 1 || !strings.Contains(errOut, addr+": 404 no model pool on this instance") {
			t.Fatalf("POOL-14: pool test on an instance without a pool: %d %q", status, errOut)
		}

		if code := stop(); code != stoppedStatus {
			t.Fatalf("dual-proxy exited %d when stopped, want %d", code, stoppedStatus)
		}
		all := out + logs()
		for _, secret := range []string{"E2E-PASSWORD", "E2E-QUERY", "/e2e-private"} {
			if strings.Contains(all, secret) {
				t.Errorf("OPS-1: %q in status output or logs:\n%s", secret, all)
			}
		}
		mustContain(t, logs(), "phase=gateway-connect")
	})

	t.Run("OPS-1/unsupported-proxy-warning-once-redacted", func(t *testing.T) {
		// socks4a is refused (GW-3); an https URL with a path is invalid.
		socks := "socks4a://sockuser:SOCKS-PW@127.0.0.1:1080"
		_, logs, stop := startServe(t, []string{"ALL_PROXY=" + socks, "all_proxy=" + socks, "HTTPS_PROXY=https://h:HTTPS-PW@127.0.0.1:8443/path"},
			"--listen-port", "0", "--health-url", "")
		if code := stop(); code != stoppedStatus {
			t.Fatalf("exit %d, want %d", code, stoppedStatus)
		}
		out := logs()
		if n := strings.Count(out, "socks4a://sockuser:***@127.0.0.1:1080"); n != 1 {
			t.Errorf("socks warning logged %d times, want once:\n%s", n, out)
		}
		if n := strings.Count(out, "https://h:***@127.0.0.1:8443"); n != 1 {
			t.Errorf("https warning logged %d times, want once:\n%s", n, out)
		}
		if strings.Contains(out, "SOCKS-PW") || strings.Contains(out, "HTTPS-PW") {
			t.Errorf("password in logs:\n%s", out)
		}
	})

	t.Run("OPS-2/status-against-closed-port-exits-1", func(t *testing.T) {
		closed := testworld.RefusedAddr(t)
		out, errOut, status := launch(t, nil, "status", "--addr", closed)
		if status != 1 || out != "" || strings.Count(errOut, "\n") != 1 {
			t.Fatalf("status %d stdout %q stderr %q", status, out, errOut)
		}
		mustContain(t, errOut, "dual-proxy status: cannot reach a proxy at "+closed)
	})
}

// TestSystemdUnit checks contrib/dual-proxy.service (SPEC OPS-3): its
// ExecStart flags are accepted by this binary, it restarts on failure and
// installs into the user's default.target. .ci/run also runs
// `systemd-analyze verify` on it.
func TestSystemdUnit(t *testing.T) {
	raw, err := os.ReadFile("../../contrib/dual-proxy.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(raw)
	var exec []string
	for _, line := range strings.Split(unit, "\n") {
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			exec = strings.Fields(v)
		}
	}
	t.Run("OPS-3/execstart-flags-valid", func(t *testing.T) {
		if len(exec) < 2 || exec[0] != "%h/go/bin/dual-proxy" {
			t.Fatalf("ExecStart %q", exec)
		}
		out, errOut, status := launch(t, nil, append(exec[1:], "--print-config")...)
		if status != 0 {
			t.Fatalf("unit flags rejected: status %d %q", status, errOut)
		}
		mustContain(t, out, "127.0.0.1:7898")
		mustContain(t, out, "log-format:")
		// The env file's settings must not be overridden by ExecStart flags.
		out, _, _ = launch(t, []string{"LISTEN_PORT=17999", "LISTEN_HOST=::1"}, append(exec[1:], "--print-config")...)
		mustContain(t, out, "[::1]:17999")
	})
	t.Run("OPS-3/restart-and-install", func(t *testing.T) {
		for _, want := range []string{"\nRestart=on-failure\n", "\nWantedBy=default.target\n", "\nNoNewPrivileges=yes\n", "\nKillSignal=SIGTERM\n", "\nExecReload=/bin/kill -HUP $MAINPID\n"} {
			if !strings.Contains(unit, want) {
				t.Errorf("unit lacks %q", strings.TrimSpace(want))
			}
		}
		// Options that need mount namespaces fail in user units without
		// PrivateUsers; the unit must not use them.
		for _, bad := range []string{"ProtectSystem=", "ProtectHome=", "PrivateTmp=", "User=", "CapabilityBoundingSet="} {
			if strings.Contains(unit, "\n"+bad) {
				t.Errorf("unit uses %q, which does not work in a user unit", bad)
			}
		}
	})
}

func mustRequest(t *testing.T, u string) *http.Request {
	t.Helper()
	r, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
