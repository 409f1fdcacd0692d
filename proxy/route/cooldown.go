package route

import (
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// MaxHostCooldowns caps the number of host-scoped cooldown entries kept by
// Cooldowns. When full, expired entries are pruned first, then the entry
// that would expire soonest is dropped, so memory stays bounded however
// many destination hosts fail.
const MaxHostCooldowns = 4096

// maxReasonLen bounds the stored failure reason (bytes).
const maxReasonLen = 200

// Cooldowns records path failures and decides which candidates are cooling
// (SPEC CD-1, CD-2, CD-3). Safe for concurrent use; one mutex inside.
//
// Two tiers: a gateway cooldown (TierGateway) cools the candidate for every
// host; a host-scoped cooldown (TierHost) cools it for one destination,
// keyed by "host:port" (Dest; SPEC CD-1b: a dead 127.0.0.1:9 does not cool
// the paths to 127.0.0.1:443). The methods' host parameter is that key.
// Direct is never cooled for all hosts: a TierGateway failure of direct is
// recorded as host-scoped, because one unreachable origin says nothing
// about the others.
type Cooldowns struct {
	d   time.Duration
	now func() time.Time

	mu    sync.Mutex
	cands map[string]*candState
	hosts map[hostKey]*hostCooldown
}

type candState struct {
	until      time.Time // gateway-wide cooldown end
	lastPhase  candidate.Phase
	lastTier   candidate.Tier
	lastReason string
	lastFail   time.Time
	successes  uint64
	failures   uint64
}

type hostKey struct{ key, host string }

type hostCooldown struct {
	until  time.Time
	phase  candidate.Phase
	reason string
}

// Dest is the key of host-scoped state for a destination: "host:port"
// (brackets around an IPv6 host), host normalized by the caller.
func Dest(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// NewCooldowns returns an empty Cooldowns. d is the cooldown length
// (--cooldown-ms); d <= 0 disables cooling: failures are still
// counted and shown in Snapshot, but Cooling is always false. now is the
// clock (time.Now when nil).
func NewCooldowns(d time.Duration, now func() time.Time) *Cooldowns {
	if now == nil {
		now = time.Now
	}
	return &Cooldowns{d: d, now: now, cands: make(map[string]*candState), hosts: make(map[hostKey]*hostCooldown)}
}

// Fail records the failure e of candidate e.Candidate while serving host
// (normalized). Every failure is counted and becomes the candidate's last
// failure (phase, tier, reason = e.Err's text, truncated to 200 bytes; the
// caller keeps it free of secrets: it reaches logs and the status
// document). TierGateway cools the
// candidate for all hosts, TierHost for (candidate, host) only, TierNone
// cools nothing. A cooldown ends d after the latest failure; a
// later failure extends a running cooldown and never shortens it.
func (c *Cooldowns) Fail(e *candidate.PathError, host string) {
	if e == nil {
		return
	}
	key := e.Candidate.Key()
	reason := failureReason(e)
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.state(key)
	s.failures++
	s.lastPhase, s.lastTier, s.lastReason, s.lastFail = e.Phase, e.Tier, reason, now
	if c.d <= 0 {
		return
	}
	until := now.Add(c.d)
	tier := e.Tier
	if tier == candidate.TierGateway && e.Candidate.Direct {
		tier = candidate.TierHost
	}
	switch tier {
	case candidate.TierGateway:
		if until.After(s.until) {
			s.until = until
		}
	case candidate.TierHost:
		k := hostKey{key, host}
		h := c.hosts[k]
		if h == nil {
			c.makeRoom(now)
			h = &hostCooldown{}
			c.hosts[k] = h
		}
		if until.After(h.until) {
			h.until = until
		}
		h.phase, h.reason = e.Phase, reason
	}
}

// makeRoom keeps len(c.hosts) < MaxHostCooldowns before an insert.
func (c *Cooldowns) makeRoom(now time.Time) {
	if len(c.hosts) < MaxHostCooldowns {
		return
	}
	for k, h := range c.hosts {
		if !h.until.After(now) {
			delete(c.hosts, k)
		}
	}
	for len(c.hosts) >= MaxHostCooldowns {
		var oldest hostKey
		var first time.Time
		for k, h := range c.hosts {
			if first.IsZero() || h.until.Before(first) {
				oldest, first = k, h.until
			}
		}
		delete(c.hosts, oldest)
	}
}

func failureReason(e *candidate.PathError) string {
	r := ""
	if e.Err != nil {
		r = e.Err.Error()
	}
	if len(r) > maxReasonLen {
		r = r[:maxReasonLen]
	}
	return r
}

func (c *Cooldowns) state(key string) *candState {
	s := c.cands[key]
	if s == nil {
		s = &candState{}
		c.cands[key] = s
	}
	return s
}

// Cooling reports whether candidate key is cooling for host: gateway-wide
// or host-scoped. An expired host-scoped entry is pruned.
func (c *Cooldowns) Cooling(key, host string) bool {
	return !c.Until(key, host).IsZero()
}

// Until returns when candidate key stops cooling for host (the later of its
// gateway and host-scoped cooldowns), or the zero time when it is not
// cooling now.
func (c *Cooldowns) Until(key, host string) time.Time {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	var until time.Time
	if s := c.cands[key]; s != nil && s.until.After(now) {
		until = s.until
	}
	k := hostKey{key, host}
	if h := c.hosts[k]; h != nil {
		if !h.until.After(now) {
			delete(c.hosts, k)
		} else if h.until.After(until) {
			until = h.until
		}
	}
	return until
}

// ClearGateway ends the gateway-wide cooldown of key; host-scoped cooldowns
// stay. The health check calls it when it proves the candidate alive.
func (c *Cooldowns) ClearGateway(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.cands[key]; s != nil {
		s.until = time.Time{}
	}
}

// Success counts a success through candidate key. It does not
// end cooldowns: only time and the health check (ClearGateway) do.
func (c *Cooldowns) Success(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state(key).successes++
}

// CandidateState is one candidate's cooldown record for the status page. Times
// are absolute; zero times are omitted in JSON.
type CandidateState struct {
	Key string `json:"key"`
	// Until is the end of the gateway-wide cooldown, zero when not cooling.
	Until time.Time `json:"until,omitzero"`
	// LastFailure is when the last failure happened; LastPhase, LastTier
	// and LastReason describe it.
	LastFailure time.Time       `json:"last_failure,omitzero"`
	LastPhase   candidate.Phase `json:"last_phase,omitempty"`
	LastTier    string          `json:"last_tier,omitempty"`
	LastReason  string          `json:"last_reason,omitempty"`
	Successes   uint64          `json:"successes"`
	Failures    uint64          `json:"failures"`
	// Hosts are the running host-scoped cooldowns, sorted by host.
	Hosts []HostCooldown `json:"hosts,omitempty"`
}

// HostCooldown is one running host-scoped cooldown.
type HostCooldown struct {
	Host   string          `json:"host"`
	Until  time.Time       `json:"until"`
	Phase  candidate.Phase `json:"phase"`
	Reason string          `json:"reason,omitempty"`
}

// Snapshot returns the state of every candidate that has been seen (failed,
// succeeded or cooled), sorted by key, with expired cooldowns left out and
// pruned. The result is a copy.
func (c *Cooldowns) Snapshot() []CandidateState {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	byKey := make(map[string]*CandidateState, len(c.cands))
	out := make([]CandidateState, 0, len(c.cands))
	for k, s := range c.cands {
		cs := CandidateState{Key: k, Successes: s.successes, Failures: s.failures,
			LastFailure: s.lastFail, LastPhase: s.lastPhase, LastReason: s.lastReason}
		if !s.lastFail.IsZero() {
			cs.LastTier = s.lastTier.String()
		}
		if s.until.After(now) {
			cs.Until = s.until
		}
		out = append(out, cs)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	for i := range out {
		byKey[out[i].Key] = &out[i]
	}
	for k, h := range c.hosts {
		if !h.until.After(now) {
			delete(c.hosts, k)
			continue
		}
		if cs := byKey[k.key]; cs != nil {
			cs.Hosts = append(cs.Hosts, HostCooldown{Host: k.host, Until: h.until, Phase: h.phase, Reason: h.reason})
		}
	}
	for i := range out {
		sort.Slice(out[i].Hosts, func(a, b int) bool { return out[i].Hosts[a].Host < out[i].Hosts[b].Host })
	}
	return out
}
