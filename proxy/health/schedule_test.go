package health

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// gateTarget is a Target whose checks of its one candidate (direct) are
// alive; with gated set, each check says it started on started and waits
// for release (or the run's end).
type gateTarget struct {
	mu sync.Mutex
	s  Settings

	gated    bool
	started  chan time.Time
	release  chan struct{}
	inFlight atomic.Int32
	overlap  atomic.Bool
}

func newGateTarget(t *testing.T, interval time.Duration, gated bool) *gateTarget {
	return &gateTarget{
		s:       Settings{URL: mustURL(t, "http://health.test/"), Interval: interval, Candidates: []candidate.Candidate{candidate.Direct}},
		gated:   gated,
		started: make(chan time.Time, 16),
		release: make(chan struct{}),
	}
}

func (g *gateTarget) Settings() Settings {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.s
}

func (g *gateTarget) set(s Settings) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.s = s
}

func (g *gateTarget) Check(ctx context.Context, _ Settings, c candidate.Candidate) (route.HealthResult, bool) {
	if g.inFlight.Add(1) > 1 {
		g.overlap.Store(true)
	}
	defer g.inFlight.Add(-1)
	if g.gated {
		g.started <- time.Now()
		select {
		case <-g.release:
		case <-ctx.Done():
			return route.HealthResult{Key: c.Key(), Reason: ctx.Err().Error()}, false
		}
	}
	return route.HealthResult{Key: c.Key(), Alive: true}, false
}

func (g *gateTarget) Proved(candidate.Candidate) {}

// nextStart waits up to 5 s for a gated check to start.
func nextStart(t *testing.T, g *gateTarget, what string) time.Time {
	t.Helper()
	select {
	case at := <-g.started:
		return at
	case <-time.After(5 * time.Second):
		t.Fatalf("no check started: %s", what)
		return time.Time{}
	}
}

// The loop's schedule: when checks run, that they never overlap, and that
// Stop ends them (SPEC HC-1, HC-2, OPS-7, LIS-3).
func TestSchedule(t *testing.T) {
	t.Run("HC-2/kick-storm-runs-at-most-2-checks-per-second", func(t *testing.T) {
		g := newGateTarget(t, 0, false)
		h, _ := startChecker(t, g, nil)
		start := time.Now()
		// Kick for most of a second, every 10 ms (bounded).
		for i := 0; i < 200 && time.Since(start) < 900*time.Millisecond; i++ {
			h.Kick()
			time.Sleep(10 * time.Millisecond) // pacing the storm, not synchronisation
		}
		if n := h.Runs(); n < 1 || n > 2 {
			t.Fatalf("%d health checks within a second of a kick storm, want 1 or 2", n)
		}
		// The coalesced kick is not lost: one more check follows the gap.
		testkit.WaitFor(t, 3*time.Second, "the coalesced check", func() bool { return h.Runs() >= 2 })
	})

	t.Run("HC-2/kicks-during-a-run-coalesce-into-one-after-the-gap", func(t *testing.T) {
		g := newGateTarget(t, 0, true)
		h, _ := startChecker(t, g, nil)
		h.Kick()
		first := nextStart(t, g, "the kicked check")
		for range 10 {
			h.Kick()
		}
		g.release <- struct{}{}
		second := nextStart(t, g, "the coalesced check")
		if gap := second.Sub(first); gap < MinKickGap-50*time.Millisecond {
			t.Fatalf("kicked checks %v apart, want at least %v (HC-2)", gap, MinKickGap)
		}
		g.release <- struct{}{}
		select {
		case <-g.started:
			t.Fatal("ten kicks during one run made more than one more check")
		case <-time.After(MinKickGap + 500*time.Millisecond):
		}
		if n := h.Runs(); n != 2 {
			t.Fatalf("runs %d, want 2", n)
		}
	})

	t.Run("HC-2/runs-never-overlap", func(t *testing.T) {
		g := newGateTarget(t, 0, true)
		h, _ := startChecker(t, g, nil)
		h.Kick()
		nextStart(t, g, "the kicked check")
		ran := make(chan struct{})
		go func() { h.Run(); close(ran) }() // waits for the kicked run
		select {
		case <-g.started:
			t.Fatal("a second run started while the first was checking")
		case <-time.After(200 * time.Millisecond):
		}
		g.release <- struct{}{}
		nextStart(t, g, "the waiting run")
		g.release <- struct{}{}
		<-ran
		if g.overlap.Load() {
			t.Fatal("two checks ran at once")
		}
	})

	t.Run("HC-1/interval-checks-at-start-and-periodically", func(t *testing.T) {
		g := newGateTarget(t, 20*time.Millisecond, false)
		h, state := startChecker(t, g, nil)
		testkit.WaitFor(t, 3*time.Second, "periodic checks", func() bool { return h.Runs() >= 3 })
		if p := state.Preferred(); p != candidate.Direct.Key() {
			t.Fatalf("preferred %q after periodic checks", p)
		}
	})

	t.Run("HC-1/no-url-no-run", func(t *testing.T) {
		g := newGateTarget(t, 20*time.Millisecond, false)
		g.set(Settings{Interval: 20 * time.Millisecond, Candidates: []candidate.Candidate{candidate.Direct}})
		h, state := startChecker(t, g, nil)
		h.Kick()
		h.Run()
		if n := h.Runs(); n != 0 || !state.Snapshot().LastRun.IsZero() {
			t.Fatalf("runs %d, state %+v without a health URL", n, state.Snapshot())
		}
	})

	t.Run("OPS-7/rearm-takes-the-new-interval-and-url", func(t *testing.T) {
		g := newGateTarget(t, 0, false)
		h, _ := startChecker(t, g, nil)
		on := g.Settings()
		on.Interval = 20 * time.Millisecond
		g.set(on)
		h.Rearm()
		testkit.WaitFor(t, 3*time.Second, "periodic checks after the rearm", func() bool { return h.Runs() >= 3 })
		g.set(Settings{Interval: 20 * time.Millisecond}) // health URL removed
		h.Rearm()
		// Rearm is served by the loop between runs: once two more runs
		// could have passed, the count no longer moves.
		testkit.WaitFor(t, 3*time.Second, "the checks to stop", func() bool {
			n := h.Runs()
			time.Sleep(100 * time.Millisecond) // five periods: a run would show
			return h.Runs() == n
		})
	})

	t.Run("LIS-3/stop-ends-the-loop-kick-after-stop-never-runs", func(t *testing.T) {
		before := goleak.IgnoreCurrent()
		g := newGateTarget(t, 20*time.Millisecond, false)
		h := Start(g, route.NewHealth(2, time.Now), quietLog())
		testkit.WaitFor(t, 3*time.Second, "periodic checks", func() bool { return h.Runs() >= 3 })
		h.Stop()
		h.Stop() // idempotent
		runs := h.Runs()
		h.Kick() // after Stop: never blocks, never runs
		h.Rearm()
		h.Run()
		goleak.VerifyNone(t, before)
		if h.Runs() != runs {
			t.Fatal("a check ran after Stop")
		}
	})

	t.Run("LIS-3/stop-cuts-a-hanging-check-and-records-nothing", func(t *testing.T) {
		hole := testworld.Blackhole(t) // accepts, never answers
		tg := newProbeTarget(t, "http://"+hole+"/", nil, candidate.Direct)
		state := route.NewHealth(2, time.Now)
		h := Start(tg, state, quietLog())
		h.Kick()
		testkit.WaitFor(t, 3*time.Second, "the check to start", func() bool { return h.Runs() == 1 })
		start := time.Now()
		h.Stop()
		if took := time.Since(start); took > time.Second {
			t.Fatalf("Stop took %v with a check hanging on a silent origin", took)
		}
		if p := state.Snapshot(); !p.LastRun.IsZero() {
			t.Fatalf("a run cut by Stop was recorded: %+v", p)
		}
	})
}

