package pool

import (
	"sort"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// MaxStatusSessions bounds the sessions listed in the status document, so a
// long-running pool with many sessions keeps /pool/status small.
const MaxStatusSessions = 1000

// StatusJSON is the /pool/status document (SPEC POOL-13).
type StatusJSON struct {
	Pools []PoolStatus `json:"pools"`
	// Sessions are the live sessions per pool, sorted by pool and session;
	// at most MaxStatusSessions, the most recently used (SessionsTotal
	// counts them all).
	Sessions      []SessionStatus `json:"sessions"`
	SessionsTotal int             `json:"sessions_total"`
	// Recent holds the last 200 calls, oldest first.
	Recent []balance.CallRecord `json:"recent"`
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
	Successes     int64              `json:"successes"`
	Failures      int64              `json:"failures"`
	BoundSessions int                `json:"bound_sessions"`
	Cache         balance.CacheStats `json:"cache"`
}

// SessionStatus is one session's bindings in one pool: unified model →
// member (SPEC POOL-13), and its prompt-cache hit ratio (POOL-13b).
type SessionStatus struct {
	Session  string             `json:"session"` // short hash
	Pool     string             `json:"pool"`
	Bindings map[string]string  `json:"bindings"`
	LastUsed time.Time          `json:"last_used"`
	Cache    balance.CacheStats `json:"cache"`
}

// Status returns the current status document (SPEC POOL-13): pools and
// members (state, cooldown deadline and class, successes/failures, bound
// sessions, cache hits), sessions (binding per unified model, cache hits)
// and the last 200 calls. It contains no prompt, key or raw session id.
func (p *Pool) Status() StatusJSON {
	cfg, _ := p.config()
	now := p.opts.Now()
	binds := p.state.Bindings(cfg, now)
	st := StatusJSON{Pools: []PoolStatus{}, Sessions: []SessionStatus{}, Recent: p.state.Recent()}
	bound := map[[2]string]map[string]bool{}
	sessions := map[[2]string]*SessionStatus{}
	var order [][2]string
	for _, b := range binds {
		h := balance.SessionHash(b.Key.Session)
		mk := [2]string{b.Key.Pool, b.Member}
		if bound[mk] == nil {
			bound[mk] = map[string]bool{}
		}
		bound[mk][h] = true
		sk := [2]string{b.Key.Pool, h}
		ss := sessions[sk]
		if ss == nil {
			ss = &SessionStatus{Session: h, Pool: b.Key.Pool, Bindings: map[string]string{}}
			sessions[sk] = ss
			order = append(order, sk)
		}
		ss.Bindings[b.Key.Model] = b.Member
		if b.LastUsed.After(ss.LastUsed) {
			ss.LastUsed = b.LastUsed
		}
	}
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
		if cs, ok := p.state.SessionCache(sk[0], sk[1]); ok {
			ss.Cache = cs
		}
		st.Sessions = append(st.Sessions, *ss)
	}
	for _, pc := range cfg.Pools {
		ps := PoolStatus{ID: pc.ID, DisplayName: pc.DisplayName, API: pc.API, Strategy: pc.Strategy, Models: config.ModelList(cfg, pc)}
		for _, m := range pc.Members {
			ms := MemberStatus{ID: m, State: "ready", BoundSessions: len(bound[[2]string{pc.ID, m}])}
			if until, class, cooling := p.state.Cooldown(m, now); cooling {
				ms.State, ms.CooldownUntil, ms.CooldownClass = "cooling", &until, class
			}
			ms.Successes, ms.Failures, ms.Cache = p.state.Counts(pc.ID, m)
			ps.Members = append(ps.Members, ms)
		}
		st.Pools = append(st.Pools, ps)
	}
	return st
}
