//go:build redis

package redisstate

import (
	"fmt"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

// BenchmarkStateCall is the latency a shared State adds to one pool call
// (SPEC POOL-23; docs/BENCHMARKS.md): the same non-streamed call through a
// pool on memory state and on a loopback redis-server, 100 sticky sessions.
//
//	go test -tags redis -run X -bench StateCall ./pool/redisstate/
func BenchmarkStateCall(b *testing.B) {
	srv := startRedis(b, 0)
	for _, kind := range []string{"memory", "redis"} {
		b.Run(kind, func(b *testing.B) {
			url := ""
			if kind == "redis" {
				url = srv.url()
			}
			tm := newTeam(b, url, "bench-"+kind, 1, config.StrategySticky)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tm.call(b, 0, fmt.Sprint("bench-", i%100))
			}
		})
	}
}
