package balance

import (
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

// BindKey is the assignment key: (session, pool, unified
// model). Session is the raw session id ("" for a call without one, which
// is never bound); it stays inside State (status shows SessionHash).
type BindKey struct {
	Pool, Session, Model string
}

// binding is a recorded sticky assignment.
type binding struct {
	member   string
	lastUsed time.Time
}

// flight is the shared first pick of a new key while its first calls run
// (concurrent first calls of one new session share one assignment, or
// they would spread one session over several members): no binding exists
// yet (it is recorded only on success), but every call that arrives
// meanwhile starts on the same member.
type flight struct {
	member string
	refs   int
}

// assigner owns sticky bindings, in-flight first picks and the per-pool
// rotation cursors. All methods are safe for concurrent use; time is passed
// in (tests inject the clock).
type assigner struct {
	mu       sync.Mutex
	bindings map[BindKey]*binding
	flights  map[BindKey]*flight
	cursor   map[string]int
}

func newAssigner() *assigner {
	return &assigner{bindings: map[BindKey]*binding{}, flights: map[BindKey]*flight{}, cursor: map[string]int{}}
}

// acquire picks the member a call starts on (SPEC POOL-4, POOL-6).
// eligible are the pool members that can serve this request, in configured
// order; hot tells whether a member is out of cooldown. For sticky pools:
// a live binding whose member is eligible is reused (and touched); else a
// running first pick of the same key is joined; else the session's member
// for another unified model is preferred when eligible and hot, else the hot
// eligible member with the fewest bound sessions (bindings plus first picks
// in flight), ties rotating. round-robin rotates per call; failover takes the
// first hot member. Every acquire must be paired with release, passing
// inFlight back.
func (a *assigner) acquire(p *config.PoolConfig, key BindKey, eligible []string, hot func(string) bool, now time.Time) (member string, inFlight bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	pickFrom := hotOnly(eligible, hot)
	switch p.Strategy {
	case config.StrategyRoundRobin:
		i := a.cursor[p.ID] % len(pickFrom)
		a.cursor[p.ID] = i + 1
		return pickFrom[i], false
	case config.StrategyFailover:
		return pickFrom[0], false
	}
	if key.Session != "" {
		if b := a.bindings[key]; b != nil {
			if now.Sub(b.lastUsed) < p.SessionTTL && slices.Contains(eligible, b.member) {
				b.lastUsed = now
				return b.member, false
			}
			if now.Sub(b.lastUsed) >= p.SessionTTL {
				delete(a.bindings, key) // expired: balance again
			}
		}
		if f := a.flights[key]; f != nil && slices.Contains(eligible, f.member) {
			f.refs++
			return f.member, true
		}
	}
	if key.Session != "" {
		// Stay on the session's member when it serves this model too.
		for k, b := range a.bindings {
			if k.Pool == key.Pool && k.Session == key.Session && now.Sub(b.lastUsed) < p.SessionTTL && slices.Contains(pickFrom, b.member) {
				member = b.member
				break
			}
		}
	}
	if member == "" {
		member = a.leastBound(p, pickFrom, now)
	}
	if key.Session == "" {
		return member, false
	}
	if f := a.flights[key]; f != nil {
		f.member, f.refs = member, f.refs+1
	} else {
		a.flights[key] = &flight{member: member, refs: 1}
	}
	return member, true
}

// leastBound returns the member of candidates with the fewest live bindings
// plus first picks in flight; among equals the first at or after the pool's
// cursor (ties rotate). Expired bindings are swept. Caller holds a.mu.
func (a *assigner) leastBound(p *config.PoolConfig, candidates []string, now time.Time) string {
	load := map[string]int{}
	for k, b := range a.bindings {
		if k.Pool != p.ID {
			continue
		}
		if now.Sub(b.lastUsed) >= p.SessionTTL {
			delete(a.bindings, k)
			continue
		}
		load[b.member]++
	}
	for k, f := range a.flights {
		if k.Pool == p.ID {
			load[f.member]++
		}
	}
	idx := map[string]int{}
	for i, m := range p.Members {
		idx[m] = i
	}
	best, bestDist := "", 0
	n := len(p.Members)
	start := a.cursor[p.ID] % n
	for _, m := range candidates {
		dist := (idx[m] - start + n) % n
		if best == "" || load[m] < load[best] || (load[m] == load[best] && dist < bestDist) {
			best, bestDist = m, dist
		}
	}
	a.cursor[p.ID] = (idx[best] + 1) % n
	return best
}

// release ends a call begun with acquire. success is the member that served
// the call ("" when none did); it becomes the key's binding (SPEC POOL-8:
// recorded only when a call succeeds, and it moves to the member that
// succeeded).
func (a *assigner) release(p *config.PoolConfig, key BindKey, inFlight bool, success string, now time.Time) {
	if p.Strategy != config.StrategySticky || key.Session == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if success != "" {
		a.bindings[key] = &binding{member: success, lastUsed: now}
		if f := a.flights[key]; f != nil {
			f.member = success // later joiners follow the member that worked
		}
	}
	if f := a.flights[key]; f != nil && inFlight {
		if f.refs--; f.refs <= 0 {
			delete(a.flights, key)
		}
	}
}

// bind records a binding immediately (used at a stream's commit point, so
// joiners of the same first pick see it before the stream ends).
func (a *assigner) bind(p *config.PoolConfig, key BindKey, member string, now time.Time) {
	if p.Strategy != config.StrategySticky || key.Session == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.bindings[key] = &binding{member: member, lastUsed: now}
	if f := a.flights[key]; f != nil {
		f.member = member
	}
}

// retain drops bindings whose pool or member no longer exists.
func (a *assigner) retain(cfg *config.Config) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, b := range a.bindings {
		p := cfg.Pool(k.Pool)
		if p == nil || !slices.Contains(p.Members, b.member) {
			delete(a.bindings, k)
		}
	}
}

