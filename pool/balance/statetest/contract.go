// Package statetest is the contract every balance.State implementation
// keeps: the memory
// State runs it in the plain test suite, the Redis one in the redis-tagged
// suite, so both answer the pool the same way.
package statetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// Pool is the pool the contract runs on: sticky, members a, b, c, a one
// hour session TTL.
func Pool() (*config.Config, *config.PoolConfig) {
	pc := &config.PoolConfig{ID: "p", Strategy: config.StrategySticky, Members: []string{"a", "b", "c"}, SessionTTL: time.Hour}
	return &config.Config{Pools: []*config.PoolConfig{pc}}, pc
}

// Start is the contract's clock start: now, whole milliseconds (a shared
// store keeps milliseconds).
func Start() time.Time { return time.UnixMilli(time.Now().UnixMilli()) }

func allHot(string) bool { return true }

// Run checks the contract on fresh states made by newState: first picks
// and bindings, how a binding moves and ends, cooldowns, a call's Begin and
// Finish, and the statistics.
func Run(t *testing.T, newState func(t *testing.T) balance.State) {
	pickContract(t, newState)
	moveContract(t, newState)
	cooldownContract(t, newState)
	callContract(t, newState)
	statsContract(t, newState)
}

// pickContract is a session's first pick: the least-bound spread and
// stickiness, concurrent first calls share one member and a
// failed first call binds nothing.
func pickContract(t *testing.T, newState func(t *testing.T) balance.State) {
	ctx := context.Background()
	cfg, pc := Pool()
	members := pc.Members
	t.Run("POOL-4/least-bound-spread-and-sticky", func(t *testing.T) {
		st, now := newState(t), Start()
		count := map[string]int{}
		for i := 0; i < 9; i++ {
			k := balance.BindKey{Pool: "p", Session: fmt.Sprint("s", i), Model: "m"}
			m, fl := st.Acquire(ctx, pc, k, members, allHot, now)
			st.Release(ctx, pc, k, fl, m, now)
			count[m]++
			if again, _ := st.Acquire(ctx, pc, k, members, allHot, now); again != m {
				t.Fatalf("session %d: %s then %s", i, m, again)
			}
			st.Release(ctx, pc, k, false, m, now)
		}
		if count["a"] != 3 || count["b"] != 3 || count["c"] != 3 {
			t.Fatalf("spread %v", count)
		}
		if n := len(st.Bindings(ctx, cfg, now)); n != 9 {
			t.Fatalf("%d bindings", n)
		}
		for _, b := range st.Bindings(ctx, cfg, now) {
			if len(b.Session) != 12 || b.Key.Model != "m" || b.Key.Pool != "p" {
				t.Fatalf("binding %+v", b)
			}
		}
	})
	t.Run("POOL-5/concurrent-first-picks-share-one-member", func(t *testing.T) {
		st, now := newState(t), Start()
		k := balance.BindKey{Pool: "p", Session: "new", Model: "m"}
		var mu sync.Mutex
		got := map[string]int{}
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m, fl := st.Acquire(ctx, pc, k, members, allHot, now)
				mu.Lock()
				got[m]++
				mu.Unlock()
				if !fl {
					t.Errorf("first pick not in flight")
				}
			}()
		}
		wg.Wait()
		if len(got) != 1 {
			t.Fatalf("first picks split: %v", got)
		}
		if n := len(st.Bindings(ctx, cfg, now)); n != 0 {
			t.Fatalf("binding before success: %d", n)
		}
	})
	t.Run("POOL-5/failed-first-call-binds-nothing", func(t *testing.T) {
		st, now := newState(t), Start()
		k := balance.BindKey{Pool: "p", Session: "f", Model: "m"}
		_, fl := st.Acquire(ctx, pc, k, members, allHot, now)
		st.Release(ctx, pc, k, fl, "", now)
		if n := len(st.Bindings(ctx, cfg, now)); n != 0 {
			t.Fatalf("%d bindings after a failed call", n)
		}
	})
}

// moveContract is how a binding moves and ends: to the member that
// succeeded, the session's member for another model,
// expiry after the TTL, cooling members skipped unless all cool.
func moveContract(t *testing.T, newState func(t *testing.T) balance.State) {
	ctx := context.Background()
	cfg, pc := Pool()
	members := pc.Members
	t.Run("POOL-8/binding-moves-to-member-that-succeeded", func(t *testing.T) {
		st, now := newState(t), Start()
		k := balance.BindKey{Pool: "p", Session: "mv", Model: "m"}
		m, fl := st.Acquire(ctx, pc, k, members, allHot, now)
		other := "b"
		if m == "b" {
			other = "c"
		}
		st.Release(ctx, pc, k, fl, other, now)
		if got, _ := st.Acquire(ctx, pc, k, members, allHot, now); got != other {
			t.Fatalf("bound to %s, want %s", got, other)
		}
	})
	t.Run("POOL-6/other-model-prefers-the-session-member", func(t *testing.T) {
		st, now := newState(t), Start()
		k := balance.BindKey{Pool: "p", Session: "x", Model: "m1"}
		st.Bind(ctx, pc, k, "c", now)
		k2 := balance.BindKey{Pool: "p", Session: "x", Model: "m2"}
		if got, _ := st.Acquire(ctx, pc, k2, members, allHot, now); got != "c" {
			t.Fatalf("m2 on %s, want c", got)
		}
	})
	t.Run("POOL-4/binding-expires-after-ttl", func(t *testing.T) {
		st, now := newState(t), Start()
		st.Bind(ctx, pc, balance.BindKey{Pool: "p", Session: "old", Model: "m"}, "b", now)
		if n := len(st.Bindings(ctx, cfg, now.Add(pc.SessionTTL+time.Second))); n != 0 {
			t.Fatalf("%d bindings after the TTL", n)
		}
	})
	t.Run("POOL-11/cooling-members-skipped-unless-all-cool", func(t *testing.T) {
		st, now := newState(t), Start()
		hot := func(m string) bool { return m == "c" }
		if got, _ := st.Acquire(ctx, pc, balance.BindKey{Pool: "p", Session: "h", Model: "m"}, members, hot, now); got != "c" {
			t.Fatalf("%s", got)
		}
	})
}

