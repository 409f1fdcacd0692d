package pool

import (
	"sort"
	"sync"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/pool/wire"
)

// recentCalls is how many calls the status keeps (SPEC POOL-13).
const recentCalls = 200

// MaxStatusSessions bounds the sessions listed in the status document, so a
// long-running pool with many sessions keeps /pool/status small.
const MaxStatusSessions = 1000

// CallRecord is one finished call in the status document (SPEC POOL-13):
// no prompt, no key, no raw session id.
type CallRecord struct {
	Time    time.Time `json:"time"`
	Pool    string    `json:"pool"`
	Session string    `json:"session,omitempty"` // short hash (POOL-13b)
	Model   string    `json:"model"`             // unified model id
	Member  string    `json:"member,omitempty"`  // member that answered, "" if none
	// Failovers counts members that failed before the one that answered.
	Failovers int `json:"failovers"`
	// TTFBMs is the time from request to the first byte sent to the client (ms).
	TTFBMs int64 `json:"ttfb_ms"`
	// Class is "" on success, else the failure class (or "canceled").
	Class  string `json:"class,omitempty"`
	Status int    `json:"status,omitempty"`
}

// CacheStats are prompt-cache token totals from usage fields (POOL-NOTES):
// HitRatio = cache_read / (input + cache_read + cache_creation).
type CacheStats struct {
	InputTokens         int64   `json:"input_tokens"`
	CacheReadTokens     int64   `json:"cache_read_tokens"`
	CacheCreationTokens int64   `json:"cache_creation_tokens"`
	HitRatio            float64 `json:"hit_ratio"`

	seen time.Time // last update, for pruning
}

func (s *CacheStats) add(u wire.Usage) {
	s.InputTokens += u.Input
	s.CacheReadTokens += u.CacheRead
	s.CacheCreationTokens += u.CacheCreation
	if total := s.InputTokens + s.CacheReadTokens + s.CacheCreationTokens; total > 0 {
		s.HitRatio = float64(s.CacheReadTokens) / float64(total)
	}
}

// StatusJSON is the /pool/status document (SPEC POOL-13).
type StatusJSON struct {
	Pools []PoolStatus `json:"pools"`
	// Sessions are the live sessions per pool, sorted by pool and session;
	// at most MaxStatusSessions, the most recently used (SessionsTotal
	// counts them all).
	Sessions      []SessionStatus `json:"sessions"`
	SessionsTotal int             `json:"sessions_total"`
	// Recent holds the last 200 calls, oldest first.
	Recent []CallRecord `json:"recent"`
}

// PoolStatus is one pool with its members and merged models.
type PoolStatus struct {
	ID          string             `json:"id"`
	DisplayName string             `json:"display_name"`
	API         string             `json:"api"`
	Strategy    string             `json:"strategy"`
	Members     []MemberStatus     `json:"members"`
	Models      []config.ModelInfo `json:"models"`
}

// MemberStatus is one member's health and load within a pool.
type MemberStatus struct {
	ID string `json:"id"`
	// State is "ready" or "cooling".
	State         string     `json:"state"`
	CooldownUntil *time.Time `json:"cooldown_until,omitempty"`
	CooldownClass string     `json:"cooldown_class,omitempty"`
	// Successes and Failures count this pool's calls to the member (a
	// channel in two pools has two counts); State and the cooldown are the
	// channel's, shared by every pool that uses it (POOL-10).
	Successes     int64      `json:"successes"`
	Failures      int64      `json:"failures"`
	BoundSessions int        `json:"bound_sessions"`
	Cache         CacheStats `json:"cache"`
}

// SessionStatus is one session's bindings in one pool: unified model →
// member (SPEC POOL-13), and its prompt-cache hit ratio (POOL-13b).
type SessionStatus struct {
	Session  string            `json:"session"` // short hash
	Pool     string            `json:"pool"`
	Bindings map[string]string `json:"bindings"`
	LastUsed time.Time         `json:"last_used"`
	Cache    CacheStats        `json:"cache"`
}

// stats holds recent calls and cache totals.
type stats struct {
	mu       sync.Mutex
	recent   []CallRecord // ring, next write at head
	head     int
	full     bool
	sessions map[[2]string]*CacheStats // (pool, session hash)
	members  map[[2]string]*CacheStats // (pool, member)
	// outcomes counts successes [0] and failures [1] per (pool, member):
	// the status shows them per pool, while cooldowns stay per channel.
	outcomes map[[2]string]*[2]int64
}

func newStats() *stats {
	return &stats{recent: make([]CallRecord, recentCalls), sessions: map[[2]string]*CacheStats{}, members: map[[2]string]*CacheStats{},
		outcomes: map[[2]string]*[2]int64{}}
}

// outcome counts one success or failure of member in pool (SPEC POOL-13).
func (s *stats) outcome(pool, member string, success bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{pool, member}
	c := s.outcomes[k]
	if c == nil {
		c = &[2]int64{}
		s.outcomes[k] = c
	}
	if success {
		c[0]++
	} else {
		c[1]++
	}
}

func (s *stats) add(r CallRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recent[s.head] = r
	s.head = (s.head + 1) % len(s.recent)
	if s.head == 0 {
		s.full = true
	}
}

