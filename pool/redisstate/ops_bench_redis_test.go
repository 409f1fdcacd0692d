//go:build redis && linux

package redisstate

import (
	"context"
	"fmt"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/balance/statetest"
)

// BenchmarkOps is one State operation on a loopback redis-server, with its
// round trips (SPEC POOL-23; docs/BENCHMARKS.md). begin and finish are a
// call's two steps; the others the single operations they batch.
func BenchmarkOps(b *testing.B) {
	srv := startRedis(b, 0)
	cfg, pc := statetest.Pool()
	st, _ := New(Options{URL: srv.url(), Prefix: "dp:ops:", Timeout: measureTimeout, Config: cfg})
	defer st.Close()
	ctx := context.Background()
	now := statetest.Start()
	hot := func(string) bool { return true }
	key := func(i int) balance.BindKey {
		return balance.BindKey{Pool: "p", Session: fmt.Sprint(i % 100), Model: "m"}
	}
	rec := balance.CallRecord{Pool: "p"}
	// A Codex history of 20 encrypted reasoning items (POOL-18): looked up
	// one by one before, all at once now.
	enc := make([]string, 20)
	for i := range enc {
		enc[i] = fmt.Sprint("e:", i)
	}
	st.RecordOwner(ctx, "a", enc[:10])
	ops := []struct {
		name string
		op   func(i int)
	}{
		{"acquire", func(i int) { st.Acquire(ctx, pc, key(i), pc.Members, hot, now) }},
		{"cooldowns", func(int) { st.Cooldowns(ctx, []string{"a", "b", "c", "a\x00m", "b\x00m", "c\x00m"}, now) }},
		{"succeed", func(int) { st.Succeed(ctx, "a") }},
		{"record", func(int) { st.Record(ctx, rec) }},
		{"release", func(i int) { st.Release(ctx, pc, key(i), false, "a", now) }},
		{"owner-of-x20", func(int) {
			for _, k := range enc {
				st.OwnerOf(ctx, k)
			}
		}},
		{"owners-of-20", func(int) { st.OwnersOf(ctx, enc) }},
		{"begin", func(i int) {
			st.Begin(ctx, balance.CallStart{Pool: pc, Key: key(i), Eligible: pc.Members, Targets: []string{"m", "m", "m"}, Now: now})
		}},
		{"finish", func(i int) {
			st.Finish(ctx, balance.CallEnd{Pool: pc, Key: key(i), Served: "a", Succeeded: true, Session: "0123456789ab",
				Usage: neutral.Accounting{Input: 10}, Record: &rec, Now: now})
		}},
	}
	rt := countRoundTrips(st)
	for _, o := range ops {
		b.Run(o.name, func(b *testing.B) {
			rt.n.Store(0)
			for i := 0; i < b.N; i++ {
				o.op(i)
			}
			b.ReportMetric(float64(rt.n.Load())/float64(b.N), "roundtrips/op")
			if st.Health().Degraded {
				b.Fatal("store degraded during the run")
			}
		})
	}
}