func cooldownContract(t *testing.T, newState func(t *testing.T) balance.State) {
	ctx := context.Background()
	base := 30 * time.Second
	t.Run("POOL-10/growth-x2-capped-10x", func(t *testing.T) {
		st, now := newState(t), Start()
		for i, w := range []time.Duration{30, 60, 120, 240, 300, 300} {
			until := st.Fail(ctx, "a", config.ClassServer, base, 0, now)
			if got := until.Sub(now); got != w*time.Second {
				t.Fatalf("failure %d: cooldown %v, want %v", i, got, w*time.Second)
			}
			now = until.Add(time.Second)
		}
	})
	t.Run("POOL-10/longest-deadline-wins-and-success-resets", func(t *testing.T) {
		st, now := newState(t), Start()
		st.Fail(ctx, "a", config.ClassAuth, 600*time.Second, 0, now)
		st.Fail(ctx, "a", config.ClassServer, base, 0, now.Add(time.Second))
		cds := st.Cooldowns(ctx, []string{"a", "b"}, now.Add(2*time.Second))
		if c, ok := cds["a"]; !ok || !c.Until.Equal(now.Add(600*time.Second)) || c.Class != config.ClassAuth {
			t.Fatalf("%+v", cds)
		}
		if _, ok := cds["b"]; ok {
			t.Fatal("b cooling")
		}
		st.Fail(ctx, "a", config.ClassRateLimit, 60*time.Second, 900*time.Second, now.Add(3*time.Second))
		if c := st.Cooldowns(ctx, []string{"a"}, now.Add(4*time.Second))["a"]; !c.Until.Equal(now.Add(903*time.Second)) || c.Class != config.ClassRateLimit {
			t.Fatalf("%+v", c)
		}
		// Extensions keep the start of the running cooldown.
		if c := st.Cooldowns(ctx, []string{"a"}, now.Add(4*time.Second))["a"]; !c.Since.Equal(now) {
			t.Fatalf("cooldown since %v, want %v", c.Since, now)
		}
		st.Succeed(ctx, "a")
		if len(st.Cooldowns(ctx, []string{"a"}, now.Add(5*time.Second))) != 0 {
			t.Fatal("cooling after success")
		}
	})
	t.Run("POOL-10/model-key-cools-that-model-only", func(t *testing.T) {
		st, now := newState(t), Start()
		st.Fail(ctx, balance.ModelKey("a", "x"), config.ClassModelNotFound, 600*time.Second, 0, now)
		cds := st.Cooldowns(ctx, []string{"a", balance.ModelKey("a", "x"), balance.ModelKey("a", "y")}, now)
		if _, c := balance.Cooling(cds, "a", "x"); !c {
			t.Fatal("a/x not cooling")
		}
		if _, c := balance.Cooling(cds, "a", "y"); c {
			t.Fatal("a/y cooling")
		}
	})
	t.Run("POOL-10/no-cooldown-class", func(t *testing.T) {
		st, now := newState(t), Start()
		if u := st.Fail(ctx, "a", config.ClassBadRequest, 0, 0, now); !u.IsZero() {
			t.Fatal(u)
		}
	})
}

func statsContract(t *testing.T, newState func(t *testing.T) balance.State) {
	ctx := context.Background()
	t.Run("POOL-13/counts-recent-cache-owners", func(t *testing.T) {
		st, now := newState(t), Start()
		st.Count(ctx, "p", "a", true)
		st.Count(ctx, "p", "a", true)
		st.Count(ctx, "p", "a", false)
		st.AddUsage(ctx, "p", "sess12hex000", "a", neutral.Accounting{Input: 10, CacheRead: 30}, now)
		s, f, cache := st.Counts(ctx, "p", "a")
		if s != 2 || f != 1 || cache.CacheReadTokens != 30 || cache.HitRatio != 0.75 {
			t.Fatalf("%d %d %+v", s, f, cache)
		}
		if cs, ok := st.SessionCache(ctx, "p", "sess12hex000"); !ok || cs.InputTokens != 10 {
			t.Fatalf("%v %+v", ok, cs)
		}
		if _, ok := st.SessionCache(ctx, "p", "none"); ok {
			t.Fatal("cache for an unknown session")
		}
		for i := 0; i < 205; i++ {
			st.Record(ctx, balance.CallRecord{Time: now, Pool: "p", Failovers: i})
		}
		r := st.Recent(ctx)
		if len(r) != 200 || r[0].Failovers != 5 || r[199].Failovers != 204 {
			t.Fatalf("%d recent", len(r))
		}
		st.RecordOwner(ctx, "b", []string{"r:resp_1", "e:abc"})
		if st.OwnerOf(ctx, "r:resp_1") != "b" || st.OwnerOf(ctx, "e:abc") != "b" || st.OwnerOf(ctx, "r:nope") != "" {
			t.Fatal("owners")
		}
		st.RecordOwner(ctx, "c", []string{"e:def"})
		if o := st.OwnersOf(ctx, []string{"e:abc", "r:nope", "e:def"}); len(o) != 2 || o["e:abc"] != "b" || o["e:def"] != "c" {
			t.Fatalf("owners of many: %v", o)
		}
	})
}
