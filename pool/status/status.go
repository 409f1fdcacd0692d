// Package status is the pool's status document and page:
// Build renders what balance.State holds for the configured pools as
// StatusJSON (served at /pool/status), and ServePage serves the embedded
// page at /pool/ that polls it. Neither holds a key, a prompt or a raw
// session id.
package status

import (
	"context"
	"fmt"
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
	// State says where the pool's state lives (memory, or a shared Redis)
	// and whether it is degraded to local state.
	State balance.Health `json:"state"`
	// Config is the configuration file's reload state: a
	// failed SIGHUP reload is reported here, not only in the log.
	Config ConfigState `json:"config"`
	// TokenRequired is true when /pool/{pool}/… (the test button
	// included) needs the pool token; the page shows how to
	// pass it only then.
	TokenRequired bool `json:"token_required"`
}

// ConfigState says which configuration serves and whether the last
// attempt to re-read its file failed (SPEC POOL-16: a broken file keeps
// the running configuration).
type ConfigState struct {
	// File is the configuration file ("" when the pool has none).
	File string `json:"file,omitempty"`
	// LoadedAt is when the serving configuration was loaded.
	LoadedAt time.Time `json:"loaded_at"`
	// ReloadErrors are the errors of the last failed re-read, one each
	// ("FILE:LINE:COLUMN: PATH: MSG", config.AllErrors); empty once a
	// later re-read succeeded.
	ReloadErrors []string `json:"reload_errors,omitempty"`
	// ReloadFailedAt is when that re-read failed (absent without one).
	ReloadFailedAt *time.Time `json:"reload_failed_at,omitempty"`
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
	// API is the API the member's channel speaks (its flavour: anthropic,
	// openai, openai-chat, gemini).
	API string `json:"api"`
	// State is "ready" or "cooling".
	State string `json:"state"`
	// CooldownSince is when the running cooldown began (absent when a
	// shared store written by an older instance does not know it),
	// CooldownUntil when it ends, CooldownClass the failure class that set
	// it. CooldownText renders them.
	CooldownSince *time.Time `json:"cooldown_since,omitempty"`
	CooldownUntil *time.Time `json:"cooldown_until,omitempty"`
	CooldownClass string     `json:"cooldown_class,omitempty"`
	// Successes and Failures count this pool's calls to the member (a
	// channel in two pools has two counts); State and the cooldown are the
	// channel's, shared by every pool that uses it.
	Successes     int64              `json:"successes"`
	Failures      int64              `json:"failures"`
	BoundSessions int                `json:"bound_sessions"`
	Cache         balance.CacheStats `json:"cache"`
}

// SessionStatus is one session's bindings in one pool: unified model →
// member, and its prompt-cache hit ratio (POOL-13b).
type SessionStatus struct {
	Session  string             `json:"session"` // short hash
	Pool     string             `json:"pool"`
	Bindings map[string]string  `json:"bindings"`
	LastUsed time.Time          `json:"last_used"`
	Cache    balance.CacheStats `json:"cache"`
}

// Build returns the status document of the pools in cfg
// from st at now: pools and members (state, cooldown deadline and class,
// successes/failures, bound sessions, cache hits), sessions (binding per
// unified model, cache hits) and the last 200 calls. It contains no prompt,
// key or raw session id.
func Build(ctx context.Context, cfg *config.Config, st balance.State, now time.Time) StatusJSON {
	doc := StatusJSON{Pools: []PoolStatus{}, Sessions: []SessionStatus{}, Recent: st.Recent(ctx), State: st.Health()}
	bound := map[[2]string]map[string]bool{}
	doc.Sessions, doc.SessionsTotal = sessions(ctx, st, st.Bindings(ctx, cfg, now), bound)
	var members []string
	for _, pc := range cfg.Pools {
		members = append(members, pc.Members...)
	}
	cds := st.Cooldowns(ctx, members, now)
	for _, pc := range cfg.Pools {
		ps := PoolStatus{ID: pc.ID, DisplayName: pc.DisplayName, API: pc.API, Strategy: pc.Strategy, Models: config.ModelList(cfg, pc)}
		for _, m := range pc.Members {
			ms := MemberStatus{ID: m, State: "ready", BoundSessions: len(bound[[2]string{pc.ID, m}])}
			if ch := cfg.Channel(m); ch != nil {
				ms.API = ch.API
			}
			if cd, cooling := cds[m]; cooling {
				ms.State, ms.CooldownUntil, ms.CooldownClass = "cooling", &cd.Until, cd.Class
				if !cd.Since.IsZero() {
					ms.CooldownSince = &cd.Since
				}
			}
			ms.Successes, ms.Failures, ms.Cache = st.Counts(ctx, pc.ID, m)
			ps.Members = append(ps.Members, ms)
		}
		doc.Pools = append(doc.Pools, ps)
	}
	return doc
}

