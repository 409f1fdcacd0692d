package statetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// callContract is Begin and Finish (a call's two steps):
// they answer and write what the single operations they stand for do.
func callContract(t *testing.T, newState func(t *testing.T) balance.State) {
	beginContract(t, newState)
	finishContract(t, newState)
}

// callFixture is the pool, its three targets and the CallStart of a key at
// a time, shared by the Begin and Finish contracts.
func callFixture() (cfg *config.Config, pc *config.PoolConfig, targets []string, start func(balance.BindKey, time.Time) balance.CallStart) {
	cfg, pc = Pool()
	targets = []string{"ta", "tb", "tc"}
	start = func(key balance.BindKey, now time.Time) balance.CallStart {
		return balance.CallStart{Pool: pc, Key: key, Eligible: pc.Members, Targets: targets, Now: now}
	}
	return cfg, pc, targets, start
}

// beginContract is Begin: it reads cooldowns, picks the hot member and the
// owner, and concurrent first calls share one member.
func beginContract(t *testing.T, newState func(t *testing.T) balance.State) {
	ctx := context.Background()
	cfg, pc, _, start := callFixture()
	t.Run("POOL-23/begin-reads-cooldowns-picks-hot-member-and-owner", func(t *testing.T) {
		st, now := newState(t), Start()
		st.Fail(ctx, "a", config.ClassServer, 30*time.Second, 0, now)
		st.Fail(ctx, balance.ModelKey("b", "tb"), config.ClassModelNotFound, time.Hour, 0, now)
		st.Fail(ctx, balance.ModelKey("c", "other"), config.ClassModelNotFound, time.Hour, 0, now)
		st.RecordOwner(ctx, "b", []string{"r:resp_9"})
		b := start(balance.BindKey{Pool: "p", Session: "begin", Model: "m"}, now.Add(time.Second))
		b.Owner = "r:resp_9"
		got := st.Begin(ctx, b)
		if got.Member != "c" || !got.InFlight || got.Owner != "b" {
			t.Fatalf("begin %+v, want c in flight, owner b", got)
		}
		a, b2 := got.Cooldowns["a"], got.Cooldowns[balance.ModelKey("b", "tb")]
		if len(got.Cooldowns) != 2 || !a.Until.Equal(now.Add(30*time.Second)) || a.Class != config.ClassServer ||
			!a.Since.Equal(now) || b2.Class != config.ClassModelNotFound {
			t.Fatalf("cooldowns %+v", got.Cooldowns)
		}
		if n := len(st.Bindings(ctx, cfg, now)); n != 0 {
			t.Fatalf("binding before Finish: %d", n)
		}
	})
	t.Run("POOL-5/begin-concurrent-first-calls-share-one-member", func(t *testing.T) {
		st, now := newState(t), Start()
		st.Bind(ctx, pc, balance.BindKey{Pool: "p", Session: "other", Model: "m"}, "a", now) // a is loaded: no free tie
		var mu sync.Mutex
		got := map[string]int{}
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := st.Begin(ctx, start(balance.BindKey{Pool: "p", Session: "burst", Model: "m"}, now))
				mu.Lock()
				got[r.Member]++
				mu.Unlock()
				if !r.InFlight {
					t.Errorf("first pick not in flight")
				}
			}()
		}
		wg.Wait()
		if len(got) != 1 || got["a"] != 0 {
			t.Fatalf("first picks %v, want one member other than a", got)
		}
	})
}

