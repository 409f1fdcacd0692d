package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestSerpentineOrder: over a pair of rounds every row has the same mean
// position, so a load that drifts through a comparison favours none
// (scenario 2's method).
func TestSerpentineOrder(t *testing.T) {
	const n = 5
	for r := range 4 {
		seen := map[int]bool{}
		for k := range n {
			seen[serpentine(r, k, n)] = true
		}
		if len(seen) != n {
			t.Fatalf("round %d does not measure every row once: %v", r, seen)
		}
	}
	for i := range n {
		pos := map[int]int{}
		for r := range 2 {
			for k := range n {
				if serpentine(r, k, n) == i {
					pos[r] = k
				}
			}
		}
		if pos[0]+pos[1] != n-1 {
			t.Errorf("row %d at positions %d and %d: mean position not the middle", i, pos[0], pos[1])
		}
	}
}

// TestPairedRatio: the ratio of two rows is the median of their per-round
// ratios, not the ratio of their median rounds (scenario 2).
func TestPairedRatio(t *testing.T) {
	// Both rows' rounds vary by 2× with the machine's load, but a is 1.1×
	// b in every round: the paired ratio has no spread at all.
	a := loadResult{perRound: []float64{110, 55, 121, 99}}
	b := loadResult{perRound: []float64{100, 50, 110, 90}}
	med, lo, hi := pairedRatio(a, b)
	if math.Abs(med-1.1) > 1e-9 || math.Abs(lo-1.1) > 1e-9 || math.Abs(hi-1.1) > 1e-9 {
		t.Errorf("pairedRatio = %v, %v, %v; want 1.1 each", med, lo, hi)
	}
	if got := pairedCell(a, b); got != "1.10×" {
		t.Errorf("pairedCell = %q", got)
	}
	if got := pairedRange(a, b); got != "1.10× (1.10–1.10× over 4 rounds)" {
		t.Errorf("pairedRange = %q", got)
	}
	// A round where one row measured nothing is left out of the pairing.
	c := loadResult{perRound: []float64{100, 0, 100, 100}}
	d := loadResult{perRound: []float64{50, 80, 100, 200}}
	if med, lo, hi := pairedRatio(c, d); med != 1 || lo != 0.5 || hi != 2 {
		t.Errorf("pairedRatio with an empty round = %v, %v, %v; want 1, 0.5, 2", med, lo, hi)
	}
	if got := pairedCell(loadResult{}, d); got != "–" {
		t.Errorf("no rounds: %q", got)
	}
}

// TestPairedRatioReciprocal: a paired ratio favours neither row by
// construction: a's ratio to b is the reciprocal of b's to a, also over an
// even number of rounds (scenario 2a always measures an even number),
// where the median is taken between the middle two (scenario 2's method;
// bench/README.md "≥ Go relay").
func TestPairedRatioReciprocal(t *testing.T) {
	for _, c := range []struct{ a, b []float64 }{
		{[]float64{100, 100}, []float64{50, 200}},
		{[]float64{100, 93, 111, 100}, []float64{100, 100, 100, 100}},
		{[]float64{9, 10, 11}, []float64{10, 10, 10}},
	} {
		a, b := loadResult{perRound: c.a}, loadResult{perRound: c.b}
		ab, _, _ := pairedRatio(a, b)
		ba, _, _ := pairedRatio(b, a)
		if math.Abs(ab*ba-1) > 1e-9 {
			t.Errorf("%v vs %v: a/b %.4f×, b/a %.4f×: each row ahead of the other", c.a, c.b, ab, ba)
		}
	}
}

// TestCompareRowsAndNote: a comparison against the origin itself gives
// every row its paired ratio against the first path, the target row both
// verdicts, and notes the target's per-round ratio to the reference relay
// with its range (scenario 2's method).
func TestCompareRowsAndNote(t *testing.T) {
	o, err := newOrigin("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	p := path{origin: o.plainAddr()}
	w := &world{ph: phases{warm: 50 * time.Millisecond, round: 300 * time.Millisecond}}
	paths := []named{{"direct", p, nil}, {"proxy", p, nil}, {refSpliceName, p, nil}}
	w.compare("2 test", paths, 2, false, "proxy", 0.01, 2)
	if len(w.rows) != 3 {
		t.Fatalf("%d rows, want 3", len(w.rows))
	}
	tgt := w.rows[1]
	if tgt.vsDir == "–" || tgt.vsDir == "" || w.rows[2].vsDir == "" {
		t.Errorf("no paired ratio against direct: %+v", w.rows)
	}
	if !strings.HasSuffix(tgt.target, "; ≥ Go relay") || !strings.HasPrefix(tgt.verdict, "PASS; ") {
		t.Errorf("target row %q / %q", tgt.target, tgt.verdict)
	}
	if len(w.notes) != 1 || !strings.Contains(w.notes[0], refSpliceName+" ") || !strings.Contains(w.notes[0], "over 2 rounds") {
		t.Errorf("notes %q", w.notes)
	}
}
