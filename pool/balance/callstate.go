package balance

import (
	"context"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// CallStart is what a call asks of State before its first attempt
// (State.Begin): the cooldowns of its members and the member it starts on.
type CallStart struct {
	Pool *config.PoolConfig
	Key  BindKey
	// Eligible are the members that can serve the call, in configured
	// order; Targets[i] is Eligible[i]'s model id for the call, whose
	// cooldown key ModelKey(member, target) a model_not_found failure sets.
	Eligible, Targets []string
	// Owner is a state key (responses.RespKey of previous_response_id) whose
	// producing member the call needs; "" asks nothing.
	Owner string
	Now   time.Time
}

// CooldownKeys are the keys Begin reads cooldowns for: each eligible
// member and ModelKey(member, target), in that order.
func (b CallStart) CooldownKeys() []string {
	keys := make([]string, 0, 2*len(b.Eligible))
	for i, m := range b.Eligible {
		keys = append(keys, m, ModelKey(m, b.Targets[i]))
	}
	return keys
}

// CallStarted is Begin's answer.
type CallStarted struct {
	// Cooldowns are the running cooldowns at Now among CooldownKeys, as
	// State.Cooldowns answers them.
	Cooldowns map[string]Cooldown
	// Member and InFlight are State.Acquire's answer, hot meaning "not
	// cooling" in Cooldowns (member or member/target).
	Member   string
	InFlight bool
	// Owner is State.OwnerOf(CallStart.Owner), "" when unknown or not asked.
	Owner string
}

// hot is Acquire's hot for b given cds: the member and its target model
// are both out of cooldown.
func (b CallStart) hot(cds map[string]Cooldown) func(string) bool {
	return func(m string) bool {
		for i, e := range b.Eligible {
			if e == m {
				_, cooling := Cooling(cds, m, b.Targets[i])
				return !cooling
			}
		}
		_, cooling := cds[m]
		return !cooling
	}
}

// CallEnd is everything a call writes once it is over (State.Finish).
type CallEnd struct {
	Pool *config.PoolConfig
	Key  BindKey
	// InFlight is CallStarted.InFlight, passed back to Release.
	InFlight bool
	// Served is the member that served the call, "" when none did: the
	// key's binding (Release's success), and the
	// member Succeeded, Usage and Owned are about.
	Served string
	// Succeeded tells that Served answered without a failure: its cooldown
	// and growth reset (Succeed) and one success is counted (Count).
	Succeeded bool
	// Session is the short session hash (SessionHash) Usage is added
	// under, "" none; Usage is added when Served is set (AddUsage).
	Session string
	Usage   neutral.Accounting
	// Owned are the state keys Served produced (RecordOwner).
	Owned []string
	// Record is the call's entry among the recent calls (Record); nil adds
	// none.
	Record *CallRecord
	Now    time.Time
}

// Begin implements State: Cooldowns, then Acquire with hot read from them,
// then OwnerOf.
func (s *Memory) Begin(ctx context.Context, b CallStart) CallStarted {
	cds := s.Cooldowns(ctx, b.CooldownKeys(), b.Now)
	out := CallStarted{Cooldowns: cds}
	out.Member, out.InFlight = s.Acquire(ctx, b.Pool, b.Key, b.Eligible, b.hot(cds), b.Now)
	if b.Owner != "" {
		out.Owner = s.OwnerOf(ctx, b.Owner)
	}
	return out
}

// Finish implements State: Succeed and Count, AddUsage, RecordOwner,
// Record, then Release, as CallEnd says.
func (s *Memory) Finish(ctx context.Context, e CallEnd) {
	if e.Served != "" {
		if e.Succeeded {
			s.Succeed(ctx, e.Served)
			s.Count(ctx, e.Pool.ID, e.Served, true)
		}
		s.AddUsage(ctx, e.Pool.ID, e.Session, e.Served, e.Usage, e.Now)
		if len(e.Owned) > 0 {
			s.RecordOwner(ctx, e.Served, e.Owned)
		}
	}
	if e.Record != nil {
		s.Record(ctx, *e.Record)
	}
	s.Release(ctx, e.Pool, e.Key, e.InFlight, e.Served, e.Now)
}
