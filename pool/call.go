package pool

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// call is one client request being served by a pool. It orchestrates its
// pieces: the member attempts in the balancer's order (attemptState, one
// member try at a time), the writes to the client at and after the commit
// point (clientStream), the pre-commit keep-alives (kaState), the
// request's translation (translation) and the final answer and record
// (answer).
type call struct {
	// answerModel is the JSON string the current attempt's answer names
	// as its model (the client's unified id) when the member's model is
	// another id; nil when they are the same (the answer passes as is).
	answerModel []byte

	p     *Pool
	cfg   *config.Config
	scrub config.Scrubber
	pc    *config.PoolConfig
	fl    api.Flavour
	ep    neutral.Endpoint
	ci    *neutral.CallInfo
	um    *config.UnifiedModel
	r     *http.Request

	start      time.Time // monotonic, for latencies
	startClock time.Time // injected clock, for records
	session    string    // short hash
	probe      *probe    // set for POOL-14 test calls (probe.go)

	// oneMember: the body did not fit the body budget (budget.go): this
	// call goes to the first member only and the body is not kept.
	oneMember bool
	// boundTo is the member of the live binding the call started on, ""
	// for a first pick (or no binding): a stream it serves needs no
	// commit-point Bind. picked is the first pick in flight the call
	// made or joined: concurrent calls of the session join it already, so
	// a stream it serves needs no commit-point Bind either (its binding is
	// written by Finish; on a shared state two round trips per call, SPEC
	// POOL-23).
	boundTo, picked string

	clientStream
	kaState
	attemptState
	translation
	answer
	rateState
}

// attemptState is the current member try: the API it sends the member and,
// for a translated stream, the converter of the member's events (SPEC
// POOL-21). attempt sets both afresh for every try.
type attemptState struct {
	rt   memberRoute
	conv *api.Stream
}

// answer is what the call's final answer and its record are made of: the
// failed attempts (the aggregated error lists them, SPEC POOL-11), the
// time to the first byte, whether the client's answer was translated, and
// what the one State.Finish writes (SPEC POOL-23).
type answer struct {
	attempts   []neutral.Attempt
	ttfb       time.Duration
	translated bool // the answer the client got was translated (status)
	// end collects what the call writes to State once it is over (one
	// Finish); nil before Begin.
	end *balance.CallEnd
}

// outcome is how one attempt ended.
type outcome struct {
	// done: a response was written (success, pass-through, or a failure
	// after the commit point); no further member is tried.
	done bool
	// served: the member answered (commit point reached or a complete
	// non-streamed answer); it becomes the binding (POOL-5, POOL-8).
	served bool
	// canceled: the client went away (POOL-9): no failure, no failover.
	canceled bool
	// fail describes a failure (before or after the commit point).
	fail     *neutral.Attempt
	explicit time.Duration // server-given wait for rate_limit
	// noCooldown: the failure is the transport's, not the member's (a
	// kept-alive connection the channel closed unanswered, POOL-17): it is
	// recorded and logged but cools nothing and counts no member failure.
	noCooldown bool
	u          neutral.Accounting
	// state: the state keys the answer produced (POOL-18); retry: send to
	// the same member once more (it rejected encrypted content).
	state []string
	retry bool
}

// dropRequestHeaders are removed from a pool request besides the hop-by-hop
// fields (httpmsg.RemoveHopByHop, RFC 9110 §7.6.1): Host and
// Content-Length (set for the member's request), the client's credentials
// in every header APIs take them in (x-api-key, Authorization, Azure's
// api-key, Gemini's x-goog-api-key; replaced by the member's key, SPEC
// POOL-2), the client's Accept-Encoding (the pool must read the stream;
// Transport asks for gzip and decodes it) and cookies.
var dropRequestHeaders = []string{"Host", "Content-Length",
	"X-Api-Key", "Authorization", "Api-Key", "X-Goog-Api-Key", "Accept-Encoding", "Cookie"}

