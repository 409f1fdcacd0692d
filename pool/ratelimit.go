package pool

import (
	"context"
	"net/http"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// rateState is what a call knows of its members' recoveries: the eligible
// members, the running cooldowns when the call began (cds, as State.Begin
// answered them), the deadlines its own failures set (recovery), and whether it
// already waited for a rate-limited bound member (once per call).
type rateState struct {
	eligible []string
	cds      map[string]balance.Cooldown
	recovery map[string]time.Time
	waited   bool
}

// rateLimited reports whether member m was cooling for a rate limit when
// the call began, and until when.
func (c *call) rateLimited(m string) (time.Time, bool) {
	cd, ok := c.cds[m]
	if !ok || cd.Class != config.ClassRateLimit || !cd.Until.After(c.p.opts.Now()) {
		return time.Time{}, false
	}
	return cd.Until, true
}

// rateLimitOrder adjusts the attempt order for members cooling for a rate
// limit when the call began. A streamed call whose bound
// member is one of them, for a short time (mayWait), waits for it (hold)
// and tries it first. Else, when every eligible member is one of them, no
// member is called (out is empty): each said when it takes calls again,
// and a call before then, as failing open would make, only earns
// another 429 from each; the client gets the pool's own 429 with the
// earliest recovery instead. Otherwise the order stands (members
// cooling for other reasons, the pool's own guesses, are failed open onto).
func (c *call) rateLimitOrder(order []string) (out []string, hold time.Duration) {
	all := true
	for _, m := range order {
		until, limited := c.rateLimited(m)
		if !limited {
			all = false
			continue
		}
		if d := until.Sub(c.p.opts.Now()); c.mayWait(m, d) {
			hold = d
		}
	}
	if hold > 0 {
		out = append(out, c.boundTo)
		for _, m := range order {
			if _, limited := c.rateLimited(m); m != c.boundTo && !(all && limited) {
				out = append(out, m)
			}
		}
		return out, hold
	}
	if all {
		return nil, 0
	}
	return order, 0
}

// mayWait reports whether a streamed call waits d for member m, the session's
// bound member, rate-limited for that long, instead of moving the session to
// another member and paying a cold prefill there: d is known (a server-given
// wait) and at most the pool's rate_limit_wait_ms, the client streams
// (keep-alives cover the wait), and the call has not waited yet.
func (c *call) mayWait(m string, d time.Duration) bool {
	return c.ci.Stream && !c.waited && d > 0 && d <= c.pc.RateLimitWait && m != "" && m == c.boundTo
}

// waitOut holds the call for d, the call's keep-alives going on
// meanwhile (after keepalive_hold_ms the early head and the API's own
// pings). false: the client left.
func (c *call) waitOut(m string, d time.Duration) bool {
	c.waited = true
	c.p.log.Info("pool call waits for its rate-limited bound member", "pool", c.pc.ID, "member", m,
		"wait_ms", d.Milliseconds(), "session", c.session)
	ctx, cancel := context.WithCancel(c.r.Context())
	defer cancel()
	ka := c.client.keepAlives(c.head("pending"), cancel)
	defer ka.stop()
	wait := time.NewTimer(d)
	defer wait.Stop()
	select {
	case <-wait.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// recovered notes that member m cools until t after a failure in this call.
func (c *call) recovered(m string, t time.Time) {
	if t.IsZero() {
		return
	}
	if c.recovery == nil {
		c.recovery = map[string]time.Time{}
	}
	c.recovery[m] = t
}

// earliestRecovery is the wait until the first eligible member recovers,
// when every eligible member is cooling now (by the cooldowns the call
// began with and those its failures set); ok false when one is not.
func (c *call) earliestRecovery() (d time.Duration, ok bool) {
	now := c.p.opts.Now()
	var first time.Time
	for _, m := range c.eligible {
		t := c.recovery[m]
		if u, cooling := balance.Cooling(c.cds, m, c.target(m)); cooling && u.After(t) {
			t = u
		}
		if !t.After(now) {
			return 0, false
		}
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	if first.IsZero() {
		return 0, false
	}
	return first.Sub(now), true
}

// allRateLimited answers a call none of whose members may be called now:
// each was cooling for a rate limit when the call began.
// The answer is the pool's own 429 with Retry-After; no member is called.
func (c *call) allRateLimited() {
	msg := "pool " + c.pc.ID + ": every member is rate-limited"
	d, ok := c.earliestRecovery()
	if ok {
		msg += "; the first recovers in " + wholeSeconds(d) + " s"
	}
	c.client.poolError(http.StatusTooManyRequests, msg, c.head("none"), d, nil)
	c.record("", config.ClassRateLimit, http.StatusTooManyRequests)
}
