package engine

import (
	"maps"
	"slices"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/route"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// Status assembles the engine's state (SPEC OPS-2): candidates in default
// order with cooldowns and counters, the health state, the per-host cache,
// recent decisions and counters. Listeners is empty (see Server.Status).
// Safe for concurrent use; the result is a copy.
func (e *Engine) Status() statusdoc.Status {
	lc := e.live.Load()
	now := e.cfg.Now()
	remaining := func(t time.Time) int64 { return max(t.Sub(now).Milliseconds(), 0) }
	display := make(map[string]string, len(lc.cfg.Candidates))
	for _, c := range lc.cfg.Candidates {
		display[c.Key()] = c.String()
	}
	show := func(key string) string {
		if d, ok := display[key]; ok {
			return d
		}
		return key // a key holds no credentials
	}

	hs := e.health.Snapshot()
	st := statusdoc.Status{
		Listeners:  []string{},
		Now:        now,
		Settings:   map[string]any{},
		Candidates: make([]statusdoc.CandidateStatus, 0, len(lc.cfg.Candidates)),
		Health: statusdoc.HealthStatus{
			Enabled:    lc.cfg.HealthURL != nil,
			IntervalMS: lc.cfg.HealthInterval.Milliseconds(),
			LastRun:    hs.LastRun,
			Results:    []statusdoc.HealthResultStatus{},
		},
		Cache:      []statusdoc.CacheStatus{},
		Decisions:  e.Decisions(),
		TLSProbes:  e.TLSProbes(),
		HealthRuns: e.HealthRuns(),
	}
	maps.Copy(st.Settings, lc.cfg.Settings)
	if u := lc.cfg.HealthURL; u != nil {
		st.Health.Origin = u.Scheme + "://" + u.Host
	}
	st.Health.TargetDown = hs.TargetDown
	if hs.Preferred != "" {
		st.Health.Preferred = show(hs.Preferred)
	}
	marks := make(map[string]route.HealthMark, len(hs.Marks))
	for _, m := range hs.Marks {
		marks[m.Key] = m
	}
	for _, r := range hs.Results {
		m, seen := marks[r.Key]
		st.Health.Results = append(st.Health.Results, statusdoc.HealthResultStatus{
			Candidate: show(r.Key), Alive: r.Alive, Reason: r.Reason,
			Streak: m.Streak, Eligible: !seen || m.Eligible,
		})
	}

	cds := e.cooldowns.Snapshot()
	for _, c := range lc.cfg.Candidates {
		cs := candidateStatus(c, cds, hs.Preferred, now)
		cs.State = shownState(cs, hs)
		st.Candidates = append(st.Candidates, cs)
	}
	for _, ce := range e.cache.Snapshot() {
		st.Cache = append(st.Cache, statusdoc.CacheStatus{Host: ce.Host, Candidate: show(ce.Key), Expires: ce.Expires, RemainingMS: remaining(ce.Expires)})
	}
	if st.Decisions == nil {
		st.Decisions = []statusdoc.Decision{}
	}
	return st
}

// Decisions returns the last (at most 200) routing decisions, oldest first.
func (e *Engine) Decisions() []statusdoc.Decision { return e.decisions.Snapshot() }

// OnDecision registers f to be called after every decision (from the
// request's goroutine; f must not block). Used by the demo and tests.
func (e *Engine) OnDecision(f func(statusdoc.Decision)) { e.decisions.Subscribe(f) }

// shownState is the state cs shows on the page, in the JSON and in the
// status command alike, so they never disagree: cooling as the cooldown says; else
// failing when its last health check failed while the target answered on
// another path (a target down on every path blames none); else hot
// when a success or a passing check proves it; else untried.
func shownState(cs statusdoc.CandidateStatus, hs route.HealthState) string {
	if cs.State == statusdoc.StateCooling {
		return cs.State
	}
	passed := false
	for _, r := range hs.Results {
		if r.Key != cs.Key {
			continue
		}
		if !r.Alive && !hs.TargetDown {
			return statusdoc.StateFailing
		}
		passed = r.Alive
	}
	if cs.Successes > 0 || passed {
		return statusdoc.StateHot
	}
	return statusdoc.StateUntried
}

// candidateStatus is c's entry in Status: counters and cooldowns from its
// cooldown record in cds, if any.
func candidateStatus(c candidate.Candidate, cds []route.CandidateState, preferred string, now time.Time) statusdoc.CandidateStatus {
	remaining := func(t time.Time) int64 { return max(t.Sub(now).Milliseconds(), 0) }
	cs := statusdoc.CandidateStatus{Candidate: c.String(), Key: c.Key(), Kind: c.KindName(), Source: c.Source, State: statusdoc.StateHot,
		Preferred: c.Key() == preferred}
	i := slices.IndexFunc(cds, func(s route.CandidateState) bool { return s.Key == c.Key() })
	if i >= 0 {
		s := cds[i]
		cs.Successes, cs.Failures = s.Successes, s.Failures
		if s.Until.After(now) {
			cs.State, cs.Until, cs.RemainingMS = statusdoc.StateCooling, s.Until, remaining(s.Until)
		}
		if !s.LastFailure.IsZero() {
			cs.LastFailure = &statusdoc.FailureStatus{Time: s.LastFailure, Phase: string(s.LastPhase), Tier: s.LastTier, Reason: s.LastReason}
		}
		for _, h := range s.Hosts {
			cs.HostCooldowns = append(cs.HostCooldowns, statusdoc.HostCooldownStatus{Host: h.Host, Until: h.Until,
				RemainingMS: remaining(h.Until), Phase: string(h.Phase), Reason: h.Reason})
		}
	}
	return cs
}
