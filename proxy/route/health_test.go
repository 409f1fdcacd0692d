package route

import (
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
)

func res(key string, alive bool) HealthResult { return HealthResult{Key: key, Alive: alive} }

// runLoop plays the documented health loop: probe in default order until
// WantsMore says stop, then Record. alive gives each candidate's outcome.
func runLoop(h *Health, order []string, alive map[string]bool) []HealthResult {
	var got []HealthResult
	for _, k := range order {
		got = append(got, res(k, alive[k]))
		if !h.WantsMore(got) {
			break
		}
	}
	h.Record(got)
	return got
}

func TestHealth(t *testing.T) {
	order := []string{"a:1", "b:1", "direct"}
	t.Run("HC-1/first-alive-becomes-preferred", func(t *testing.T) {
		h := NewHealth(2, nil)
		got := runLoop(h, order, map[string]bool{"b:1": true, "direct": true})
		if h.Preferred() != "b:1" || len(got) != 2 {
			t.Fatalf("preferred %q after probing %v", h.Preferred(), got)
		}
	})
	t.Run("HC-1/all-failing-clears-preference", func(t *testing.T) {
		h := NewHealth(2, nil)
		runLoop(h, order, map[string]bool{"a:1": true})
		if h.Preferred() != "a:1" {
			t.Fatalf("preferred %q", h.Preferred())
		}
		got := runLoop(h, order, nil)
		if h.Preferred() != "" || len(got) != 3 {
			t.Fatalf("preferred %q after all failing (%d probed)", h.Preferred(), len(got))
		}
	})
	t.Run("HC-4/flapping-never-wins-back", func(t *testing.T) {
		h := NewHealth(2, nil)
		runLoop(h, order, map[string]bool{"a:1": true, "b:1": true})
		if h.Preferred() != "a:1" {
			t.Fatalf("start: %q", h.Preferred())
		}
		for i := range 6 { // fail, pass, fail, pass, …
			runLoop(h, order, map[string]bool{"a:1": i%2 == 1, "b:1": true})
			if h.Preferred() != "b:1" {
				t.Fatalf("run %d: flapping a:1 won back the preference (%q)", i, h.Preferred())
			}
		}
	})
	t.Run("HC-4/flapping-alone-gives-no-preference", func(t *testing.T) {
		h := NewHealth(2, nil)
		for i := range 6 {
			h.Record([]HealthResult{res("a:1", i%2 == 1)})
			if h.Preferred() != "" {
				t.Fatalf("run %d: recovering a:1 preferred", i)
			}
		}
	})
	t.Run("HC-4/recovers-after-count-passes", func(t *testing.T) {
		h := NewHealth(2, nil)
		alive := map[string]bool{"b:1": true}
		runLoop(h, order, alive) // a fails
		alive["a:1"] = true
		got := runLoop(h, order, alive) // pass 1: not yet
		if h.Preferred() != "b:1" || len(got) != 2 {
			t.Fatalf("after 1 pass: %q, probed %v", h.Preferred(), got)
		}
		got = runLoop(h, order, alive) // pass 2: eligible again
		if h.Preferred() != "a:1" || len(got) != 1 {
			t.Fatalf("after 2 passes: %q, probed %v", h.Preferred(), got)
		}
	})
	t.Run("HC-4/traffic-failure-needs-recovery", func(t *testing.T) {
		h := NewHealth(2, nil)
		all := map[string]bool{"a:1": true, "b:1": true, "direct": true}
		runLoop(h, order, all)
		h.MarkFailed("a:1")
		if h.Preferred() != "" {
			t.Fatalf("MarkFailed of the preference must clear it, got %q", h.Preferred())
		}
		runLoop(h, order, all)
		if h.Preferred() != "b:1" {
			t.Fatalf("one pass after traffic failure: %q", h.Preferred())
		}
		h.MarkFailed("direct") // not the preference: stays
		if h.Preferred() != "b:1" {
			t.Fatalf("MarkFailed of another key changed preference to %q", h.Preferred())
		}
		runLoop(h, order, all)
		if h.Preferred() != "a:1" {
			t.Fatalf("two passes after traffic failure: %q", h.Preferred())
		}
	})
	t.Run("HC-1/target-failing-on-every-path-marks-no-path", func(t *testing.T) {
		h := NewHealth(2, nil)
		runLoop(h, order, map[string]bool{"a:1": true})
		got := runLoop(h, order, nil) // offline: the URL fails on every path
		if len(got) != 3 || h.Preferred() != "" || !h.TargetDown() || !h.Snapshot().TargetDown {
			t.Fatalf("probed %v, preferred %q, target down %v", got, h.Preferred(), h.TargetDown())
		}
		// The paths were not marked: back online, a:1 is preferred at
		// its first pass, no recovery needed (HC-4).
		runLoop(h, order, map[string]bool{"a:1": true})
		if h.Preferred() != "a:1" || h.TargetDown() {
			t.Fatalf("back online: preferred %q, target down %v", h.Preferred(), h.TargetDown())
		}
		// One candidate alone: its failure counts.
		h1 := NewHealth(2, nil)
		h1.Record([]HealthResult{res("a:1", true)})
		h1.Record([]HealthResult{res("a:1", false)})
		h1.Record([]HealthResult{res("a:1", true)})
		if h1.TargetDown() || h1.Preferred() != "" {
			t.Fatalf("lone candidate: target down %v, preferred %q after fail, pass", h1.TargetDown(), h1.Preferred())
		}
	})
	t.Run("HC-4/recover-count-1-means-no-hysteresis", func(t *testing.T) {
		h := NewHealth(0, nil)
		h.Record([]HealthResult{res("a:1", false), res("b:1", true)})
		h.Record([]HealthResult{res("a:1", true)})
		if h.Preferred() != "a:1" {
			t.Fatalf("preferred %q", h.Preferred())
		}
	})
	t.Run("HC-1/snapshot", func(t *testing.T) {
		clk := testkit.NewClock(testkit.Epoch)
		h := NewHealth(2, clk.Now)
		h.Record([]HealthResult{{Key: "a:1", Reason: "gateway-connect: refused"}, res("b:1", true)})
		h.Record([]HealthResult{res("a:1", true), res("b:1", true)})
		s := h.Snapshot()
		if s.Preferred != "b:1" || !s.LastRun.Equal(clk.Now()) || len(s.Results) != 2 || !s.Results[0].Alive {
			t.Fatalf("snapshot %+v", s)
		}
		want := []HealthMark{{Key: "a:1", Streak: 1, Eligible: false}, {Key: "b:1", Streak: 2, Eligible: true}}
		if len(s.Marks) != 2 || s.Marks[0] != want[0] || s.Marks[1] != want[1] {
			t.Fatalf("marks %+v, want %+v", s.Marks, want)
		}
		clk.Advance(time.Minute)
		h.Record(nil)
		if s := h.Snapshot(); s.Preferred != "" || len(s.Results) != 0 || !s.LastRun.Equal(clk.Now()) {
			t.Fatalf("empty run: %+v", s)
		}
	})
}