// Binding is one live binding, as listed for status. Key.Session is the
// raw id only in memory ("" from a shared store, which keeps no raw id);
// Session is always its short hash (SessionHash).
type Binding struct {
	Key      BindKey
	Session  string
	Member   string
	LastUsed time.Time
}

// snapshot lists live bindings, sorted by pool, session, model.
func (a *assigner) snapshot(cfg *config.Config, now time.Time) []Binding {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []Binding
	for k, b := range a.bindings {
		if p := cfg.Pool(k.Pool); p != nil && now.Sub(b.lastUsed) < p.SessionTTL {
			out = append(out, Binding{Key: k, Session: SessionHash(k.Session), Member: b.member, LastUsed: b.lastUsed})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i].Key, out[j].Key
		if x.Pool != y.Pool {
			return x.Pool < y.Pool
		}
		if x.Session != y.Session {
			return x.Session < y.Session
		}
		return x.Model < y.Model
	})
	return out
}

// hotOnly returns the hot members of eligible, or all of eligible when none
// is hot (fail-open picks among cooling members).
func hotOnly(eligible []string, hot func(string) bool) []string {
	var out []string
	for _, m := range eligible {
		if hot(m) {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return eligible
	}
	return out
}

// AttemptOrder is the order members are tried in for one call (SPEC POOL-7,
// POOL-11): the hot members, starting at primary and continuing cyclically in
// configured order; then the cooling ones by earliest recovery, so that when
// every hot member has failed the call still fails open onto them instead of
// giving up (and when no member is hot, that is the whole order). until
// reports a member's cooldown deadline and whether it is cooling.
func AttemptOrder(eligible []string, primary string, until func(string) (time.Time, bool)) []string {
	var hot, cooling []string
	deadline := map[string]time.Time{}
	for _, m := range eligible {
		if t, c := until(m); c {
			cooling = append(cooling, m)
			deadline[m] = t
		} else {
			hot = append(hot, m)
		}
	}
	sort.SliceStable(cooling, func(i, j int) bool { return deadline[cooling[i]].Before(deadline[cooling[j]]) })
	start := 0
	for i, m := range hot {
		if m == primary {
			start = i
		}
	}
	out := make([]string, 0, len(eligible))
	out = append(append(out, hot[start:]...), hot[:start]...)
	return append(out, cooling...)
}
