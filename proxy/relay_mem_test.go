package proxy

import (
	"runtime"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// TestIdleTunnelStacks: an idle tunnel keeps two small relay stacks, not
// the connection goroutine's grown one (≤ 16 KiB RSS per idle
// tunnel; 12 KiB of stacks per tunnel before, ≈ 4 KiB after on Linux). The
// budget is per OS (idleTunnelStackBudget): Windows' smallest goroutine
// stack is 8 KiB.
func TestIdleTunnelStacks(t *testing.T) {
	t.Run("CON-2/idle-tunnel-keeps-two-small-stacks", func(t *testing.T) {
		addr, _ := proxytest.Start(t, New, Config{})
		dest := testworld.Blackhole(t) // accepts and stays silent: the tunnels stay idle
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		const n = 1000
		for range n {
			proxytest.Tunnel(t, addr, dest)
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		if per := float64(m1.StackInuse-m0.StackInuse) / n; per > idleTunnelStackBudget {
			t.Fatalf("%.0f bytes of goroutine stacks per idle tunnel, want ≤ %d KiB (two small relay stacks)", per, idleTunnelStackBudget>>10)
		}
	})
}
