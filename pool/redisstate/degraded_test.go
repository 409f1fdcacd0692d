package redisstate

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/balance/statetest"
	"github.com/dual-proxy/dual-proxy/pool/config"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
)

// closedPort returns a loopback address nobody listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// blackhole accepts connections and never answers (a hung Redis).
func blackhole(t *testing.T) string {
	return testkit.ServeConns(t, func(net.Conn) {}) // each connection stays open until the test ends
}

// TestUnreachableStore: the contract holds on local state while Redis is
// unreachable, and no call waits past the state deadline (SPEC POOL-23).
func TestUnreachableStore(t *testing.T) {
	t.Run("POOL-23/contract-on-local-state-when-refused", func(t *testing.T) {
		url := "redis://user:hunter2pw@" + closedPort(t) + "/0"
		statetest.Run(t, func(t *testing.T) balance.State {
			_, pc := statetest.Pool()
			st, err := New(Options{URL: url, Prefix: "dp:test:", Timeout: stateTimeout, Config: &config.Config{Pools: []*config.PoolConfig{pc}}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		})
	})
	for _, tc := range []struct{ name, addr string }{{"refused", closedPort(t)}, {"blackholed", blackhole(t)}} {
		t.Run("POOL-23/calls-succeed-within-deadline-"+tc.name, func(t *testing.T) {
			tm := newTeam(t, "redis://user:hunter2pw@"+tc.addr+"/0", "down", 2, config.StrategySticky)
			for i := 0; i < 10; i++ {
				sess := string(rune('a' + i))
				m1, took := tm.call(t, i%2, sess)
				if took > stateTimeout+time.Second {
					t.Fatalf("call %d took %v", i, took)
				}
				if m2, _ := tm.call(t, i%2, sess); m2 != m1 {
					t.Fatalf("local stickiness lost: %s then %s", m1, m2)
				}
			}
			h := tm.stores[0].Health()
			if !h.Degraded || h.Since == nil || h.Kind != "redis" || strings.Contains(h.Store+h.Reason, "hunter2pw") || !strings.Contains(h.Store, "user:***@") {
				t.Fatalf("health %+v", h)
			}
			doc := tm.pools[0].Status()
			if !doc.State.Degraded || len(doc.Recent) != 10 || doc.Recent[0].Instance != "i1" {
				t.Fatalf("status state %+v, %d recent", doc.State, len(doc.Recent))
			}
		})
	}
	t.Run("POOL-23/bad-url-names-no-password", func(t *testing.T) {
		_, err := New(Options{URL: "redis://u:hunter2pw@127.0.0.1:1/notadb"})
		if err == nil || strings.Contains(err.Error(), "hunter2pw") {
			t.Fatalf("%v", err)
		}
	})
	_ = context.Background
}
