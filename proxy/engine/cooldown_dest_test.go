package engine_test

import (
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
)

// TestCooldownIsPerDestination: a host-scoped cooldown is keyed by host and
// port (SPEC CD-1b), so a dead port on a host leaves that host's other ports
// on their normal order.
func TestCooldownIsPerDestination(t *testing.T) {
	t.Run("CD-1b/dead-port-does-not-cool-other-ports-of-the-host", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		dead := testworld.RefusedAddr(t) // 127.0.0.1:P, nothing listening
		gw := testworld.NewGateway(t)
		c := proxytest.Gateway(t, gw.URL)
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{c, candidate.Direct}, Cooldown: time.Minute})

		if status, _, _ := proxytest.Connect(t, addr, dead, ""); status == 200 {
			t.Fatalf("CONNECT to the dead port %s succeeded", dead)
		}
		if !e.Cooldowns().Cooling(c.Key(), dead) {
			t.Fatalf("the gateway's 502 for %s must cool it for that destination", dead)
		}
		if e.Cooldowns().Cooling(c.Key(), origin.Addr) {
			t.Fatalf("%s failing cooled %s", dead, origin.Addr)
		}
		status, conn, _ := proxytest.Connect(t, addr, origin.Addr, "")
		if status != 200 {
			t.Fatalf("CONNECT %s: %d", origin.Addr, status)
		}
		conn.Close()
		if d := proxytest.LastDecision(t, e); d.Candidate != c.String() || len(d.Failed) != 0 {
			t.Fatalf("decision %+v: want the gateway first and serving %s", d, origin.Addr)
		}
	})
}
