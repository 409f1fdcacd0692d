package pool

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// call is one client request served by a pool. It reads like
// httputil.ReverseProxy.ServeHTTP: run picks the members that can serve
// the request, tries them in the balancer's order, fails over, and answers
// with the first usable result or the aggregated error. Each try is an
// attempt (attempt.go), a value that lives for that member only and returns
// its outcome; what the client sees goes through the client stream
// (clientstream.go), which owns the write lock, the commit point, the
// pre-commit keep-alives and the answer. The call keeps what outlives one
// member: the request in each member's API (translation, translated.go),
// what it knows of the members' rate limits (rateState, ratelimit.go), the
// failed attempts and what the one State.Finish writes.
type call struct {
	p     *Pool
	cfg   *config.Config
	scrub config.Scrubber
	pc    *config.PoolConfig
	fl    api.Flavour
	ep    neutral.Endpoint
	ci    *neutral.CallInfo
	um    *config.UnifiedModel
	r     *http.Request

	startClock time.Time // injected clock, for records
	session    string    // short hash
	probe      *probe    // set for a pool's test call (probe.go)
	key        balance.BindKey

	// oneMember: the body did not fit the body budget (budget.go): this
	// call goes to the first member only and the body is not kept.
	oneMember bool
	// boundTo is the member of the live binding the call started on, ""
	// for a first pick (or no binding): a stream it serves needs no
	// commit-point Bind. picked is the first pick in flight the call
	// made or joined: concurrent calls of the session join it already, so
	// a stream it serves needs no commit-point Bind either (its binding is
	// written by Finish; on a shared state two round trips per call).
	boundTo, picked string

	client clientStream
	translation
	rateState

	// attempts are the failed attempts, in order: the aggregated error
	// lists them, the record counts them as failovers.
	attempts []neutral.Attempt
	// end collects what the call writes to State once it is over (one
	// Finish); nil before Begin.
	end *balance.CallEnd
}

// run serves the call (SPEC POOL-4, POOL-23): it picks the eligible members,
// tries them in the balancer's order (tryMember: an attempt, once more on the
// same member where the outcome allows it) and answers with the first usable
// result or the aggregated error. A body beyond the replay budget goes to one
// member only. No member is called while every one is rate-limited. One Begin
// before the attempts and one Finish after them: on a shared state, two round
// trips per call.
func (c *call) run() {
	c.identify()
	eligible, skipped := c.eligibleMembers()
	if c.probe != nil && c.probe.member != "" {
		eligible, skipped = onlyMember(eligible, skipped, c.pc, c.probe.member)
	}
	if len(eligible) == 0 {
		c.client.poolError(http.StatusBadRequest, "no member of pool "+c.pc.ID+" can serve this request ("+strings.Join(skipped, "; ")+")",
			c.head("none"), 0, nil)
		c.record("", config.ClassBadRequest, http.StatusBadRequest)
		return
	}
	order := c.begin(eligible)
	defer c.finish()
	order, hold := c.rateLimitOrder(order)
	if len(order) == 0 {
		c.allRateLimited() // no member may be called now
		return
	}
	if hold > 0 && !c.waitOut(order[0], hold) {
		c.record(order[0], "canceled", 0)
		return
	}
	for _, m := range order {
		o := c.tryMember(m)
		if o.canceled {
			c.p.log.Info("pool call canceled by client", "pool", c.pc.ID, "member", m, "session", c.session)
			c.record(m, "canceled", 0)
			return
		}
		if o.fail != nil {
			c.failed(m, o)
		}
		if o.served && c.ep.Kind == neutral.EpGenerate {
			c.served(m, o)
		}
		if o.done {
			c.done(m, o)
			return
		}
		if c.oneMember {
			break // a body beyond the replay budget is sent once
		}
	}
	c.aggregate()
}

// identify finds the call's session (SPEC POOL-5): its hash for headers,
// logs and records, and the binding key. A test call is balanced
// like a new session but records no binding, so it does not skew the
// bound-session counts.
func (c *call) identify() {
	sessionID, _ := balance.SessionIdentity(c.r.Header, c.ci)
	c.session = balance.SessionHash(sessionID)
	if c.probe != nil {
		sessionID, c.session = "", testSession
	}
	c.key = balance.BindKey{Pool: c.pc.ID, Session: sessionID, Model: c.ci.Model}
}