// run serves the call: it picks the eligible members, tries them in the
// balancer's order (one retry on the same member where the outcome allows
// it) and answers with the first usable result or the aggregated error.
func (c *call) run() {
	sessionID, _ := balance.SessionIdentity(c.r.Header, c.ci)
	c.session = balance.SessionHash(sessionID)
	if c.probe != nil {
		// A test call (POOL-14) is balanced like a new session but records
		// no binding, so it does not skew the bound-session counts.
		sessionID, c.session = "", testSession
	}
	key := balance.BindKey{Pool: c.pc.ID, Session: sessionID, Model: c.ci.Model}
	eligible, skipped := c.eligibleMembers()
	if c.probe != nil && c.probe.member != "" {
		eligible, skipped = onlyMember(eligible, skipped, c.pc, c.probe.member)
	}
	if len(eligible) == 0 {
		c.headers(c.w.Header(), "none")
		api.WriteError(c.w, c.fl, http.StatusBadRequest, "no member of pool "+c.pc.ID+" can serve this request ("+strings.Join(skipped, "; ")+")", nil)
		c.record("", config.ClassBadRequest, http.StatusBadRequest)
		return
	}
	start := balance.CallStart{Pool: c.pc, Key: key, Eligible: eligible, Targets: make([]string, len(eligible)), Now: c.p.opts.Now()}
	for i, m := range eligible {
		start.Targets[i] = c.target(m)
	}
	start.Owner = c.stateOwnerKey()
	// One Begin before the attempts and one Finish after them: on a shared
	// state, two round trips per call (SPEC POOL-23).
	begun := c.p.state.Begin(c.sctx(), start)
	cds := begun.Cooldowns
	until := func(m string) (time.Time, bool) { return balance.Cooling(cds, m, c.target(m)) }
	hot := func(m string) bool { _, cooling := until(m); return !cooling }
	primary := begun.Member
	if owner := begun.Owner; owner != "" && hot(owner) && slices.Contains(eligible, owner) {
		primary = owner // POOL-18: the member that holds previous_response_id
	}
	if c.pc.Strategy == config.StrategySticky && key.Session != "" {
		if begun.InFlight {
			c.picked = begun.Member
		} else {
			c.boundTo = begun.Member // a live binding: Acquire touched it
		}
	}
	c.end = &balance.CallEnd{Pool: c.pc, Key: key, InFlight: begun.InFlight, Session: c.session}
	defer c.finish()
	c.rateState = rateState{eligible: eligible, cds: cds}
	order, hold := c.rateLimitOrder(balance.AttemptOrder(eligible, primary, until))
	if len(order) == 0 {
		c.allRateLimited() // POOL-26: no member may be called now
		return
	}
	if hold > 0 && !c.waitOut(order[0], hold) {
		c.record(order[0], "canceled", 0)
		return
	}
	for _, m := range order {
		o := c.attempt(m, key)
		if o.retry && !o.canceled && !c.oneMember {
			c.failed(m, o)
			o = c.attempt(m, key)
		}
		if o.fail != nil && o.fail.Class == config.ClassRateLimit && !o.done && !o.canceled && !c.oneMember && c.mayWait(m, o.explicit) {
			// POOL-26: the bound member's short rate limit is waited out
			// and the call sent to it again; the session stays.
			c.failed(m, o)
			if !c.waitOut(m, o.explicit) {
				o = outcome{canceled: true}
			} else {
				o = c.attempt(m, key)
			}
		}
		if o.canceled {
			c.p.log.Info("pool call canceled by client", "pool", c.pc.ID, "member", m, "session", c.session)
			c.record(m, "canceled", 0)
			return
		}
		if o.fail != nil {
			c.failed(m, o)
		}
		if o.served && c.ep.Kind == neutral.EpGenerate {
			// Written by Finish (served implies done: the call ends here).
			c.end.Served, c.end.Succeeded, c.end.Usage, c.end.Owned = m, o.fail == nil, o.u, c.owned(o)
			if f := c.p.opts.Observer.Usage; f != nil {
				f(c.pc.ID, m, o.u)
			}
		}
		if c.oneMember && !o.done {
			break // no replay of a body beyond the budget (POOL-17)
		}
		if o.done {
			class, status := "", 200
			if o.fail != nil {
				class, status = o.fail.Class, o.fail.Status
			}
			c.record(m, class, status)
			c.p.log.Debug("pool call done", "pool", c.pc.ID, "member", m, "attempts", len(c.attempts)+boolToInt(o.fail == nil),
				"ttfb_ms", c.ttfb.Milliseconds(), "class", class, "session", c.session)
			return
		}
	}
	c.aggregate()
}

