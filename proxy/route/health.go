package route

import (
	"sort"
	"sync"
	"time"
)

// HealthResult is the outcome of one health check through one candidate. Alive
// means an origin answered with a status < 500 (401 and 403 count); answers
// made by a gateway itself (407, non-2xx to CONNECT, a gateway's own 502/504)
// are not alive. Reason says why it failed (phase and cause, no secrets), or is
// empty.
type HealthResult struct {
	Key    string `json:"candidate"`
	Alive  bool   `json:"alive"`
	Reason string `json:"reason,omitempty"`
}

// Health keeps the global health preference with hysteresis (SPEC HC-1,
// HC-4). It is pure state: the caller's health loop probes and feeds the
// results in. Safe for concurrent use.
//
// Hysteresis: a candidate that has failed — in a health check, or in
// traffic (MarkFailed) — is "recovering" and may become the preference
// again only after recoverCount consecutive passing checks. A candidate
// never seen failing is eligible at once. Passive signals (traffic) can
// only take eligibility away; only active checks give it back, so one
// lucky request cannot undo a failing check.
//
// The health loop, per run: probe candidates in default order, append each
// result, and stop when WantsMore returns false (the first alive candidate
// that is eligible, counting this pass); then call Record with the results.
// Candidates after that point are not probed and keep their state.
// Probing every candidate and calling Record once is also correct.
type Health struct {
	recover int
	now     func() time.Time

	mu        sync.Mutex
	preferred string
	lastRun   time.Time
	results   []HealthResult
	marks     map[string]*healthMark
	// targetDown: the last run checked two or more candidates and none
	// reached the health URL (TargetDown).
	targetDown bool
}

type healthMark struct {
	recovering bool // failed since it was last eligible
	streak     int  // consecutive passing checks (capped)
}

// eligibleAfterPass reports whether m would be eligible after one more
// passing check.
func (m *healthMark) eligibleAfterPass(recover int) bool {
	return m == nil || !m.recovering || m.streak+1 >= recover
}

// NewHealth returns a Health with no preference. recoverCount is
// --health-recover-count (default 2); values below 1 mean 1 (no
// hysteresis). now is the clock (time.Now when nil).
func NewHealth(recoverCount int, now func() time.Time) *Health {
	if recoverCount < 1 {
		recoverCount = 1
	}
	if now == nil {
		now = time.Now
	}
	return &Health{recover: recoverCount, now: now, marks: make(map[string]*healthMark)}
}

// WantsMore tells the health loop whether to probe the next candidate:
// false once resultsSoFar holds an alive candidate that Record would make
// the preference; true otherwise (including when nothing is alive yet).
func (h *Health) WantsMore(resultsSoFar []HealthResult) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range resultsSoFar {
		if r.Alive && h.marks[r.Key].eligibleAfterPass(h.recover) {
			return false
		}
	}
	return true
}

// Record applies one run's results, in default order. A pass
// extends a candidate's streak (and ends its recovery after recoverCount
// passes); a failure resets the streak and starts recovery. The preference
// becomes the first alive, eligible candidate of the run; if there is none
// (all failed, or the alive ones are still recovering) the preference is
// cleared, so the next request scans in default order.
// Record with no results only stamps the run time and clears the
// preference.
//
// When two or more candidates were checked and none was alive, the health
// URL failed on every path: that says the target is down (offline, or the
// URL unreachable from here), not that every path is, so the run marks no
// candidate (their hysteresis stays as it was) and TargetDown is set
// until a run finds one alive. With one candidate the
// two cannot be told apart and its failure counts.
func (h *Health) Record(results []HealthResult) {
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastRun = now
	h.results = append(h.results[:0:0], results...)
	h.preferred = ""
	h.targetDown = len(results) >= 2 && !anyAlive(results)
	if h.targetDown {
		return
	}
	for _, r := range results {
		m := h.marks[r.Key]
		if m == nil {
			m = &healthMark{}
			h.marks[r.Key] = m
		}
		if !r.Alive {
			m.recovering, m.streak = true, 0
			continue
		}
		if m.streak < h.recover {
			m.streak++
		}
		if m.streak >= h.recover {
			m.recovering = false
		}
		if h.preferred == "" && !m.recovering {
			h.preferred = r.Key
		}
	}
}

// anyAlive reports whether one of results is alive.
func anyAlive(results []HealthResult) bool {
	for _, r := range results {
		if r.Alive {
			return true
		}
	}
	return false
}

// TargetDown reports whether the last run found the health URL failing on
// every path it checked (two or more): see Record.
func (h *Health) TargetDown() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.targetDown
}

// MarkFailed records a traffic failure of candidate key (the passive
// signal): its streak resets and it must pass recoverCount checks before it
// can be preferred again. If it is the preference now, the preference is
// cleared. The caller also kicks a health check, so a healthy path is
// found again soon.
func (h *Health) MarkFailed(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.marks[key]
	if m == nil {
		m = &healthMark{}
		h.marks[key] = m
	}
	m.recovering, m.streak = true, 0
	if h.preferred == key {
		h.preferred = ""
	}
}

// Preferred returns the health-preferred candidate key, or "" for none.
func (h *Health) Preferred() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.preferred
}

// HealthState is a copy of the health state for the status page.
type HealthState struct {
	Preferred string         `json:"preferred,omitempty"`
	LastRun   time.Time      `json:"last_run,omitzero"`
	Results   []HealthResult `json:"results,omitempty"`
	// Marks holds every candidate seen by a check or MarkFailed, sorted by
	// key: its passing streak (capped at recoverCount) and whether it may be
	// preferred now.
	Marks []HealthMark `json:"marks,omitempty"`
	// TargetDown: the last run failed on every path (two or more) and
	// marked none of them (Record).
	TargetDown bool `json:"target_down,omitempty"`
}

// HealthMark is one candidate's hysteresis state.
type HealthMark struct {
	Key      string `json:"candidate"`
	Streak   int    `json:"streak"`
	Eligible bool   `json:"eligible"`
}

// Snapshot returns a copy of the current state.
func (h *Health) Snapshot() HealthState {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := HealthState{Preferred: h.preferred, LastRun: h.lastRun, TargetDown: h.targetDown,
		Results: append([]HealthResult(nil), h.results...)}
	for k, m := range h.marks {
		s.Marks = append(s.Marks, HealthMark{Key: k, Streak: m.streak, Eligible: !m.recovering})
	}
	sort.Slice(s.Marks, func(i, j int) bool { return s.Marks[i].Key < s.Marks[j].Key })
	return s
}