// Kicks and live changes that meet a check already under way (SPEC HC-2,
// OPS-7).
func TestScheduleMeetsACheckUnderWay(t *testing.T) {
	t.Run("HC-2/kick-while-the-gap-is-waited-out-is-the-same-check", func(t *testing.T) {
		g := newGateTarget(t, 0, false)
		h, _ := startChecker(t, g, nil)
		h.Kick()
		testkit.WaitFor(t, 5*time.Second, "the kicked check", func() bool { return h.Runs() == 1 })
		h.Kick()
		// The loop has taken the second kick when the channel is empty
		// again: it now waits out the one-second gap before its check.
		testkit.WaitFor(t, 5*time.Second, "the loop to take the kick", func() bool { return len(h.kickC) == 0 })
		h.Kick() // before that check starts: the same kick (Kick)
		testkit.WaitFor(t, 5*time.Second, "the check after the gap", func() bool { return h.Runs() == 2 })
		deadline := time.Now().Add(MinKickGap + 500*time.Millisecond)
		for time.Now().Before(deadline) { // bounded watch: a third check would start within one gap
			if n := h.Runs(); n != 2 {
				t.Fatalf("runs %d, want 2: a kick made while the gap was waited out got a check of its own", n)
			}
			time.Sleep(20 * time.Millisecond) // polling interval of the watch
		}
	})

	t.Run("OPS-7/candidate-removed-during-a-run-is-not-recorded", func(t *testing.T) {
		g := newGateTarget(t, 0, true)
		state := route.NewHealth(2, time.Now)
		h := Start(g, state, quietLog())
		defer h.Stop()
		h.Kick()
		nextStart(t, g, "the check of direct")
		// A live change replaces direct by a gateway while direct is
		// being checked; the engine drops direct's marks (route.Health
		// Reconfigure), as Engine.Reconfigure does.
		gw := gatewayCand(t, "http://127.0.0.1:9")
		s := g.Settings()
		s.Candidates = []candidate.Candidate{gw}
		g.set(s)
		state.Reconfigure(2, func(k string) bool { return k == gw.Key() })
		g.release <- struct{}{}
		testkit.WaitFor(t, 5*time.Second, "the run to be recorded", func() bool { return !state.Snapshot().LastRun.IsZero() })
		snap := state.Snapshot()
		if snap.Preferred == candidate.Direct.Key() {
			t.Fatalf("the removed candidate became the preference: %+v", snap)
		}
		for _, m := range snap.Marks {
			if m.Key == candidate.Direct.Key() {
				t.Fatalf("the removed candidate has a health mark again: %+v", snap)
			}
		}
	})
}