// eligibleMembers splits the pool's members into those that can serve
// this call and, for the rest, "member: reason" lines.
func (c *call) eligibleMembers() (eligible, skipped []string) {
	for _, m := range c.pc.Members {
		if why := config.CannotServe(c.cfg, c.pc, c.um, c.ci.Model, m, c.ci.Demands); why != "" {
			skipped = append(skipped, m+": "+why)
			continue
		}
		if why := c.untranslatable(m); why != "" {
			skipped = append(skipped, m+": "+why)
			continue
		}
		eligible = append(eligible, m)
	}
	return eligible, skipped
}

// attempt runs one attempt on member m.
func (c *call) attempt(m string, key balance.BindKey) outcome {
	c.rt, c.conv = c.routeFor(c.cfg.Channel(m)), nil
	c.answerModel = nil
	if t := c.target(m); t != c.ci.Model && c.ci.Model != "" {
		c.answerModel = wirefmt.ModelValue(c.ci.Model) // the answer names the id the client asked for (POOL-2)
	}
	if c.rt.translate && c.ep.Kind == neutral.EpCountTokens {
		return c.estimateTokens(m)
	}
	if c.ci.Stream {
		return c.streamAttempt(m, key)
	}
	if c.collects() {
		return c.collectAttempt(m) // POOL-7b: a member stream built into the JSON answer
	}
	return c.plainAttempt(m)
}

// sctx is the context of a state call: the request's values without its
// cancellation (a call's bookkeeping after the client left must still
// land); the State bounds its own wait (SPEC POOL-23).
func (c *call) sctx() context.Context { return context.WithoutCancel(c.r.Context()) }

// target is the member's model id for this call.
func (c *call) target(member string) string { return c.pc.Target(c.um, c.ci.Model, member) }

// failed records a member failure: counters, cooldown, log (SPEC POOL-10).
func (c *call) failed(m string, o outcome) {
	a := o.fail
	c.attempts = append(c.attempts, *a)
	if a.Class == config.ClassBadRequest || a.Class == config.ClassState {
		return
	}
	if o.noCooldown {
		c.p.log.Info("pool member's reused connection closed unanswered", "pool", c.pc.ID, "member", m, "class", a.Class,
			"session", c.session)
		return
	}
	c.p.state.Count(c.sctx(), c.pc.ID, m, false)
	key := m
	if a.Class == config.ClassModelNotFound {
		key = balance.ModelKey(m, c.target(m))
	}
	until := c.p.state.Fail(c.sctx(), key, a.Class, c.pc.Cooldown.Base(a.Class), o.explicit, c.p.opts.Now())
	c.recovered(m, until)
	phase := "before-commit" // silent failover follows
	if o.served {
		phase = "after-commit" // the client got an error event
	}
	attrs := []any{"pool", c.pc.ID, "member", m, "class", a.Class, "status", a.Status,
		"phase", phase, "cooldown_until", until.Format(time.RFC3339), "session", c.session}
	if a.Status == 0 && (a.Class == config.ClassNetwork || a.Class == config.ClassTimeout) && a.Message != "" {
		// The transport's own words ("all candidates failed for HOST: …"),
		// never a channel's body: this line reports the path, which the
		// proxy logs only at debug for the pool's calls (OPS-1).
		attrs = append(attrs, "reason", a.Message)
	}
	c.p.log.Warn("pool member failed", attrs...)
}

