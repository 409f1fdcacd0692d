package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Paired per-round ratios (scenario 2): every round of a
// comparison measures each row once, so a round's ratio of two rows
// compares them under the same background load. The median of those
// ratios swings less between runs than the ratio of the two rows' median
// rounds, which pairs a good round of one row with a bad one of the other.
// Scenario 2's comparisons (compare) use them for every ratio.

// serpentine is the row measured in slot i of a round of n rows: forward
// in even rounds, reversed in odd ones, so that over a pair of rounds every
// row has the same mean position and a load that drifts steadily through
// the group favours no row.
func serpentine(round, i, n int) int {
	if round%2 == 1 {
		return n - 1 - i
	}
	return i
}

// pairedRatio is the median, minimum and maximum over the rounds of a's
// req/s divided by b's in the same round; NaN for all three when a and b
// share no round with both rates above zero. The median is taken of the
// ratios' logarithms, so that between the middle two of an even number of
// rounds it is their geometric mean: pairedRatio(b, a) is the reciprocal
// of pairedRatio(a, b), where the arithmetic mean of 0.5× and 2× made each
// row 1.25× the other.
func pairedRatio(a, b loadResult) (med, lo, hi float64) {
	var rs []float64
	for r := range min(len(a.perRound), len(b.perRound)) {
		if a.perRound[r] > 0 && b.perRound[r] > 0 {
			rs = append(rs, math.Log(a.perRound[r]/b.perRound[r]))
		}
	}
	if len(rs) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	return math.Exp(median(rs)), math.Exp(slices.Min(rs)), math.Exp(slices.Max(rs))
}

// pairedCell is pairedRatio's median as a table cell ("–" when none).
func pairedCell(a, b loadResult) string {
	med, _, _ := pairedRatio(a, b)
	if math.IsNaN(med) {
		return "–"
	}
	return fmt.Sprintf("%.2f×", med)
}

// pairedRange describes a's paired ratios against b for a note: median
// and range over the rounds, e.g. "1.02× (0.91–1.12× over 8 rounds)".
func pairedRange(a, b loadResult) string {
	med, lo, hi := pairedRatio(a, b)
	if math.IsNaN(med) {
		return "–"
	}
	return fmt.Sprintf("%.2f× (%.2f–%.2f× over %d rounds)", med, lo, hi, min(len(a.perRound), len(b.perRound)))
}

// compare measures each path at conc in the given number of interleaved
// rounds and adds rows with ratios against the first path (direct) and
// squid; the row named tgt gets the ratio targets. Every ratio, and so
// every verdict, is the median of the per-round ratios (pairedRatio), for
// every row alike.
func (w *world) compare(sec string, paths []named, conc int, newConn bool, tgt string, want float64, rounds int) {
	res := w.groupRounds(sec, paths, conc, newConn, rounds)
	find := func(name string) int { return slices.IndexFunc(paths, func(p named) bool { return p.name == name }) }
	sq := find("squid")
	dir := res[0]
	for i, n := range paths {
		r := res[i]
		rw := row{sec: sec, path: n.name, conc: fmt.Sprint(conc), result: fmtRate(r.rps), spread: fmt.Sprintf("±%.0f%%", r.spread),
			p50: fmtDur(r.p50), p99: fmtDur(r.p99), cpu: fmtCPU(r.cpuPerOp)}
		if i > 0 {
			rw.vsDir = pairedCell(r, dir)
		}
		if sq >= 0 && n.name != "squid" {
			rw.vsSquid = pairedCell(r, res[sq])
		}
		if n.name == tgt {
			med, _, _ := pairedRatio(r, dir)
			rw.target = fmt.Sprintf("≥ %.2f× direct", want)
			rw.verdict = verdict(med >= want)
			if ref := find(refSpliceName); ref >= 0 {
				// at least the minimal Go relay's rate, same run
				med, _, _ := pairedRatio(r, res[ref])
				rw.target += "; ≥ Go relay"
				rw.verdict += "; " + verdict(med >= 1)
			}
			w.pairedNote(sec, paths, res, i)
		}
		w.add(rw)
	}
}

// pairedNote prints and notes the target row's paired ratios against the
// reference relays and a [B] row (-compare), with their range over the
// rounds.
func (w *world) pairedNote(sec string, paths []named, res []loadResult, i int) {
	var parts []string
	for j, n := range paths {
		if n.name == refSpliceName || n.name == refBufName || strings.HasPrefix(n.name, "[B] ") {
			parts = append(parts, fmt.Sprintf("%s %s", n.name, pairedRange(res[i], res[j])))
		}
	}
	if len(parts) == 0 {
		return
	}
	s := fmt.Sprintf("%s: %s per round against %s.", sec, paths[i].name, strings.Join(parts, "; "))
	fmt.Println("  " + s)
	w.note("%s", s)
}