// finishContract is Finish, and Begin's strategies after it: it writes the
// release, success, usage, owner and record, a failed call
// binds nothing and releases; round-robin and failover pick as
// their strategy says.
func finishContract(t *testing.T, newState func(t *testing.T) balance.State) {
	ctx := context.Background()
	cfg, pc, targets, start := callFixture()
	t.Run("POOL-23/finish-writes-release-success-usage-owner-record", func(t *testing.T) {
		st, now := newState(t), Start()
		key := balance.BindKey{Pool: "p", Session: "fin", Model: "m"}
		st.Fail(ctx, "b", config.ClassServer, 30*time.Second, 0, now.Add(-40*time.Second)) // over, its growth remembered
		r := st.Begin(ctx, start(key, now))
		rec := balance.CallRecord{Time: now, Pool: "p", Model: "m", Member: "b"}
		st.Finish(ctx, balance.CallEnd{Pool: pc, Key: key, InFlight: r.InFlight, Served: "b", Succeeded: true, Session: "fin12hex0000",
			Usage: neutral.Accounting{Input: 10, CacheRead: 30}, Owned: []string{"r:resp_fin"}, Record: &rec, Now: now})
		if again := st.Begin(ctx, start(key, now.Add(time.Second))); again.Member != "b" || again.InFlight {
			t.Fatalf("after Finish served by b: %+v", again)
		}
		if bs := st.Bindings(ctx, cfg, now); len(bs) != 1 || bs[0].Member != "b" {
			t.Fatalf("bindings %+v", bs)
		}
		if s, f, cache := st.Counts(ctx, "p", "b"); s != 1 || f != 0 || cache.CacheReadTokens != 30 {
			t.Fatalf("counts %d %d %+v", s, f, cache)
		}
		if cs, ok := st.SessionCache(ctx, "p", "fin12hex0000"); !ok || cs.InputTokens != 10 {
			t.Fatalf("session cache %v %+v", ok, cs)
		}
		if st.OwnerOf(ctx, "r:resp_fin") != "b" {
			t.Fatal("owner not recorded")
		}
		if rs := st.Recent(ctx); len(rs) != 1 || rs[0].Member != "b" {
			t.Fatalf("recent %+v", rs)
		}
		// Succeeded reset b's growth: its next failure is the base again.
		if until := st.Fail(ctx, "b", config.ClassServer, 30*time.Second, 0, now.Add(2*time.Second)); !until.Equal(now.Add(32 * time.Second)) {
			t.Fatalf("cooldown after success until %v, want base", until.Sub(now))
		}
	})
	t.Run("POOL-5/finish-without-success-binds-nothing-and-releases", func(t *testing.T) {
		st, now := newState(t), Start()
		key := balance.BindKey{Pool: "p", Session: "nofin", Model: "m"}
		r := st.Begin(ctx, start(key, now))
		rec := balance.CallRecord{Time: now, Pool: "p", Model: "m", Class: config.ClassServer}
		st.Finish(ctx, balance.CallEnd{Pool: pc, Key: key, InFlight: r.InFlight, Record: &rec, Now: now})
		if n := len(st.Bindings(ctx, cfg, now)); n != 0 {
			t.Fatalf("%d bindings after a failed call", n)
		}
		if s, _, _ := st.Counts(ctx, "p", r.Member); s != 0 {
			t.Fatalf("%d successes counted for a failed call", s)
		}
		// Released: the key's next call is a new first pick, not a join of
		// the old one (which would start on the same member: the rotation
		// moved past it and no member holds load).
		if next := st.Begin(ctx, start(key, now)); !next.InFlight || next.Member == r.Member {
			t.Fatalf("after a released first pick on %s: %+v", r.Member, next)
		}
	})
	t.Run("POOL-23/begin-round-robin-and-failover", func(t *testing.T) {
		st, now := newState(t), Start()
		rr := *pc
		rr.Strategy = config.StrategyRoundRobin
		hot := func(m string) bool { return m != "b" }
		st.Fail(ctx, "b", config.ClassServer, 30*time.Second, 0, now)
		var seq []string
		for i := 0; i < 4; i++ {
			b := balance.CallStart{Pool: &rr, Key: balance.BindKey{Pool: "p", Session: "s", Model: "m"}, Eligible: pc.Members, Targets: targets, Now: now}
			r := st.Begin(ctx, b)
			if r.InFlight || !hot(r.Member) {
				t.Fatalf("round-robin %+v", r)
			}
			seq = append(seq, r.Member)
		}
		if seq[0] == seq[1] || seq[0] != seq[2] || seq[1] != seq[3] {
			t.Fatalf("round-robin over a and c: %v", seq)
		}
		fo := *pc
		fo.Strategy = config.StrategyFailover
		fo.ID = "f"
		if r := st.Begin(ctx, balance.CallStart{Pool: &fo, Key: balance.BindKey{Pool: "f", Model: "m"}, Eligible: []string{"b", "c", "a"},
			Targets: targets, Now: now}); r.Member != "c" || r.InFlight {
			t.Fatalf("failover %+v, want c (b cooling)", r)
		}
	})
}
