package route

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

func gw(t testing.TB, addr string) candidate.Candidate {
	t.Helper()
	c, err := ParseGateway(addr, "gateway")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func pathErr(c candidate.Candidate, p candidate.Phase, tier candidate.Tier) *candidate.PathError {
	return &candidate.PathError{Candidate: c, Phase: p, Tier: tier, Err: errors.New("boom " + string(p))}
}

func TestCooldownTiers(t *testing.T) {
	clk := testkit.NewClock(testkit.Epoch)
	a := gw(t, "a:1")
	t.Run("CD-1/gateway-tier-cools-all-hosts", func(t *testing.T) {
		cd := NewCooldowns(30*time.Second, clk.Now)
		cd.Fail(pathErr(a, candidate.PhaseGatewayConnect, candidate.TierGateway), "x.com")
		for _, h := range []string{"x.com", "y.com"} {
			if !cd.Cooling("a:1", h) {
				t.Errorf("not cooling for %s", h)
			}
		}
		if got, want := cd.Until("a:1", "y.com"), clk.Now().Add(30*time.Second); !got.Equal(want) {
			t.Errorf("Until = %v, want %v", got, want)
		}
	})
	t.Run("CD-1/host-tier-cools-one-host", func(t *testing.T) {
		cd := NewCooldowns(30*time.Second, clk.Now)
		cd.Fail(pathErr(a, candidate.PhaseConnectResponse, candidate.TierHost), "x.com")
		if !cd.Cooling("a:1", "x.com") || cd.Cooling("a:1", "y.com") || cd.Cooling("b:1", "x.com") {
			t.Error("host-scoped cooldown leaked or missing")
		}
	})
	t.Run("CD-1/none-tier-records-only", func(t *testing.T) {
		cd := NewCooldowns(30*time.Second, clk.Now)
		cd.Fail(pathErr(a, candidate.PhaseStream, candidate.TierNone), "x.com")
		if cd.Cooling("a:1", "x.com") {
			t.Error("TierNone must not cool")
		}
		s := cd.Snapshot()
		if len(s) != 1 || s[0].Failures != 1 || s[0].LastPhase != candidate.PhaseStream || s[0].LastTier != "none" {
			t.Errorf("snapshot %+v", s)
		}
	})
	t.Run("CD-1/direct-never-cooled-for-all-hosts", func(t *testing.T) {
		cd := NewCooldowns(30*time.Second, clk.Now)
		cd.Fail(pathErr(candidate.Direct, candidate.PhaseOriginConnect, candidate.TierGateway), "x.com")
		if !cd.Cooling("direct", "x.com") || cd.Cooling("direct", "y.com") {
			t.Error("direct failure must be host-scoped")
		}
	})
	t.Run("CD-2/zero-disables", func(t *testing.T) {
		cd := NewCooldowns(0, clk.Now)
		cd.Fail(pathErr(a, candidate.PhaseGatewayConnect, candidate.TierGateway), "x.com")
		cd.Fail(pathErr(a, candidate.PhaseTLSProbe, candidate.TierHost), "x.com")
		if cd.Cooling("a:1", "x.com") {
			t.Error("d=0 must never cool")
		}
		if s := cd.Snapshot(); len(s) != 1 || s[0].Failures != 2 || s[0].LastPhase != candidate.PhaseTLSProbe {
			t.Errorf("failures not recorded: %+v", s)
		}
	})
	t.Run("CD-2/expires", func(t *testing.T) {
		clk := testkit.NewClock(testkit.Epoch)
		cd := NewCooldowns(30*time.Second, clk.Now)
		cd.Fail(pathErr(a, candidate.PhaseGatewayConnect, candidate.TierGateway), "x.com")
		cd.Fail(pathErr(a, candidate.PhaseTLSProbe, candidate.TierHost), "y.com")
		clk.Advance(30 * time.Second)
		if cd.Cooling("a:1", "x.com") || cd.Cooling("a:1", "y.com") || !cd.Until("a:1", "y.com").IsZero() {
			t.Error("cooldown did not end after d")
		}
	})
	t.Run("CD-2/later-failure-extends-never-shortens", func(t *testing.T) {
		clk := testkit.NewClock(testkit.Epoch)
		cd := NewCooldowns(30*time.Second, clk.Now)
		cd.Fail(pathErr(a, candidate.PhaseGatewayConnect, candidate.TierGateway), "x.com")
		first := cd.Until("a:1", "x.com")
		clk.Advance(10 * time.Second)
		cd.Fail(pathErr(a, candidate.PhaseGatewayConnect, candidate.TierGateway), "x.com")
		if got := cd.Until("a:1", "x.com"); !got.Equal(first.Add(10 * time.Second)) {
			t.Errorf("not extended: %v", got)
		}
		// A clock that steps back must not shorten a running cooldown.
		clk.Advance(-20 * time.Second)
		cd.Fail(pathErr(a, candidate.PhaseGatewayConnect, candidate.TierGateway), "x.com")
		if got := cd.Until("a:1", "x.com"); !got.Equal(first.Add(10 * time.Second)) {
			t.Errorf("shortened: %v", got)
		}
	})
	t.Run("CD-2/health-check-clears-gateway-cooldown", func(t *testing.T) {
		cd := NewCooldowns(30*time.Second, clk.Now)
		cd.Fail(pathErr(a, candidate.PhaseGatewayConnect, candidate.TierGateway), "x.com")
		cd.Fail(pathErr(a, candidate.PhaseTLSProbe, candidate.TierHost), "y.com")
		cd.ClearGateway("a:1")
		if cd.Cooling("a:1", "x.com") {
			t.Error("gateway cooldown not cleared")
		}
		if !cd.Cooling("a:1", "y.com") {
			t.Error("host-scoped cooldown must survive ClearGateway")
		}
	})
}

func TestCooldownSnapshot(t *testing.T) {
	clk := testkit.NewClock(testkit.Epoch)
	cd := NewCooldowns(30*time.Second, clk.Now)
	a, b := gw(t, "a:1"), gw(t, "b:1")
	cd.Success("b:1")
	cd.Success("b:1")
	cd.Fail(pathErr(a, candidate.PhaseTLSProbe, candidate.TierHost), "z.com")
	cd.Fail(pathErr(a, candidate.PhaseConnectResponse, candidate.TierHost), "y.com")
	cd.Fail(&candidate.PathError{Candidate: b, Phase: candidate.PhaseGatewayConnect, Tier: candidate.TierGateway, Err: errors.New(strings.Repeat("x", 500))}, "y.com")
	s := cd.Snapshot()
	if len(s) != 2 || s[0].Key != "a:1" || s[1].Key != "b:1" {
		t.Fatalf("OPS-2: snapshot keys %+v", s)
	}
	if len(s[0].Hosts) != 2 || s[0].Hosts[0].Host != "y.com" || s[0].Hosts[0].Phase != candidate.PhaseConnectResponse ||
		s[0].Hosts[1].Host != "z.com" || s[0].Hosts[1].Phase != candidate.PhaseTLSProbe || !s[0].Until.IsZero() {
		t.Errorf("CD-3: host cooldowns %+v", s[0])
	}
	if s[1].Successes != 2 || s[1].Failures != 1 || s[1].Until.IsZero() || s[1].LastTier != "gateway" ||
		len(s[1].LastReason) != maxReasonLen || !s[1].LastFailure.Equal(clk.Now()) {
		t.Errorf("CD-3: gateway state %+v", s[1])
	}
	clk.Advance(time.Minute)
	s = cd.Snapshot()
	if len(s[0].Hosts) != 0 || !s[1].Until.IsZero() || s[1].Failures != 1 {
		t.Errorf("expired cooldowns still shown: %+v", s)
	}
}

func TestCooldownBoundedMemory(t *testing.T) {
	clk := testkit.NewClock(testkit.Epoch)
	cd := NewCooldowns(30*time.Second, clk.Now)
	a := gw(t, "a:1")
	for i := range MaxHostCooldowns + 100 {
		clk.Advance(time.Millisecond)
		cd.Fail(pathErr(a, candidate.PhaseTLSProbe, candidate.TierHost), fmt.Sprintf("h%d.example", i))
	}
	cd.mu.Lock()
	n := len(cd.hosts)
	cd.mu.Unlock()
	if n > MaxHostCooldowns {
		t.Fatalf("CD-1/bounded: %d host entries", n)
	}
	if cd.Cooling("a:1", "h0.example") {
		t.Error("oldest entry should have been dropped")
	}
	if !cd.Cooling("a:1", fmt.Sprintf("h%d.example", MaxHostCooldowns+99)) {
		t.Error("newest entry missing")
	}
	// Expired entries go first when room is needed.
	clk.Advance(time.Hour)
	cd.Fail(pathErr(a, candidate.PhaseTLSProbe, candidate.TierHost), "new.example")
	cd.mu.Lock()
	n = len(cd.hosts)
	cd.mu.Unlock()
	if n != 1 {
		t.Errorf("expired entries not pruned: %d left", n)
	}
}

func TestCooldownConcurrent(t *testing.T) {
	cd := NewCooldowns(time.Second, nil)
	a := gw(t, "a:1")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				h := fmt.Sprintf("h%d.example", j%7)
				cd.Fail(pathErr(a, candidate.PhaseTLSProbe, candidate.Tier(i%3)), h)
				cd.Cooling("a:1", h)
				cd.Success("a:1")
				if j%50 == 0 {
					cd.ClearGateway("a:1")
					cd.Snapshot()
				}
			}
		}()
	}
	wg.Wait()
	if s := cd.Snapshot(); s[0].Failures != 1600 || s[0].Successes != 1600 {
		t.Fatalf("counts lost: %+v", s[0])
	}
}
