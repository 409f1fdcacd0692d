// Package balance is the pool's selection core: which member a call starts on
// (sticky bindings, least bound, round robin, failover), the
// order members are tried in (hot first, then the cooling ones by earliest
// recovery), the cooldown rules, what class a failure is and which session a
// request belongs to. All it remembers sits behind one interface, State, with
// an in-memory implementation here (Memory) and a shared one on Redis
// (pool/redisstate). It opens no connection and writes nothing to a client.
package balance

import (
	"context"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// State is everything the pool remembers between calls: sticky bindings and the
// first picks in flight, member cooldowns, success/failure
// counters, prompt-cache totals and the recent calls, and which member produced
// a Responses state.
//
// The methods are what the pool needs done atomically, not storage
// commands: Acquire is assign-if-unbound returning the winner (a live
// binding, a first pick in flight, or a new least-bound choice), Fail is
// cool-down-with-growth where the longest deadline wins. Every call takes a
// context; an implementation bounds its own wait (a shared one by a short
// deadline) and never fails: when its store is unreachable it answers from
// local state (SPEC POOL-23), so a model call never fails because of State.
// Times are passed in (the pool's injected clock). Implementations are safe
// for concurrent use.
type State interface {
	// Begin is what a call reads and decides before its first attempt, as
	// one step (a shared store: one round trip): the
	// cooldowns of its members (Cooldowns), the member it starts on
	// (Acquire, hot being "not cooling" in those cooldowns) and, when
	// asked, the owner of a state key (OwnerOf). A call that Begins ends
	// with one Finish.
	Begin(ctx context.Context, b CallStart) CallStarted
	// Finish is everything a call writes once it is over, as one step (a
	// shared store: one round trip): Succeed and Count for the member that
	// answered, AddUsage, RecordOwner, Record, and the Release that pairs
	// with Begin's Acquire.
	Finish(ctx context.Context, e CallEnd)
	// Acquire picks the member a call starts on (rules
	// at assigner.acquire). eligible are the members that can serve the
	// call in configured order, hot tells whether one is out of cooldown.
	// Every Acquire is paired with one Release that passes inFlight back.
	Acquire(ctx context.Context, p *config.PoolConfig, key BindKey, eligible []string, hot func(string) bool, now time.Time) (member string, inFlight bool)
	// Release ends a call begun with Acquire; success ("" when no member
	// served) becomes the key's binding.
	Release(ctx context.Context, p *config.PoolConfig, key BindKey, inFlight bool, success string, now time.Time)
	// Bind records a binding at once (a stream's commit point), so joiners
	// of the same first pick see it before the stream ends.
	Bind(ctx context.Context, p *config.PoolConfig, key BindKey, member string, now time.Time)
	// Bindings lists the live bindings at now, sorted by pool, session, model.
	Bindings(ctx context.Context, cfg *config.Config, now time.Time) []Binding
	// Fail records a failure of class for cooldown key (a member, or
	// ModelKey(member, target) for model_not_found) and returns the
	// cooldown deadline, zero when the class has none (rules
	// at cooldowns.fail). base is the pool's length for the class,
	// explicit a server-given wait.
	Fail(ctx context.Context, key, class string, base, explicit time.Duration, now time.Time) time.Time
	// Succeed resets the cooldown of key and its growth.
	Succeed(ctx context.Context, key string)
	// Cooldowns returns the running cooldowns among keys at now (keys not
	// cooling are absent).
	Cooldowns(ctx context.Context, keys []string, now time.Time) map[string]Cooldown
	// Count counts one success or failure of member in pool.
	Count(ctx context.Context, pool, member string, success bool)
	// AddUsage adds one answer's token accounting to the session's (a short
	// hash) and the member's prompt-cache totals.
	AddUsage(ctx context.Context, pool, session, member string, u neutral.Accounting, now time.Time)
	// Record keeps a finished call among the recent calls (the last 200).
	Record(ctx context.Context, r CallRecord)
	// Recent returns the recent calls, oldest first.
	Recent(ctx context.Context) []CallRecord
	// Counts returns member's successes, failures and cache totals in pool.
	Counts(ctx context.Context, pool, member string) (successes, failures int64, cache CacheStats)
	// SessionCache returns the cache totals of session (a short hash) in
	// pool, and whether there are any.
	SessionCache(ctx context.Context, pool, session string) (CacheStats, bool)
	// RecordOwner notes that member produced the state keys (responses.RespKey
	// and the encrypted reasoning keys of an answer).
	RecordOwner(ctx context.Context, member string, keys []string)
	// OwnerOf returns the member that produced state key, or "".
	OwnerOf(ctx context.Context, key string) string
	// OwnersOf is OwnerOf for many keys at once (a shared store: one round
	// trip): the members that produced keys, unknown keys absent.
	OwnersOf(ctx context.Context, keys []string) map[string]string
	// Retain drops what refers to pools, members or channels cfg no longer
	// has: bindings and cooldowns. Counters and recent calls
	// stay.
	Retain(ctx context.Context, cfg *config.Config)
	// Health says where the state lives and whether it is degraded.
	Health() Health
}

// Cooldown is one running cooldown: its deadline and the failure class
// that set it.
type Cooldown struct {
	Until time.Time
	Class string
	// Since is when the running cooldown began (a longer failure extends
	// Until, not Since); zero when the shared store does not know it.
	Since time.Time
}

// Cooling reports whether member (or its target model, for
// model_not_found) is cooling in cds, a Cooldowns answer that asked for
// member and ModelKey(member, target), and the later deadline.
func Cooling(cds map[string]Cooldown, member, target string) (time.Time, bool) {
	c1, ok1 := cds[member]
	c2, ok2 := cds[ModelKey(member, target)]
	if c2.Until.After(c1.Until) {
		c1 = c2
	}
	return c1.Until, ok1 || ok2
}

// Health is where a State keeps its data (the status document's "state").
type Health struct {
	// Kind is "memory" or "redis".
	Kind string `json:"kind"`
	// Store is the shared store's address with the password hidden ("" for
	// memory).
	Store string `json:"store,omitempty"`
	// Instance names this process among those sharing the store.
	Instance string `json:"instance,omitempty"`
	// Degraded is true while the shared store is unreachable and the
	// instance runs on its local state; Since is when that began.
	Degraded bool       `json:"degraded"`
	Since    *time.Time `json:"degraded_since,omitempty"`
	// Reason is the last store error while degraded (no credentials).
	Reason string `json:"reason,omitempty"`
}

// Memory is the in-memory State (SPEC POOL-16): it lives in one process
// and starts empty. The zero value is not usable; call NewMemory.
type Memory struct {
	assign *assigner
	cd     *cooldowns
	stats  *stats
	owners *stateOwners
}

// NewMemory returns an empty in-memory State.
func NewMemory() *Memory {
	return &Memory{assign: newAssigner(), cd: newCooldowns(), stats: newStats(), owners: newStateOwners()}
}

var _ State = (*Memory)(nil)

// Acquire implements State.
func (s *Memory) Acquire(_ context.Context, p *config.PoolConfig, key BindKey, eligible []string, hot func(string) bool, now time.Time) (member string, inFlight bool) {
	return s.assign.acquire(p, key, eligible, hot, now)
}

// Release implements State.
func (s *Memory) Release(_ context.Context, p *config.PoolConfig, key BindKey, inFlight bool, success string, now time.Time) {
	s.assign.release(p, key, inFlight, success, now)
}

// Bind implements State.
func (s *Memory) Bind(_ context.Context, p *config.PoolConfig, key BindKey, member string, now time.Time) {
	s.assign.bind(p, key, member, now)
}

// Bindings implements State.
func (s *Memory) Bindings(_ context.Context, cfg *config.Config, now time.Time) []Binding {
	return s.assign.snapshot(cfg, now)
}

// Fail implements State.
func (s *Memory) Fail(_ context.Context, key, class string, base, explicit time.Duration, now time.Time) time.Time {
	return s.cd.fail(key, class, base, explicit, now)
}

// Succeed implements State.
func (s *Memory) Succeed(_ context.Context, key string) { s.cd.succeed(key) }

// Cooldowns implements State.
func (s *Memory) Cooldowns(_ context.Context, keys []string, now time.Time) map[string]Cooldown {
	out := make(map[string]Cooldown, len(keys))
	for _, k := range keys {
		if cd, cooling := s.cd.get(k, now); cooling {
			out[k] = cd
		}
	}
	return out
}

// Count implements State.
func (s *Memory) Count(_ context.Context, pool, member string, success bool) {
	s.stats.outcome(pool, member, success)
}

// AddUsage implements State.
func (s *Memory) AddUsage(_ context.Context, pool, session, member string, u neutral.Accounting, now time.Time) {
	s.stats.usage(pool, session, member, u, now)
}

// Record implements State.
func (s *Memory) Record(_ context.Context, r CallRecord) { s.stats.add(r) }

// Recent implements State.
func (s *Memory) Recent(context.Context) []CallRecord { return s.stats.list() }

// Counts implements State.
func (s *Memory) Counts(_ context.Context, pool, member string) (successes, failures int64, cache CacheStats) {
	return s.stats.counts(pool, member)
}

// SessionCache implements State.
func (s *Memory) SessionCache(_ context.Context, pool, session string) (CacheStats, bool) {
	return s.stats.sessionCache(pool, session)
}

// RecordOwner implements State.
func (s *Memory) RecordOwner(_ context.Context, member string, keys []string) {
	s.owners.record(member, keys)
}

// OwnerOf implements State.
func (s *Memory) OwnerOf(_ context.Context, key string) string { return s.owners.of(key) }

// OwnersOf implements State.
func (s *Memory) OwnersOf(_ context.Context, keys []string) map[string]string {
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		if m := s.owners.of(k); m != "" {
			out[k] = m
		}
	}
	return out
}

// Retain implements State.
func (s *Memory) Retain(_ context.Context, cfg *config.Config) {
	s.assign.retain(cfg)
	s.cd.retain(cfg)
}

// Health implements State: memory is never degraded.
func (s *Memory) Health() Health { return Health{Kind: "memory"} }

// LiveCooldowns lists the running cooldowns at now with their growth
// length (a shared State merges them back after an outage).
func (s *Memory) LiveCooldowns(now time.Time) []CooldownEntry { return s.cd.live(now) }

// CooldownEntry is one running cooldown with its key and the length of
// its most recent period (the growth base).
type CooldownEntry struct {
	Key   string
	Until time.Time
	Class string
	Last  time.Duration
}
