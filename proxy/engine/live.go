package engine

import (
	"context"
	"errors"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// A running instance's settings change without a restart.
// The engine keeps what can change in one liveConfig behind an atomic
// pointer: a request, a tunnel or a health check loads it once and works
// with that snapshot to its end, so a change never takes a lock on the data
// path and never moves an open tunnel or a request in flight; the next one
// loads the new snapshot. Reconfigure builds and stores a new snapshot and
// makes the state follow: a removed candidate's cooldowns, cache entries
// and health marks are dropped, the cache's TTL and the cooldown length
// are set, the health loop re-arms when its URL or interval changed.

// liveConfig is one snapshot of the changeable configuration and what is
// derived from it once. Never modified once stored.
type liveConfig struct {
	cfg Config
	// loopPlan is plan's answer for a loopback destination under
	// LoopbackDirect, made once and shared: callers only read a plan (one
	// allocation per request less).
	loopPlan []attempt
	// names are the candidates' String(), made once: a decision names its
	// candidate per request (candName).
	names []string
	// onePlans are plan's answers when cfg.Candidates has one entry
	// (singlePlans; nil otherwise), shared the same way.
	onePlans [][]attempt
}

// newLiveConfig derives a snapshot from cfg (defaults set).
func newLiveConfig(cfg Config) *liveConfig {
	lc := &liveConfig{cfg: cfg, loopPlan: []attempt{{cand: candidate.Direct, timeout: cfg.ConnectTimeout}}}
	lc.names = make([]string, len(cfg.Candidates))
	for i, c := range cfg.Candidates {
		lc.names[i] = c.String()
	}
	if len(cfg.Candidates) == 1 {
		p := singlePlans(cfg.Candidates[0], cfg)
		lc.onePlans = p[:]
	}
	return lc
}

// Reconfigure makes cfg the configuration of every request, tunnel and
// health check that starts from now on (SPEC OPS-7); those under way
// finish with the configuration they started with. cfg is validated and
// defaulted as NewEngine does; its Handler, Logger, Now, GatewayTLS,
// HealthTLS, CacheSize and MaxPendingHeads are ignored (the engine keeps
// its own). Errors (a negative duration, a bad health URL, an https
// gateway's CA file) leave the configuration as it was.
func (e *Engine) Reconfigure(cfg Config) error {
	cfg.Handler, cfg.Logger, cfg.Now = e.cfg.Handler, e.cfg.Logger, e.cfg.Now
	cfg.GatewayTLS, cfg.HealthTLS = e.cfg.GatewayTLS, e.cfg.HealthTLS
	cfg.CacheSize, cfg.MaxPendingHeads = e.cfg.CacheSize, e.cfg.MaxPendingHeads
	if err := cfg.setDefaults(); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("proxy: engine closed")
	}
	if err := e.dialer.Prepare(cfg.Candidates); err != nil {
		return err
	}
	old := e.live.Load()
	e.live.Store(newLiveConfig(cfg))
	keys := make(map[string]bool, len(cfg.Candidates))
	for _, c := range cfg.Candidates {
		keys[c.Key()] = true
	}
	keep := func(k string) bool { return keys[k] }
	e.cache.SetTTL(cfg.PrefTTL)
	e.cache.Keep(cacheKeep(old.cfg.Candidates, cfg.Candidates))
	e.cooldowns.Reconfigure(cfg.Cooldown, keep)
	e.health.Reconfigure(cfg.HealthRecoverCount, keep)
	e.answered.keepAnswered(keep)
	if old.cfg.HealthInterval != cfg.HealthInterval || urlString(old.cfg) != urlString(cfg) {
		e.checker.Rearm()
	}
	return nil
}

// cacheKeep tells which per-host cache entries stay when the candidate
// list old becomes next: an entry naming a candidate
// still listed stays (a reorder keeps what was learnt), unless a candidate
// added by the change ranks before it, so a gateway added under a running
// agent gets its chance at the hosts an older, lower one served.
func cacheKeep(old, next []candidate.Candidate) func(key string) bool {
	was := make(map[string]bool, len(old))
	for _, c := range old {
		was[c.Key()] = true
	}
	rank := make(map[string]int, len(next))
	firstAdded := len(next)
	for i, c := range next {
		rank[c.Key()] = i
		if !was[c.Key()] && i < firstAdded {
			firstAdded = i
		}
	}
	return func(k string) bool {
		i, ok := rank[k]
		return ok && i < firstAdded
	}
}

// urlString is cfg.HealthURL as text, "" when off.
func urlString(cfg Config) string {
	if cfg.HealthURL == nil {
		return ""
	}
	return cfg.HealthURL.String()
}

// Probe sends one health check request (GET HealthURL) through c alone,
// whether or not c is a configured candidate, and reports the URL's
// origin, how long it took and why it failed: the settings page's test of
// a gateway before it is added. Without a health URL it
// is an error saying so.
func (e *Engine) Probe(ctx context.Context, c candidate.Candidate) (target string, latency time.Duration, err error) {
	lc := e.live.Load()
	if lc.cfg.HealthURL == nil {
		return "", 0, errors.New("no health URL to test against: set health-url")
	}
	target = lc.cfg.HealthURL.Scheme + "://" + lc.cfg.HealthURL.Host
	if err := e.dialer.Prepare([]candidate.Candidate{c}); err != nil {
		return target, 0, err
	}
	start := time.Now()
	r, _ := e.prober.Check(ctx, healthSettings(lc), c)
	if !r.Alive {
		return target, 0, errors.New(r.Reason)
	}
	return target, time.Since(start), nil
}

// Candidates are the candidates in default order now.
func (e *Engine) Candidates() []candidate.Candidate {
	return append([]candidate.Candidate(nil), e.live.Load().cfg.Candidates...)
}
