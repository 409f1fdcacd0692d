//go:build redis && linux

package redisstate

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// BenchmarkStateCall is the latency a shared State adds to one pool call
// (SPEC POOL-23; docs/BENCHMARKS.md): the same non-streamed call through a
// pool on memory state and on a loopback redis-server, 100 sticky sessions.
// Besides the wall time (noisy on a shared machine) it reports the CPU the
// test process spent per call (pool, mock channel and Redis client) and,
// for redis, the redis-server's CPU per call and the round trips; it fails
// when the store degraded (a run answered by local state measures nothing).
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
			tm := newTeamWith(b, url, "bench-"+kind, 1, config.StrategySticky, measureTimeout)
			var rt *roundTrips
			if kind == "redis" {
				rt = countRoundTrips(tm.stores[0])
			}
			redis0, cpu0 := srv.cpu(b), testkit.ProcessCPU()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tm.call(b, 0, fmt.Sprint("bench-", i%100))
			}
			b.StopTimer()
			b.ReportMetric(float64((testkit.ProcessCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
			if rt != nil {
				b.ReportMetric(float64((srv.cpu(b)-redis0).Microseconds())/float64(b.N), "redis-cpu-µs/op")
				b.ReportMetric(float64(rt.n.Load())/float64(b.N), "roundtrips/op")
				if tm.stores[0].Health().Degraded {
					b.Fatal("store degraded during the run")
				}
			}
		})
	}
}

// cpu is the user plus system CPU time the redis-server used so far (INFO
// cpu).
func (s *redisServer) cpu(b *testing.B) time.Duration {
	c := s.client()
	defer c.Close()
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\r\n") {
		k, v, _ := strings.Cut(line, ":")
		if k == "used_cpu_sys" || k == "used_cpu_user" {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}
