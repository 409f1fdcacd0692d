package balance

import (
	"fmt"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
)

func TestCacheStats(t *testing.T) {
	t.Run("POOL-13/recent-keeps-last-200", func(t *testing.T) {
		s := newStats()
		for i := 0; i < 250; i++ {
			s.add(CallRecord{Failovers: i})
		}
		l := s.list()
		if len(l) != 200 || l[0].Failovers != 50 || l[199].Failovers != 249 {
			t.Fatalf("%d %d %d", len(l), l[0].Failovers, l[199].Failovers)
		}
	})
}

func TestSessionStatsBounded(t *testing.T) {
	t.Run("POOL-13b/session-cache-stats-bounded", func(t *testing.T) {
		s := newStats()
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := 0; i < maxSessionStats+10; i++ {
			s.usage("p", fmt.Sprint(i), "a", neutral.Accounting{Input: 1}, t0.Add(time.Duration(i)*time.Second))
		}
		if n := len(s.sessions); n > maxSessionStats || n < maxSessionStats/2-10 {
			t.Fatalf("%d session stats kept", n)
		}
		if s.sessions[[2]string{"p", fmt.Sprint(maxSessionStats + 9)}] == nil {
			t.Fatal("newest session dropped")
		}
	})
}
