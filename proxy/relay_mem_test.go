package proxy

import (
	"net"
	"runtime"
	"sync"
	"testing"
)

// TestIdleTunnelStacks: an idle tunnel keeps two small relay stacks, not
// the connection goroutine's grown one (issue 20: ≤ 16 KiB RSS per idle
// tunnel; 12 KiB of stacks per tunnel before, ≈ 4 KiB after).
func TestIdleTunnelStacks(t *testing.T) {
	t.Run("CON-2/idle-tunnel-stacks-under-10KiB", func(t *testing.T) {
		addr, _ := startProxy(t, Config{})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var held []net.Conn
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
			}
		}()
		t.Cleanup(func() {
			ln.Close()
			<-done
			for _, c := range held {
				c.Close()
			}
		})
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		const n = 1000
		for range n {
			openTunnel(t, addr, ln.Addr().String())
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		if per := float64(m1.StackInuse-m0.StackInuse) / n; per > 10<<10 {
			t.Fatalf("%.0f bytes of goroutine stacks per idle tunnel, want ≤ 10 KiB (two small relay stacks)", per)
		}
	})
}
