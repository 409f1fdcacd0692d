//go:build interop && linux

// Interop suite of the binary with real gateways (Debian's microsocks):
// `go test -race -tags interop -run Interop ./cmd/dual-proxy/`.
package main

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/realgw"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

func TestInteropParentSOCKS(t *testing.T) {
	curl := needCurl(t)
	origin := testworld.NewOrigin(t)
	socks := realgw.Microsocks(t, "gwuser", "gw:pass")
	allProxy := "socks5h://gwuser:" + url.QueryEscape("gw:pass") + "@" + socks.Addr
	env := []string{"ALL_PROXY=" + allProxy}

	t.Run("GW-7/parent-all-proxy-socks5h-in-print-config", func(t *testing.T) {
		out, errOut, code := launch(t, env, "run", "--upstream-host", "", "--print-config", "--", "true")
		if code != 0 || strings.Contains(out, "gw:pass") || strings.Contains(out, "gw%3Apass") {
			t.Fatalf("status %d stderr %q output:\n%s", code, errOut, out)
		}
		mustContain(t, out, "1. socks5h://gwuser:***@"+socks.Addr)
		mustContain(t, out, "socks5h  (env:ALL_PROXY)")
	})

	t.Run("GW-7/ENV-1/parent-all-proxy-socks5h-carries-traffic-child-gets-http", func(t *testing.T) {
		// The child prints its ALL_PROXY, fetches the origin through the
		// proxy, then the proxy's status (decisions name the candidate).
		script := `echo "child ALL_PROXY=$ALL_PROXY"; ` + curl + ` -sS -f --noproxy '' -x "$HTTP_PROXY" ` + origin.URL + `/via-socks && echo; ` +
			curl + ` -sS -f --noproxy '' "$HTTP_PROXY/_dual-proxy/status"`
		// Racing off: the decision must be the SOCKS5 gateway's, and on a busy machine
		// direct to the loopback origin could win a race (ORD-6).
		out, errOut, code := launch(t, env, "run", "--listen-port", "0", "--upstream-host", "", "--loopback-direct=false",
			"--race-delay-ms", "0", "--health-url", "", "--", "sh", "-c", script)
		if code != 0 {
			t.Fatalf("status %d; stdout %q stderr %q", code, out, errOut)
		}
		lines := strings.SplitN(out, "\n", 3)
		if len(lines) < 3 || !strings.HasPrefix(lines[0], "child ALL_PROXY=http://127.0.0.1:") || lines[1] != strings.TrimSpace(origin.Greeting()) {
			t.Fatalf("child output:\n%s", out)
		}
		var st statusdoc.Status
		if err := json.Unmarshal([]byte(lines[2]), &st); err != nil {
			t.Fatalf("status JSON: %v\n%s", err, lines[2])
		}
		var served []string
		for _, d := range st.Decisions {
			served = append(served, d.Candidate)
		}
		if len(served) == 0 || served[0] != "socks5h://gwuser:***@"+socks.Addr {
			t.Fatalf("decisions %v, want the request served by the parent's SOCKS5 gateway", served)
		}
		if strings.Contains(out, "gw:pass") {
			t.Fatal("password in the status output")
		}
	})
}
