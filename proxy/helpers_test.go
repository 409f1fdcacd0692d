package proxy

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// cooling reports whether the status document shows candidate key cooling
// for dest ("host:port", route.Dest): gateway-wide, or by a running
// host-scoped cooldown for dest (SPEC CD-1), as route.Cooldowns.Cooling
// answers the engine.
func cooling(e *Engine, key, dest string) bool {
	st := e.Status()
	for _, c := range st.Candidates {
		if c.Key != key {
			continue
		}
		if c.State == statusdoc.StateCooling {
			return true
		}
		for _, h := range c.HostCooldowns {
			if h.Host == dest && h.Until.After(st.Now) {
				return true
			}
		}
	}
	return false
}