// begin starts the call in State (the cooldowns, the binding or the first
// pick, the member holding the request's Responses state) and returns the
// order of attempts: the primary first, then hot members, then cooling ones
// by earliest recovery.
func (c *call) begin(eligible []string) []string {
	start := balance.CallStart{Pool: c.pc, Key: c.key, Eligible: eligible, Targets: make([]string, len(eligible)), Now: c.p.opts.Now()}
	for i, m := range eligible {
		start.Targets[i] = c.target(m)
	}
	start.Owner = c.stateOwnerKey()
	begun := c.p.state.Begin(c.sctx(), start)
	cds := begun.Cooldowns
	until := func(m string) (time.Time, bool) { return balance.Cooling(cds, m, c.target(m)) }
	hot := func(m string) bool { _, cooling := until(m); return !cooling }
	primary := begun.Member
	if owner := begun.Owner; owner != "" && hot(owner) && slices.Contains(eligible, owner) {
		primary = owner // the member that holds the request's previous_response_id
	}
	if c.pc.Strategy == config.StrategySticky && c.key.Session != "" {
		if begun.InFlight {
			c.picked = begun.Member
		} else {
			c.boundTo = begun.Member // a live binding: Acquire touched it
		}
	}
	c.end = &balance.CallEnd{Pool: c.pc, Key: c.key, InFlight: begun.InFlight, Session: c.session}
	c.rateState = rateState{eligible: eligible, cds: cds}
	return balance.AttemptOrder(eligible, primary, until)
}

// tryMember runs member m's attempt, and runs it once more on the same member
// when the outcome allows it: m refused the request's encrypted content or
// reasoning signatures (the next attempt leaves them out), or m is the
// session's bound member and rate-limited for a short time, waited out in the
// call so the session stays.
func (c *call) tryMember(m string) outcome {
	o := c.attempt(m)
	if o.retry && !o.canceled && !c.oneMember {
		c.failed(m, o)
		o = c.attempt(m)
	}
	if o.fail != nil && o.fail.Class == config.ClassRateLimit && !o.done && !o.canceled && !c.oneMember && c.mayWait(m, o.explicit) {
		c.failed(m, o)
		if !c.waitOut(m, o.explicit) {
			return outcome{canceled: true}
		}
		o = c.attempt(m)
	}
	return o
}

// served notes that member m answered the call (the commit point or a
// complete answer): the binding, the usage and the state keys Finish
// writes (SPEC POOL-8), and the usage for the observer.
func (c *call) served(m string, o outcome) {
	c.end.Served, c.end.Succeeded, c.end.Usage, c.end.Owned = m, o.fail == nil, o.u, c.owned(o)
	if f := c.p.opts.Observer.Usage; f != nil {
		f(c.pc.ID, m, o.u)
	}
}

// done records a call that member m ended with a response.
func (c *call) done(m string, o outcome) {
	class, status := "", 200
	if o.fail != nil {
		class, status = o.fail.Class, o.fail.Status
	}
	c.record(m, class, status)
	c.p.log.Debug("pool call done", "pool", c.pc.ID, "member", m, "attempts", len(c.attempts)+boolToInt(o.fail == nil),
		"ttfb_ms", c.client.ttfb.Milliseconds(), "class", class, "session", c.session)
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

// sctx is the context of a state call: the request's values without its
// cancellation (a call's bookkeeping after the client left must still
// land); the State bounds its own wait.
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
		// proxy logs only at debug for the pool's calls.
		attrs = append(attrs, "reason", a.Message)
	}
	c.p.log.Warn("pool member failed", attrs...)
}

// aggregate answers when every member failed before the commit point
// (SPEC POOL-11): one error listing each attempt; the status of
// the most transient failure (429 > 529/503 > 5xx > others); when every
// member is cooling, Retry-After.
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
		part := a.Member + ": " + a.Class
		if a.Status != 0 {
			part += fmt.Sprintf(" (%d)", a.Status) // none when no answer came: "network", not "network (0)"
		}
		parts = append(parts, part)
	}
	msg := fmt.Sprintf("pool %s: all %d attempted members failed: %s", c.pc.ID, len(c.attempts), strings.Join(parts, "; "))
	if c.oneMember {
		msg += fmt.Sprintf(" (the request body is beyond the pool's %d MiB replay budget, so it was sent to one member only)", c.p.opts.BodyBudget>>20)
	}
	retryAfter, _ := c.earliestRecovery() // every member cooling: when to come back
	c.client.poolError(status, msg, c.head("none"), retryAfter, c.attempts)
	last := ""
	if len(c.attempts) > 0 {
		last = c.attempts[len(c.attempts)-1].Class
	}
	c.record("", last, status)
}

// head is the pool's response headers for an answer of member (SPEC
// POOL-13b; "pending" for the early head, "none" for the pool's own error).
func (c *call) head(member string) poolHead {
	ph := poolHead{member: member, session: c.session, attempts: len(c.attempts) + boolToInt(member != "none")}
	if c.cfg.Channel(member) != nil {
		ph.memberModel, ph.named = c.target(member), true // the member's own model id; the body names the unified one
	}
	return ph
}

func boolToInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// record writes the call's record: through Finish when the
// call began in State, else at once.
func (c *call) record(member, class string, status int) {
	rec := balance.CallRecord{Time: c.startClock, Pool: c.pc.ID, Session: c.session, Model: c.ci.Model,
		Member: member, Failovers: len(c.attempts) - boolToInt(member != "" && len(c.attempts) > 0 && c.attempts[len(c.attempts)-1].Member == member),
		TTFBMs: c.client.ttfb.Milliseconds(), Class: class, Status: status, API: string(c.fl.API()), Translated: c.client.translated}
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
