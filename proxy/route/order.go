package route

import "github.com/dual-proxy/dual-proxy/proxy/candidate"

// Order returns the candidates to try for one request, first to last
// (SPEC ORD-1, ORD-2). It is a pure function and safe for
// concurrent use; cands is not modified and the result is a new slice.
//
// Inputs:
//   - cands: the default order (direct last).
//   - rule: the destination rule for the host (Rules.Match).
//   - cached: the per-host cache entry's Candidate.Key, or "".
//   - preferred: the global health-preferred Candidate.Key, or "".
//     A cached or preferred key that is not in cands is ignored.
//   - cooling: reports whether a candidate key is in cooldown for this
//     host, gateway-wide or host-scoped; nil means none cools.
//     It is called exactly once per candidate.
//
// Result, in this order:
//
//  1. The hot zone (candidates not cooling):
//     a. RulePreferDirect: direct first.
//     b. the cached candidate, then the preferred candidate (each once),
//     c. the other hot candidates in default order,
//     d. RulePreferProxy: direct last of the hot zone.
//  2. The cold zone: cooling candidates in default order.
//
// So the rule alone decides where direct goes; cache and preference order
// the remaining hot candidates (rule > cache > preference > default).
// Under RulePreferProxy a cached or preferred "direct" does not pull direct
// forward: the rule wins, and the cache/preference slot is left to the
// next source (a preferred gateway still goes first). Under
// RulePreferDirect a cached or preferred gateway comes right after direct.
// Nothing reorders the cold zone, so a rule, a cache entry or a health
// preference never pulls a cooling candidate forward; if every
// candidate is cooling, the result is the default order (fail open).
//
// Cost: one allocation (the result) for up to 64 candidates.
func Order(cands []candidate.Candidate, rule Rule, cached, preferred string, cooling func(key string) bool) []candidate.Candidate {
	n := len(cands)
	out := make([]candidate.Candidate, 0, n)
	if n == 0 {
		return out
	}
	// cold marks cooling candidates; a word on the stack for the usual
	// short lists, a slice beyond 64.
	var coldWord uint64
	var coldBig []bool
	if n > 64 {
		coldBig = make([]bool, n)
	}
	isCold := func(i int) bool {
		if coldBig != nil {
			return coldBig[i]
		}
		return coldWord&(1<<uint(i)) != 0
	}
	directIdx, cachedIdx, prefIdx := -1, -1, -1
	for i := range cands {
		k := cands[i].Key()
		if cooling != nil && cooling(k) {
			if coldBig != nil {
				coldBig[i] = true
			} else {
				coldWord |= 1 << uint(i)
			}
			continue
		}
		if cands[i].Direct && directIdx < 0 {
			directIdx = i
		}
		if cachedIdx < 0 && cached != "" && k == cached {
			cachedIdx = i
		}
		if prefIdx < 0 && preferred != "" && k == preferred {
			prefIdx = i
		}
	}
	if (rule == RulePreferDirect || rule == RulePreferProxy) && directIdx >= 0 {
		// The rule owns direct's place; cache and preference cannot move it.
		if cachedIdx == directIdx {
			cachedIdx = -1
		}
		if prefIdx == directIdx {
			prefIdx = -1
		}
	} else {
		directIdx = -1 // no rule: direct is an ordinary hot candidate
	}
	if prefIdx == cachedIdx {
		prefIdx = -1
	}
	if rule == RulePreferDirect && directIdx >= 0 {
		out = append(out, cands[directIdx])
	}
	if cachedIdx >= 0 {
		out = append(out, cands[cachedIdx])
	}
	if prefIdx >= 0 {
		out = append(out, cands[prefIdx])
	}
	for i := range cands {
		if i == directIdx || i == cachedIdx || i == prefIdx || isCold(i) {
			continue
		}
		out = append(out, cands[i])
	}
	if rule == RulePreferProxy && directIdx >= 0 {
		out = append(out, cands[directIdx])
	}
	for i := range cands {
		if isCold(i) {
			out = append(out, cands[i])
		}
	}
	return out
}