// aggregate answers when every member failed before the commit point
// (SPEC POOL-11): one error listing each attempt; the status of the most
// transient failure (429 > 529/503 > 5xx > others).
func (c *call) aggregate() {
	status, best := 502, 0
	var parts []string
	for _, a := range c.attempts {
		st := a.Status
		if st < 400 {
			// No status, or a 2xx whose answer the pool could not use:
			// the client must see an error status.
			st = balance.ClassStatus(a.Class)
		}
		if t := balance.Transience(st); t > best {
			status, best = st, t
		}
		parts = append(parts, fmt.Sprintf("%s: %s (%d)", a.Member, a.Class, a.Status))
	}
	msg := fmt.Sprintf("pool %s: all %d attempted members failed: %s", c.pc.ID, len(c.attempts), strings.Join(parts, "; "))
	if c.oneMember {
		msg += fmt.Sprintf(" (the request body is beyond the pool's %d MiB replay budget, so it was sent to one member only)", c.p.opts.BodyBudget>>20)
	}
	if c.early {
		c.earlyError(status, msg)
	} else {
		c.headers(c.w.Header(), "none")
		c.retryAfter(c.w.Header()) // POOL-26: every member cooling
		api.WriteError(c.w, c.fl, status, msg, c.attempts)
	}
	last := ""
	if len(c.attempts) > 0 {
		last = c.attempts[len(c.attempts)-1].Class
	}
	c.record("", last, status)
}

// headers sets the pool's response headers (SPEC POOL-13b).
func (c *call) headers(h http.Header, member string) {
	h.Set("X-Pool-Member", member)
	if c.cfg.Channel(member) != nil {
		h.Set("X-Pool-Member-Model", c.target(member)) // the member's own model id; the body names the unified one
	}
	h.Set("X-Pool-Attempts", strconv.Itoa(len(c.attempts)+boolToInt(member != "none")))
	if c.session != "" {
		h.Set("X-Pool-Session", c.session)
	}
}

func boolToInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (c *call) record(member, class string, status int) {
	rec := balance.CallRecord{Time: c.startClock, Pool: c.pc.ID, Session: c.session, Model: c.ci.Model,
		Member: member, Failovers: len(c.attempts) - boolToInt(member != "" && len(c.attempts) > 0 && c.attempts[len(c.attempts)-1].Member == member),
		TTFBMs: c.ttfb.Milliseconds(), Class: class, Status: status, API: string(c.fl.API()), Translated: c.translated}
	if member != "" && c.target(member) != c.ci.Model {
		rec.MemberModel = c.target(member)
	}
	if c.end != nil {
		c.end.Record = &rec // written and told by finish
		return
	}
	c.p.state.Record(c.sctx(), rec)
	c.told(rec)
}

// finish ends a call begun with State.Begin: one Finish writes what the
// call did, then the record is told to the observer and the probe.
func (c *call) finish() {
	c.end.Now = c.p.opts.Now()
	c.p.state.Finish(c.sctx(), *c.end)
	if c.end.Record != nil {
		c.told(*c.end.Record)
	}
}

// told passes a finished call's record to the observer and the probe.
func (c *call) told(rec balance.CallRecord) {
	if f := c.p.opts.Observer.Call; f != nil {
		f(rec)
	}
	if c.probe != nil {
		c.probe.set(rec, c.attempts)
	}
}

// transportFailure classifies a RoundTrip or body-read error. The client's
// own cancel is not a member failure (POOL-9). timedOut: the attempt was
// stopped by first_output_timeout_ms; a deadline error of a non-streamed
// call is response_timeout_ms. Both say so instead of "context canceled".
func (c *call) transportFailure(m string, err error, timedOut bool) outcome {
	if c.r.Context().Err() != nil || c.gone.Load() {
		return outcome{canceled: true}
	}
	class, msg := config.ClassNetwork, c.scrub.Scrub(shortErr(err))
	if isClosedUnanswered(err) {
		// The channel closed a kept-alive connection as the request came
		// and the request was not sent again (sendMember: a body beyond the
		// replay budget, POOL-17): not a sign of ill health, so the next
		// member is tried and this one is not cooled (POOL-26).
		return outcome{fail: &neutral.Attempt{Member: m, Class: class, Message: msg}, noCooldown: true}
	}
	switch {
	case timedOut:
		class, msg = config.ClassTimeout, fmt.Sprintf("no output within first_output_timeout_ms (%d ms)", c.pc.FirstOutputTimeout.Milliseconds())
	case errors.Is(err, context.DeadlineExceeded) && !c.ci.Stream:
		class, msg = config.ClassTimeout, fmt.Sprintf("no answer within response_timeout_ms (%d ms)", c.pc.ResponseTimeout.Milliseconds())
	case errors.Is(err, context.DeadlineExceeded):
		class = config.ClassTimeout
	}
	return outcome{fail: &neutral.Attempt{Member: m, Class: class, Message: msg}}
}
