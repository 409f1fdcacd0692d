//go:build redis && linux

package redisstate

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/balance/statetest"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// TestRedisContract: the Redis State keeps the same contract as memory.
func TestRedisContract(t *testing.T) {
	srv := startRedis(t, 0)
	n := 0
	statetest.Run(t, func(t *testing.T) balance.State {
		n++
		_, pc := statetest.Pool()
		st, err := New(Options{URL: srv.url(), Prefix: fmt.Sprintf("dp:contract%d:", n), Timeout: stateTimeout, Config: &config.Config{Pools: []*config.PoolConfig{pc}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if st.Health().Degraded {
			t.Fatal("degraded against a running redis-server")
		}
		return st
	})
}

// TestTeamPool: two pool instances on one Redis balance as one pool (SPEC
// POOL-23 with POOL-4, POOL-5, POOL-10).
func TestTeamPool(t *testing.T) {
	srv := startRedis(t, 0)
	t.Run("POOL-23/sessions-stay-on-one-member-across-instances-and-spread", func(t *testing.T) {
		tm := newTeam(t, srv.url(), "spread", 2, config.StrategySticky)
		// First calls alternate over the instances; then every session
		// goes through the other instance (two blind instances would both
		// rotate from a and disagree here).
		first := map[int]string{}
		for i := 0; i < 20; i++ {
			first[i], _ = tm.call(t, i%2, fmt.Sprint("spread-", i))
		}
		per := map[string]int{}
		for i := 0; i < 20; i++ {
			for k := 1; k <= 2; k++ {
				if m, _ := tm.call(t, (i+k)%2, fmt.Sprint("spread-", i)); m != first[i] {
					t.Fatalf("session %d: %s through instance %d, then %s through instance %d", i, first[i], i%2+1, m, (i+k)%2+1)
				}
			}
			per[first[i]]++
		}
		if lo, hi := min(per["a"], per["b"], per["c"]), max(per["a"], per["b"], per["c"]); hi-lo > 1 {
			t.Fatalf("20 sessions spread %v, want 7/7/6", per)
		}
		for _, p := range tm.pools {
			doc := p.Status()
			bound := 0
			for _, m := range doc.Pools[0].Members {
				bound += m.BoundSessions
			}
			if bound != 20 || doc.SessionsTotal != 20 {
				t.Fatalf("instance status: %d bound, %d sessions", bound, doc.SessionsTotal)
			}
		}
	})
	t.Run("POOL-23/concurrent-first-calls-on-both-instances-one-member", func(t *testing.T) {
		tm := newTeam(t, srv.url(), "burst", 2, config.StrategySticky)
		tm.call(t, 0, "burst-before") // instance 1 has one session on a: blind instances would now disagree
		firstCallsGate(tm, 8)
		var mu sync.Mutex
		got := map[string]int{}
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m, _ := tm.call(t, i%2, "burst-one")
				mu.Lock()
				got[m]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		if len(got) != 1 {
			t.Fatalf("8 concurrent first calls split over members: %v", got)
		}
	})
	t.Run("POOL-23/rate-limit-seen-by-one-instance-cools-the-member-for-all", func(t *testing.T) {
		tm := newTeam(t, srv.url(), "ratelimit", 2, config.StrategyFailover)
		tm.ups["a"].limited.Store(true)
		if m, _ := tm.call(t, 0, "rl-1"); m != "b" {
			t.Fatalf("instance 1 served by %s, want b after a's 429", m)
		}
		tm.ups["a"].limited.Store(false)
		before := tm.ups["a"].calls.Load()
		tm.clock.Advance(29 * time.Second)
		if m, _ := tm.call(t, 1, "rl-2"); m != "b" || tm.ups["a"].calls.Load() != before {
			t.Fatalf("instance 2 tried a during its Retry-After: member %s, a called %d times", m, tm.ups["a"].calls.Load()-before)
		}
		doc := tm.pools[1].Status()
		if a := doc.Pools[0].Members[0]; a.State != "cooling" || a.CooldownClass != config.ClassRateLimit {
			t.Fatalf("instance 2 status of a: %+v", a)
		}
		tm.clock.Advance(2 * time.Second)
		if m, _ := tm.call(t, 1, "rl-3"); m != "a" {
			t.Fatalf("after the deadline instance 2 served by %s, want a", m)
		}
	})
	t.Run("POOL-23/redis-killed-calls-go-on-redis-back-sharing-resumes", func(t *testing.T) {
		own := startRedis(t, 0)
		tm := newTeam(t, own.url(), "outage", 2, config.StrategySticky)
		if m1, _ := tm.call(t, 0, "before"); m1 == "" {
			t.Fatal("no member")
		}
		own.stop()
		var during string
		for i := 0; i < 12; i++ {
			m, took := tm.call(t, i%2, fmt.Sprint("down-", i))
			if took > stateTimeout+time.Second {
				t.Fatalf("call %d during the outage took %v", i, took)
			}
			if i == 0 {
				during = m
			}
		}
		for i, st := range tm.stores {
			if !st.Health().Degraded || !tm.pools[i].Status().State.Degraded {
				t.Fatalf("instance %d not degraded: %+v", i+1, st.Health())
			}
		}
		back := startRedis(t, own.port)
		_ = back
		testkit.WaitFor(t, 10*time.Second, "both instances share again", func() bool {
			tm.call(t, 0, "poll")
			tm.call(t, 1, "poll")
			return !tm.stores[0].Health().Degraded && !tm.stores[1].Health().Degraded
		})
		// Merged back: the binding instance 1 made during the outage is in
		// Redis, and instance 2 uses it.
		merged := false
		for _, b := range tm.stores[1].Bindings(context.Background(), tm.cfg, tm.clock.Now()) {
			merged = merged || (b.Session == balance.SessionHash(sessionMark+"down-0") && b.Member == during)
		}
		if !merged {
			t.Fatal("the outage's binding was not merged back")
		}
		if m, _ := tm.call(t, 1, "down-0"); m != during {
			t.Fatalf("session bound to %s during the outage is on %s through instance 2", during, m)
		}
		for i := 0; i < 6; i++ {
			s := fmt.Sprint("after-", i)
			m1, _ := tm.call(t, i%2, s)
			if m2, _ := tm.call(t, (i+1)%2, s); m2 != m1 {
				t.Fatalf("after recovery %s: %s then %s", s, m1, m2)
			}
		}
	})
	t.Run("POOL-23/redis-hung-calls-within-deadline-then-sharing-resumes", func(t *testing.T) {
		own := startRedis(t, 0)
		tm := newTeam(t, own.url(), "hung", 2, config.StrategySticky)
		tm.call(t, 0, "hung-before")
		if err := own.cmd.Process.Signal(syscall.SIGSTOP); err != nil { // a hung Redis: connections open, no answers
			t.Fatal(err)
		}
		stopped := true
		defer func() {
			if stopped {
				_ = own.cmd.Process.Signal(syscall.SIGCONT)
			}
		}()
		var slowest time.Duration
		for i := 0; i < 10; i++ {
			_, took := tm.call(t, i%2, fmt.Sprint("hung-", i))
			if took > stateTimeout+time.Second {
				t.Fatalf("call %d with Redis hung took %v", i, took)
			}
			slowest = max(slowest, took)
		}
		t.Logf("slowest call with Redis hung: %v (state deadline %v)", slowest, stateTimeout)
		if !tm.stores[0].Health().Degraded || !tm.stores[1].Health().Degraded {
			t.Fatal("not degraded while Redis is hung")
		}
		_ = own.cmd.Process.Signal(syscall.SIGCONT)
		stopped = false
		testkit.WaitFor(t, 10*time.Second, "both instances share again", func() bool {
			tm.call(t, 0, "poll")
			tm.call(t, 1, "poll")
			return !tm.stores[0].Health().Degraded && !tm.stores[1].Health().Degraded
		})
		for i := 0; i < 4; i++ {
			s := fmt.Sprint("hung-after-", i)
			m1, _ := tm.call(t, i%2, s)
			if m2, _ := tm.call(t, (i+1)%2, s); m2 != m1 {
				t.Fatalf("after Redis resumed %s: %s then %s", s, m1, m2)
			}
		}
	})
	t.Run("POOL-23/keys-hold-no-session-id-prompt-or-key-and-expire", func(t *testing.T) {
		c := srv.client()
		defer c.Close()
		ctx := context.Background()
		var keys []string
		iter := c.Scan(ctx, 0, "*", 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if iter.Err() != nil || len(keys) < 10 {
			t.Fatalf("%d keys, %v", len(keys), iter.Err())
		}
		for _, k := range keys {
			if !strings.HasPrefix(k, "dp:") {
				t.Errorf("key %q outside the prefix", k)
			}
			if ttl := c.PTTL(ctx, k).Val(); ttl <= 0 {
				t.Errorf("key %q has no TTL (%v)", k, ttl)
			}
			var content string
			switch c.Type(ctx, k).Val() {
			case "hash":
				content = fmt.Sprint(c.HGetAll(ctx, k).Val())
			case "zset":
				content = fmt.Sprint(c.ZRange(ctx, k, 0, -1).Val())
			case "list":
				content = fmt.Sprint(c.LRange(ctx, k, 0, -1).Val())
			default:
				content = c.Get(ctx, k).Val()
			}
			for _, secret := range []string{sessionMark, promptMark, channelKeyMark} {
				if strings.Contains(k, secret) || strings.Contains(content, secret) {
					t.Errorf("key %q holds %q", k, secret)
				}
			}
		}
	})
}
