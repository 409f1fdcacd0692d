// Package health runs the proxy's health checks: one
// goroutine that checks the candidates in default order every interval and
// when kicked by a path failure, and records the results in the health
// state (route.Health) whose preference leads the selection order.
//
// The engine is a Target: it gives each run its settings, makes one check
// of a candidate (Prober is the check itself: one GET through
// proxy/upstream) and clears the cooldown of a gateway proved alive.
package health

import (
	"context"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// MinKickGap is the least time between the start of a check and a kicked
// check after it (at most once per second).
const MinKickGap = time.Second

// Settings are one run's health check settings, read once at its start
// (SPEC OPS-7: a change applies from the next run on).
type Settings struct {
	// URL is the health URL (http:// or https://); nil: checks are off.
	URL *url.URL
	// Interval is the time between periodic checks; 0: kicked checks only.
	Interval time.Duration
	// ConnectTimeout (--timeout-ms) bounds the whole check through one
	// candidate: opening the path, TLS and the status line.
	ConnectTimeout time.Duration
	// Candidates are checked in this order (the default order).
	Candidates []candidate.Candidate
}

// Target is the engine side of a Checker.
type Target interface {
	// Settings returns the settings of the run starting now.
	Settings() Settings
	// Check makes one health check of c under s, cut short when ctx is
	// done. local is true when this machine ran out of descriptors or
	// memory: the result then says nothing about c.
	Check(ctx context.Context, s Settings, c candidate.Candidate) (r route.HealthResult, local bool)
	// Proved is told that c answered a check: its gateway cooldown ends.
	Proved(c candidate.Candidate)
}

// Checker runs health checks (SPEC HC-1, HC-2) on one goroutine: every
// Settings.Interval, and when kicked, at most once per MinKickGap. One run
// at a time; kicks during a run are coalesced into one. Create it with
// Start; end it with Stop.
type Checker struct {
	t      Target
	state  *route.Health
	log    *slog.Logger
	kickC  chan struct{} // capacity 1: pending kick
	rearmC chan struct{} // capacity 1: the URL or interval changed
	done   chan struct{}
	once   sync.Once
	loopWG sync.WaitGroup
	ctx    context.Context
	cancel context.CancelFunc

	runMu sync.Mutex // held for a whole run: one check at a time

	mu   sync.Mutex
	runs int
}

// Start returns a running Checker for t that records into state and logs
// to log (nil: slog.Default()). Its first check runs at once when t's
// settings have a URL and an interval.
func Start(t Target, state *route.Health, log *slog.Logger) *Checker {
	if log == nil {
		log = slog.Default()
	}
	h := &Checker{t: t, state: state, log: log,
		kickC: make(chan struct{}, 1), rearmC: make(chan struct{}, 1), done: make(chan struct{})}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.loopWG.Add(1)
	go h.loop()
	return h
}

// Kick asks for a check soon (a path failure); it never blocks.
// Kicks before the next check starts are one kick.
func (h *Checker) Kick() {
	select {
	case h.kickC <- struct{}{}:
	default:
	}
}

// Rearm makes the loop take the current URL and interval: a
// new period, and a first check at once when periodic checks are on, as at
// start. It never blocks.
func (h *Checker) Rearm() {
	select {
	case h.rearmC <- struct{}{}:
	default:
	}
}

// Stop cancels the run under way (it records nothing) and ends the loop;
// it returns when the loop has ended. Later calls do nothing, and so do
// Kick, Rearm and Run after it.
func (h *Checker) Stop() {
	h.once.Do(func() {
		h.cancel()
		close(h.done)
	})
	h.loopWG.Wait()
}

// Runs returns how many runs have started (a run without a URL does not
// count).
func (h *Checker) Runs() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.runs
}

func (h *Checker) loop() {
	defer h.loopWG.Done()
	var ticker *time.Ticker
	var tick <-chan time.Time
	var lastRun time.Time
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	arm := func() {
		if ticker != nil {
			ticker.Stop()
			ticker, tick = nil, nil
		}
		if s := h.t.Settings(); s.Interval > 0 && s.URL != nil {
			ticker = time.NewTicker(s.Interval)
			tick = ticker.C
			lastRun = time.Now()
			h.Run() // a first check at start; kicks wait MinKickGap after it
		}
	}
	arm()
	for {
		select {
		case <-h.done:
			return
		case <-h.rearmC:
			arm()
			continue
		case <-tick:
		case <-h.kickC:
			if wait := MinKickGap - time.Since(lastRun); !lastRun.IsZero() && wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-h.done:
					t.Stop()
					return
				}
				// Kicks made while the gap was waited out are this
				// kick: none has a check of its own (Kick).
				select {
				case <-h.kickC:
				default:
				}
			}
		}
		lastRun = time.Now()
		h.Run()
		// A kick that arrived during the run is served by the next loop
		// iteration, after the one-second gap.
	}
}

// Run checks the candidates in default order until the health state has
// its preference, telling the target of every candidate proved
// alive (SPEC CD-2), and records the results. Runs never overlap: Run
// waits for one under way (tests call it while the loop runs). A run cut
// short by Stop, or one that ran out of local resources, records nothing.
func (h *Checker) Run() {
	h.runMu.Lock()
	defer h.runMu.Unlock()
	s := h.t.Settings() // this run's candidates and URL
	if h.ctx.Err() != nil || s.URL == nil {
		return
	}
	h.mu.Lock()
	h.runs++
	h.mu.Unlock()
	var results []route.HealthResult
	for _, c := range s.Candidates {
		if h.ctx.Err() != nil {
			return
		}
		r, local := h.t.Check(h.ctx, s, c)
		if local {
			// Out of descriptors: the check learned nothing about c or
			// the others; record nothing.
			h.log.Warn("health check skipped: out of local resources", "reason", r.Reason)
			return
		}
		results = append(results, r)
		if r.Alive {
			h.t.Proved(c)
		}
		h.log.Debug("health check", "candidate", c.String(), "alive", r.Alive, "reason", r.Reason)
		if !h.state.WantsMore(results) {
			break
		}
	}
	if h.ctx.Err() != nil {
		return // stopped mid-run: the last result may be the cancel's
	}
	h.state.Record(stillConfigured(results, h.t.Settings().Candidates))
	if p := h.state.Preferred(); p != "" {
		h.log.Info("health check done", "preferred", p)
		return
	}
	// No candidate reached the health URL: say why, per candidate, at the
	// default level (preferred="" alone does not tell a dead gateway
	// from an offline machine). The URL's host only, never its path.
	var why strings.Builder
	for i, r := range results {
		if i > 0 {
			why.WriteString("; ")
		}
		why.WriteString(r.Key + ": " + r.Reason)
	}
	if h.state.TargetDown() {
		// Every path failed alike: the target is down or unreachable
		// from here, and no path was marked (route.Health.Record).
		h.log.Warn("health check: no candidate reached the health URL; the target fails on every path, so no path is marked and traffic decides", "host", s.URL.Host, "tried", why.String())
		return
	}
	h.log.Warn("health check: no candidate reached the health URL", "host", s.URL.Host, "tried", why.String())
}

// stillConfigured returns the results of the candidates that are still in
// cands: a candidate removed by a live change while the run checked it has had
// its marks dropped, and its result must not bring it back as the preference or
// into the status document.
func stillConfigured(results []route.HealthResult, cands []candidate.Candidate) []route.HealthResult {
	kept := results[:0]
	for _, r := range results {
		for _, c := range cands {
			if c.Key() == r.Key {
				kept = append(kept, r)
				break
			}
		}
	}
	return kept
}
