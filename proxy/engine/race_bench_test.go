// Benchmark of the CONNECT race (SPEC ORD-6): the race opens paths that
// are open at once (no sockets), so only the race's own work is measured.
//
//	go test -run '^$' -bench 'Race' -benchmem ./proxy/engine

package engine

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// BenchmarkRace is Open with two candidates whose paths open at once
// (SPEC ORD-6): the race's goroutine, channel and timer per tunnel, and
// the win's bookkeeping.
func BenchmarkRace(b *testing.B) {
	gw := candidate.Candidate{Kind: candidate.KindHTTP, Addr: "127.0.0.1:1"}
	e, err := New(Config{Candidates: []candidate.Candidate{gw, candidate.Direct}, RaceDelay: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	e.openAttempt = func(context.Context, attempt, string, string, bool) (net.Conn, error) { return c1, nil }
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := e.Open(ctx, "x.test", 443); err != nil {
			b.Fatal(err)
		}
	}
}
