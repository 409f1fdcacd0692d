// Package balance is the pool's selection core: which member a call starts
// on (sticky bindings, least bound, round robin, failover; SPEC POOL-4/5/6),
// the order members are tried in (hot first, then the cooling ones by
// earliest recovery; POOL-11), the cooldown rules (POOL-10), what class a
// failure is (POOL-10) and which session a request belongs to (POOL-5). All
// it remembers sits behind one owner, State. It opens no connection and
// writes nothing to a client.
package balance

import (
	"time"

	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/pool/wire"
)

// State owns everything the pool remembers between calls: sticky bindings
// and the first picks in flight (POOL-4/5/6), member cooldowns (POOL-10),
// success/failure counters, prompt-cache totals and the recent calls
// (POOL-13), and which member produced a Responses state (POOL-18).
// Nothing else in the pool keeps state across calls, so this
// method set is the whole seam a shared implementation has to fill (issue
// #18: the same operations on Redis, assign-if-unbound atomic across
// instances). Today it lives in memory and starts empty (SPEC POOL-16).
// Times are passed in (the pool's injected clock). Safe for concurrent use.
type State struct {
	assign *assigner
	cd     *cooldowns
	stats  *stats
	owners *stateOwners
}

// NewState returns an empty in-memory State.
func NewState() *State {
	return &State{assign: newAssigner(), cd: newCooldowns(), stats: newStats(), owners: newStateOwners()}
}

// Acquire picks the member a call starts on (SPEC POOL-4, POOL-6); see
// assigner.acquire for the rules. Every Acquire is paired with one Release
// that passes inFlight back.
func (s *State) Acquire(p *config.PoolConfig, key BindKey, eligible []string, hot func(string) bool, now time.Time) (member string, inFlight bool) {
	return s.assign.acquire(p, key, eligible, hot, now)
}

// Release ends a call begun with Acquire; success ("" when no member
// served) becomes the key's binding (SPEC POOL-5, POOL-8).
func (s *State) Release(p *config.PoolConfig, key BindKey, inFlight bool, success string, now time.Time) {
	s.assign.release(p, key, inFlight, success, now)
}

// Bind records a binding at once (a stream's commit point), so joiners of
// the same first pick see it before the stream ends.
func (s *State) Bind(p *config.PoolConfig, key BindKey, member string, now time.Time) {
	s.assign.bind(p, key, member, now)
}

// Bindings lists the live bindings at now, sorted by pool, session, model.
func (s *State) Bindings(cfg *config.Config, now time.Time) []Binding {
	return s.assign.snapshot(cfg, now)
}

// Fail records a failure of class for cooldown key (a member, or
// ModelKey(member, target) for model_not_found) and returns the cooldown
// deadline, zero when the class has none (SPEC POOL-10; rules at
// cooldowns.fail). base is the pool's length for the class, explicit a
// server-given wait.
func (s *State) Fail(key, class string, base, explicit time.Duration, now time.Time) time.Time {
	return s.cd.fail(key, class, base, explicit, now)
}

// Succeed resets the cooldown of key and its growth (SPEC POOL-10).
func (s *State) Succeed(key string) { s.cd.succeed(key) }

// Cooldown reports the deadline and class of key's cooldown and whether it
// is cooling at now.
func (s *State) Cooldown(key string, now time.Time) (until time.Time, class string, cooling bool) {
	return s.cd.until(key, now)
}

// Cooling reports whether member (or its target model, for model_not_found)
// is cooling at now, and the later deadline.
func (s *State) Cooling(member, target string, now time.Time) (time.Time, bool) {
	u1, _, c1 := s.cd.until(member, now)
	u2, _, c2 := s.cd.until(ModelKey(member, target), now)
	if u2.After(u1) {
		u1 = u2
	}
	return u1, c1 || c2
}

// Count counts one success or failure of member in pool (SPEC POOL-13).
func (s *State) Count(pool, member string, success bool) { s.stats.outcome(pool, member, success) }

// AddUsage adds one answer's token accounting to the session's and the
// member's prompt-cache totals (POOL-13b).
func (s *State) AddUsage(pool, session, member string, u wire.Usage, now time.Time) {
	s.stats.usage(pool, session, member, u, now)
}

// Record keeps a finished call among the recent calls (the last 200).
func (s *State) Record(r CallRecord) { s.stats.add(r) }

// Recent returns the recent calls, oldest first.
func (s *State) Recent() []CallRecord { return s.stats.list() }

// Counts returns member's successes, failures and cache totals in pool.
func (s *State) Counts(pool, member string) (successes, failures int64, cache CacheStats) {
	return s.stats.counts(pool, member)
}

// SessionCache returns the cache totals of session (a short hash) in pool,
// and whether there are any.
func (s *State) SessionCache(pool, session string) (CacheStats, bool) {
	return s.stats.sessionCache(pool, session)
}

// RecordOwner notes that member produced the state keys (wire.RespKey and
// the encrypted reasoning keys of an answer, SPEC POOL-18).
func (s *State) RecordOwner(member string, keys []string) { s.owners.record(member, keys) }

// OwnerOf returns the member that produced state key, or "".
func (s *State) OwnerOf(key string) string { return s.owners.of(key) }

// Retain drops what refers to pools, members or channels cfg no longer has
// (SPEC POOL-16): bindings and cooldowns. Counters and recent calls stay.
func (s *State) Retain(cfg *config.Config) {
	s.assign.retain(cfg)
	s.cd.retain(cfg)
}
