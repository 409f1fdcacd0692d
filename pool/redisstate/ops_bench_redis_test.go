//go:build redis

package redisstate

import (
	"context"
	"fmt"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/balance/statetest"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

func BenchmarkOps(b *testing.B) {
	srv := startRedis(b, 0)
	cfg, pc := statetest.Pool()
	st, _ := New(Options{URL: srv.url(), Prefix: "dp:ops:", Config: cfg})
	defer st.Close()
	ctx := context.Background()
	now := statetest.Start()
	hot := func(string) bool { return true }
	b.Run("acquire", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			st.Acquire(ctx, pc, balance.BindKey{Pool: "p", Session: fmt.Sprint(i % 100), Model: "m"}, pc.Members, hot, now)
		}
	})
	b.Run("cooldowns", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			st.Cooldowns(ctx, []string{"a", "b", "c", "a\x00m", "b\x00m", "c\x00m"}, now)
		}
	})
	b.Run("succeed", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			st.Succeed(ctx, "a")
		}
	})
	b.Run("record", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			st.Record(ctx, balance.CallRecord{Pool: "p"})
		}
	})
	_ = config.StrategySticky
}
