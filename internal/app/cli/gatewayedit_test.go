package cli

import (
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// TestGatewayEditComparesHostPort: the proxy keeps one candidate per
// host:port (SPEC GW-2), so `dual-proxy settings gateway add` of a listed
// host:port with credentials changes that gateway in place and says so,
// an add of the gateway as listed says it is there, remove by host:port
// removes the gateway with credentials, and a list naming one host:port
// twice is refused naming both items (SPEC OPS-7).
func TestGatewayEditComparesHostPort(t *testing.T) {
	env := liveEnv(t)
	addr := testworld.RefusedAddr(t)
	startLauncher(t, env, "--gateway", "http://"+addr)
	registeredInstance(t, env)
	list := func(t *testing.T, want string) {
		t.Helper()
		if out, errOut, st := runCmdEnv(t, DualProxy, env, "settings", "gateway", "list"); st != 0 || out != want {
			t.Fatalf("gateway list: %d %q %q, want %q", st, out, errOut, want)
		}
	}
	t.Run("OPS-7/gateway-add-with-credentials-replaces-the-gateway-of-its-host-port", func(t *testing.T) {
		out, errOut, st := runCmdEnv(t, DualProxy, env, "settings", "gateway", "add", "http://alice:pw@"+addr)
		if st != 0 || !strings.Contains(out, "replaced gateway[0] http://"+addr+" with http://alice:***@"+addr+"\n") || strings.Contains(out+errOut, "pw@") {
			t.Fatalf("gateway add: %d %q %q", st, out, errOut)
		}
		list(t, "http://alice:***@"+addr+"\n")
	})
	t.Run("OPS-7/gateway-add-of-the-listed-gateway-says-it-is-there", func(t *testing.T) {
		out, errOut, st := runCmdEnv(t, DualProxy, env, "settings", "gateway", "add", "alice:***@"+addr)
		if st != 0 || out != "gateway[0] http://alice:***@"+addr+" is already a gateway as given: nothing changed\n" {
			t.Fatalf("gateway add: %d %q %q", st, out, errOut)
		}
		list(t, "http://alice:***@"+addr+"\n")
	})
	t.Run("OPS-7/settings-set-of-two-gateways-of-one-host-port-refused", func(t *testing.T) {
		_, errOut, st := runCmdEnv(t, DualProxy, env, "settings", "set", "gateway="+addr+",http://bob:pw@"+addr)
		if st != 2 || !strings.Contains(errOut, "gateway[1]: names the host:port of gateway[0]") || strings.Contains(errOut, "pw@") {
			t.Fatalf("settings set: %d %q", st, errOut)
		}
		list(t, "http://alice:***@"+addr+"\n")
	})
	t.Run("OPS-7/gateway-remove-by-host-port-removes-the-gateway-with-credentials", func(t *testing.T) {
		out, errOut, st := runCmdEnv(t, DualProxy, env, "settings", "gateway", "remove", "http://"+addr)
		if st != 0 || !strings.Contains(out, "removed gateway[0] http://alice:***@"+addr+"\n") {
			t.Fatalf("gateway remove: %d %q %q", st, out, errOut)
		}
		list(t, "")
	})
}
