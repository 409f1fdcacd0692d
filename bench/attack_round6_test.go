package main

import (
	"math"
	"testing"
)

// TestAttackRound6PairedSymmetric: a paired ratio favours neither row by
// construction: a's ratio to b is the reciprocal of b's to a, also over an
// even number of rounds (scenario 2a always measures an even number),
// where the median is taken between the middle two (issue 20, scenario 2's
// method; bench/README.md "≥ Go relay").
func TestAttackRound6PairedSymmetric(t *testing.T) {
	t.Run("issue-20/paired-ratio-reciprocal", func(t *testing.T) {
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
	})
}