// sessions groups the bindings by (pool, session hash) and fills bound with
// the session hashes bound to each (pool, member). It returns at most
// MaxStatusSessions sessions, the most recently used, and how many there are.
func sessions(ctx context.Context, st balance.State, binds []balance.Binding, bound map[[2]string]map[string]bool) ([]SessionStatus, int) {
	byKey := map[[2]string]*SessionStatus{}
	var order [][2]string
	for _, b := range binds {
		h := b.Session
		mk := [2]string{b.Key.Pool, b.Member}
		if bound[mk] == nil {
			bound[mk] = map[string]bool{}
		}
		bound[mk][h] = true
		sk := [2]string{b.Key.Pool, h}
		ss := byKey[sk]
		if ss == nil {
			ss = &SessionStatus{Session: h, Pool: b.Key.Pool, Bindings: map[string]string{}}
			byKey[sk] = ss
			order = append(order, sk)
		}
		ss.Bindings[b.Key.Model] = b.Member
		if b.LastUsed.After(ss.LastUsed) {
			ss.LastUsed = b.LastUsed
		}
	}
	total := len(order)
	if len(order) > MaxStatusSessions {
		// Keep the most recently used, in their (pool, session) order.
		byRecent := append([][2]string(nil), order...)
		sort.SliceStable(byRecent, func(i, j int) bool { return byKey[byRecent[i]].LastUsed.After(byKey[byRecent[j]].LastUsed) })
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
	out := []SessionStatus{}
	for _, sk := range order {
		ss := byKey[sk]
		if cs, ok := st.SessionCache(ctx, sk[0], sk[1]); ok {
			ss.Cache = cs
		}
		out = append(out, *ss)
	}
	return out, total
}

// CooldownText is how a member's cooldown reads at now, the same on the page,
// in `dual-proxy status` and (as numbers) in /metrics: "since 14:02:05 (for
// 40 s), retry in 20 s" — when it began, how long it has run, and when the
// member is tried again; without a known start, "retry in 20 s (at
// 14:03:05)". Times are HH:MM:SS in loc; "" when until is not after now.
func CooldownText(since *time.Time, until, now time.Time, loc *time.Location) string {
	if !until.After(now) {
		return ""
	}
	left := secondsUp(until.Sub(now))
	if since == nil || since.IsZero() {
		return fmt.Sprintf("retry in %d s (at %s)", left, until.In(loc).Format(time.TimeOnly))
	}
	return fmt.Sprintf("since %s (for %d s), retry in %d s", since.In(loc).Format(time.TimeOnly), int64(max(now.Sub(*since), 0)/time.Second), left)
}

// secondsUp is d in whole seconds, rounded up: "retry in 0 s" never shows
// while the member is still cooling.
func secondsUp(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

// classWords say a failure class in words, as the page's
// CLASSES table does (page.html; keep the two alike).
var classWords = map[string]string{
	config.ClassAuth: "key refused", config.ClassQuota: "quota or billing exhausted",
	config.ClassRateLimit: "rate limited", config.ClassServer: "server error",
	config.ClassTimeout: "timed out", config.ClassEmpty: "empty answer",
	config.ClassNetwork: "network error", config.ClassBadRequest: "bad request (the caller's)",
	config.ClassModelNotFound: "model not found", config.ClassState: "conversation state unavailable",
	"canceled": "canceled by the client",
}

// ClassText is a failure class in the page's words with the class beside
// it, "rate limited (rate_limit)"; "failed (x)" for a class it does not
// know, "" for none.
func ClassText(class string) string {
	if class == "" {
		return ""
	}
	w, ok := classWords[class]
	if !ok {
		w = "failed"
	}
	return w + " (" + class + ")"
}
