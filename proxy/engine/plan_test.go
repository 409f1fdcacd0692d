package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// TestPlanLoneCandidate: with one candidate plan answers from plans made
// once, and they are what the ordering rules give: the lone
// candidate whatever its cooldown (ORD-2 fails open) or a rule (ORD-3),
// the probe skipped and the fast-fail timeout on a cache hit (ORD-4,
// ORD-5), the fast-fail timeout when health-preferred.
func TestPlanLoneCandidate(t *testing.T) {
	const host, port = "x.test", 443
	fast, slow := 300*time.Millisecond, 4*time.Second
	newEngine := func(t *testing.T, c candidate.Candidate, rules *route.Rules) *Engine {
		e, err := New(Config{Candidates: []candidate.Candidate{c}, Rules: rules, ConnectTimeout: slow, FastFail: fast, Cooldown: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
		return e
	}
	check := func(t *testing.T, e *Engine, c candidate.Candidate, wantHit bool, wantTimeout time.Duration) {
		t.Helper()
		atts, hit := e.plan(host, port)
		if len(atts) != 1 || atts[0].cand != c || hit != wantHit || atts[0].cached != wantHit || atts[0].timeout != wantTimeout {
			t.Fatalf("plan %+v hit=%v: want [%s] hit=%v timeout %v", atts, hit, c.Key(), wantHit, wantTimeout)
		}
	}
	gw := proxytest.Gateway(t, "http://127.0.0.1:1")
	t.Run("ORD-1/lone-candidate-plain-connect-timeout", func(t *testing.T) {
		check(t, newEngine(t, gw, nil), gw, false, slow)
	})
	t.Run("ORD-2/lone-cooling-candidate-still-tried", func(t *testing.T) {
		e := newEngine(t, gw, nil)
		e.cooldowns.Fail(&candidate.PathError{Candidate: gw, Phase: candidate.PhaseGatewayConnect, Tier: candidate.TierGateway, Err: errors.New("refused")}, route.Dest(host, port))
		if !e.cooldowns.Cooling(gw.Key(), route.Dest(host, port)) {
			t.Fatal("set-up: the gateway does not cool")
		}
		check(t, e, gw, false, slow)
	})
	t.Run("ORD-3/prefer-direct-rule-with-a-lone-gateway-keeps-it", func(t *testing.T) {
		rules, err := route.ParseRules([]string{host}, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		check(t, newEngine(t, gw, rules), gw, false, slow)
	})
	t.Run("ORD-4/lone-cached-candidate-skips-probe-with-fast-fail", func(t *testing.T) {
		e := newEngine(t, candidate.Direct, nil)
		e.succeed(host, candidate.Direct)
		check(t, e, candidate.Direct, true, fast)
	})
	t.Run("ORD-5/lone-health-preferred-candidate-gets-fast-fail", func(t *testing.T) {
		e := newEngine(t, gw, nil)
		e.health.Record([]route.HealthResult{{Key: gw.Key(), Alive: true}})
		if e.health.Preferred() != gw.Key() {
			t.Fatal("set-up: the gateway is not preferred")
		}
		check(t, e, gw, false, fast)
	})
	// Allocations per plan: none for one candidate; for two,
	// the order and the attempts plus one destination key ("host:port"
	// made once, not per candidate).
	t.Run("ORD-1/plan-allocations", func(t *testing.T) {
		one := newEngine(t, candidate.Direct, nil)
		if n := testing.AllocsPerRun(100, func() { one.plan(host, port) }); n != 0 {
			t.Errorf("one candidate: %v allocations per plan, want 0", n)
		}
		e, err := New(Config{Candidates: []candidate.Candidate{gw, candidate.Direct}})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if n := testing.AllocsPerRun(100, func() { e.plan(host, port) }); n > 4 {
			t.Errorf("two candidates: %v allocations per plan, want <= 4", n)
		}
	})
}

// TestCandName: a decision names its candidate as Candidate.String does
// (SPEC OPS-2), from names made once for the configured candidates.
func TestCandName(t *testing.T) {
	t.Run("OPS-2/decision-candidate-name-made-once", func(t *testing.T) {
		gw := proxytest.Gateway(t, "http://user:secret@127.0.0.1:1")
		e, err := New(Config{Candidates: []candidate.Candidate{gw, candidate.Direct}})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		for _, c := range []candidate.Candidate{gw, candidate.Direct, proxytest.Gateway(t, "http://127.0.0.1:2")} {
			if got := e.candName(c); got != c.String() {
				t.Errorf("candName = %q, want %q", got, c.String())
			}
		}
		if n := testing.AllocsPerRun(100, func() { e.candName(gw) }); n != 0 {
			t.Errorf("%v allocations per name of a configured gateway, want 0", n)
		}
	})
}

// BenchmarkPlan is the routing plan of one CONNECT to a name (not
// loopback): one candidate (direct only, or one gateway) and a gateway
// plus direct.
func BenchmarkPlan(b *testing.B) {
	for _, tc := range []struct {
		name  string
		cands []candidate.Candidate
	}{
		{"one", []candidate.Candidate{candidate.Direct}},
		{"two", []candidate.Candidate{{Kind: candidate.KindHTTP, Addr: "127.0.0.1:1"}, candidate.Direct}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			e, err := New(Config{Candidates: tc.cands})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			e.succeed("x.test", tc.cands[0])
			b.ReportAllocs()
			for b.Loop() {
				e.plan("x.test", 443)
			}
		})
	}
}

// TestSucceedMemo: a connection's plain successes through the candidate
// its last put named skip the put for cacheRefresh, and what
// ORD-4 says still holds: the entry lives TTL after the last success
// (within cacheRefresh), and after the cached candidate failed the next
// success caches it again at once.
func TestSucceedMemo(t *testing.T) {
	const host, port = "x.test", 80
	clk := testkit.NewClock(testkit.Epoch)
	e, err := New(Config{Candidates: []candidate.Candidate{candidate.Direct}, PrefTTL: time.Minute, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	expiry := func() time.Time {
		for _, ce := range e.cache.Snapshot() {
			if ce.Host == host && ce.Key == candidate.Direct.Key() {
				return ce.Expires
			}
		}
		return time.Time{}
	}
	var m putMemo
	t.Run("ORD-4/success-within-the-refresh-skips-the-put", func(t *testing.T) {
		e.succeedMemo(host, candidate.Direct, &m)
		first := expiry()
		if !first.Equal(testkit.Epoch.Add(time.Minute)) {
			t.Fatalf("expiry %v after the first success", first)
		}
		clk.Advance(cacheRefresh(time.Minute) / 2)
		e.succeedMemo(host, candidate.Direct, &m)
		if got := expiry(); !got.Equal(first) {
			t.Fatalf("expiry %v, want %v (put skipped)", got, first)
		}
		clk.Advance(cacheRefresh(time.Minute))
		e.succeedMemo(host, candidate.Direct, &m)
		if got := expiry(); !got.Equal(clk.Now().Add(time.Minute)) {
			t.Fatalf("expiry %v after the refresh, want %v", got, clk.Now().Add(time.Minute))
		}
	})
	t.Run("ORD-4/success-after-a-failure-caches-again", func(t *testing.T) {
		e.fail(host, port, &candidate.PathError{Candidate: candidate.Direct, Phase: candidate.PhaseOriginConnect, Tier: candidate.TierHost, Err: errors.New("refused")})
		if !expiry().IsZero() {
			t.Fatal("set-up: the failure left the entry")
		}
		e.succeedMemo(host, candidate.Direct, &m) // within cacheRefresh of the last put
		if got := expiry(); !got.Equal(clk.Now().Add(time.Minute)) {
			t.Fatalf("expiry %v after the success, want %v", got, clk.Now().Add(time.Minute))
		}
	})
}

// BenchmarkSucceed is the route bookkeeping of one served plain request
// (ORD-4 cache, OPS-2 counters): "put" puts every time (Transport
// requests, and a plain request without the memo), "memo" is a
// keep-alive connection's request through the candidate its last put
// named.
func BenchmarkSucceed(b *testing.B) {
	e, err := New(Config{Candidates: []candidate.Candidate{candidate.Direct}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.Close)
	b.Run("put", func(b *testing.B) {
		for b.Loop() {
			e.succeed("api.example.test", candidate.Direct)
		}
	})
	b.Run("memo", func(b *testing.B) {
		var m putMemo
		for b.Loop() {
			e.succeedMemo("api.example.test", candidate.Direct, &m)
		}
	})
}