// maxSessionStats bounds the per-session cache totals kept in memory.
const maxSessionStats = 10000

func (s *stats) usage(pool, session, member string, u wire.Usage, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if session != "" && len(s.sessions) >= maxSessionStats && s.sessions[[2]string{pool, session}] == nil {
		// Drop sessions idle for a day, else the idlest half.
		var seen []time.Time
		for k, cs := range s.sessions {
			if now.Sub(cs.seen) > 24*time.Hour {
				delete(s.sessions, k)
			} else {
				seen = append(seen, cs.seen)
			}
		}
		if len(s.sessions) >= maxSessionStats {
			sort.Slice(seen, func(i, j int) bool { return seen[i].Before(seen[j]) })
			cut := seen[len(seen)/2]
			for k, cs := range s.sessions {
				if !cs.seen.After(cut) {
					delete(s.sessions, k)
				}
			}
		}
	}
	get := func(m map[[2]string]*CacheStats, k [2]string) *CacheStats {
		if m[k] == nil {
			m[k] = &CacheStats{}
		}
		return m[k]
	}
	if session != "" {
		cs := get(s.sessions, [2]string{pool, session})
		cs.add(u)
		cs.seen = now
	}
	get(s.members, [2]string{pool, member}).add(u)
}

func (s *stats) list() []CallRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.full {
		return append([]CallRecord{}, s.recent[:s.head]...)
	}
	return append(append([]CallRecord{}, s.recent[s.head:]...), s.recent[:s.head]...)
}

// cooling reports whether member (or its target model, for model_not_found)
// is cooling at now, and the later deadline.
func (p *Pool) cooling(member, target string, now time.Time) (time.Time, bool) {
	u1, _, c1 := p.cd.until(member, now)
	u2, _, c2 := p.cd.until(member+"\x00"+target, now)
	if u2.After(u1) {
		u1 = u2
	}
	return u1, c1 || c2
}

// Status returns the current status document (SPEC POOL-13): pools and
// members (state, cooldown deadline and class, successes/failures, bound
// sessions, cache hits), sessions (binding per unified model, cache hits)
// and the last 200 calls. It contains no prompt, key or raw session id.
func (p *Pool) Status() StatusJSON {
	cfg, _ := p.config()
	now := p.opts.Now()
	binds := p.assign.snapshot(cfg, now)
	st := StatusJSON{Pools: []PoolStatus{}, Sessions: []SessionStatus{}, Recent: p.stats.list()}
	bound := map[[2]string]map[string]bool{}
	sessions := map[[2]string]*SessionStatus{}
	var order [][2]string
	for _, b := range binds {
		h := sessionHash(b.key.session)
		mk := [2]string{b.key.pool, b.member}
		if bound[mk] == nil {
			bound[mk] = map[string]bool{}
		}
		bound[mk][h] = true
		sk := [2]string{b.key.pool, h}
		ss := sessions[sk]
		if ss == nil {
			ss = &SessionStatus{Session: h, Pool: b.key.pool, Bindings: map[string]string{}}
			sessions[sk] = ss
			order = append(order, sk)
		}
		ss.Bindings[b.key.model] = b.member
		if b.lastUsed.After(ss.LastUsed) {
			ss.LastUsed = b.lastUsed
		}
	}
	p.stats.mu.Lock()
	st.SessionsTotal = len(order)
	if len(order) > MaxStatusSessions {
		// Keep the most recently used, in their (pool, session) order.
		byRecent := append([][2]string(nil), order...)
		sort.SliceStable(byRecent, func(i, j int) bool { return sessions[byRecent[i]].LastUsed.After(sessions[byRecent[j]].LastUsed) })
		keep := map[[2]string]bool{}
		for _, sk := range byRecent[:MaxStatusSessions] {
			keep[sk] = true
		}
		kept := order[:0]
		for _, sk := range order {
			if keep[sk] {
				kept = append(kept, sk)
			}
		}
		order = kept
	}
	for _, sk := range order {
		ss := sessions[sk]
		if cs := p.stats.sessions[sk]; cs != nil {
			ss.Cache = *cs
		}
		st.Sessions = append(st.Sessions, *ss)
	}
	for _, pc := range cfg.Pools {
		ps := PoolStatus{ID: pc.ID, DisplayName: pc.DisplayName, API: pc.API, Strategy: pc.Strategy, Models: config.ModelList(cfg, pc)}
		for _, m := range pc.Members {
			ms := MemberStatus{ID: m, State: "ready", BoundSessions: len(bound[[2]string{pc.ID, m}])}
			if until, class, cooling := p.cd.until(m, now); cooling {
				ms.State, ms.CooldownUntil, ms.CooldownClass = "cooling", &until, class
			}
			if c := p.stats.outcomes[[2]string{pc.ID, m}]; c != nil {
				ms.Successes, ms.Failures = c[0], c[1]
			}
			if cs := p.stats.members[[2]string{pc.ID, m}]; cs != nil {
				ms.Cache = *cs
			}
			ps.Members = append(ps.Members, ms)
		}
		st.Pools = append(st.Pools, ps)
	}
	p.stats.mu.Unlock()
	return st
}
