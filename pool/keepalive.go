package pool

import (
	"net/http"
	"sync/atomic"
	"time"
)

// Pre-commit keep-alive (SPEC POOL-7b). A streamed call whose members stay
// silent (long thinking, queueing: only a preamble and pings) would show the
// client nothing until the first visible output, and agents give up on a
// silent socket. After keepalive_hold_ms without a commit the pool sends the
// response head (200, text/event-stream, x-pool-member "pending") and the
// API's own keep-alive (Anthropic `event: ping`, OpenAI `: ping`), then one
// every Options.PingInterval, without committing to a member: the held
// preamble of each attempt is still held, silent failover stays possible
// until the first visible output, and at the commit point only the winning
// attempt's preamble is written. The price: the HTTP status is spent, so a
// failure from then on reaches the client as the API's error event in the
// stream (aggregated error, or a member's own 4xx as an error event with
// that member's status and message), never as an HTTP status.

// kaState is the pre-commit keep-alive state of a streamed call (SPEC
// POOL-7b): early is set once the response head went out before a commit;
// lastKA is the last keep-alive; gone: a keep-alive or ping write failed
// (the client left).
type kaState struct {
	early  bool
	gone   atomic.Bool
	lastKA time.Time
}

// kaEnabled tells whether this call sends keep-alives before the commit.
func (c *call) kaEnabled() bool { return c.ci.Stream && c.pc.KeepaliveHold > 0 }

// kaTimer returns a timer that fires when the next keep-alive is due, or a
// stopped timer when keep-alives are off.
func (c *call) kaTimer() *time.Timer {
	if !c.kaEnabled() {
		t := time.NewTimer(time.Hour)
		t.Stop()
		return t
	}
	return time.NewTimer(c.kaDue())
}

// kaDue is the wait until the next keep-alive: the rest of the hold before
// the head went out, then the ping interval since the last one.
func (c *call) kaDue() time.Duration {
	if !c.early {
		return max(0, c.pc.KeepaliveHold-time.Since(c.start))
	}
	return max(0, c.p.opts.PingInterval-time.Since(c.lastKA))
}

// keepAlive writes the early head (the first time) and one keep-alive
// event, and flushes. false: the client is gone (c.gone is set).
func (c *call) keepAlive() bool {
	if !c.early {
		h := c.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		c.headers(h, "pending")
		c.w.WriteHeader(http.StatusOK)
		c.early = true
	}
	c.lastKA = time.Now()
	if err := c.write(c.fl.PingEvent()); err != nil {
		c.gone.Store(true)
		return false
	}
	return true
}

// tick handles a fired keep-alive timer: one keep-alive, then the timer is
// set for the next. It returns false when the client is gone.
func (c *call) tick(t *time.Timer) bool {
	if !c.keepAlive() {
		return false
	}
	t.Reset(c.kaDue())
	return true
}

// kaTicker writes the keep-alives while an attempt's events are read
// (stream_read.go); a failed write ends the attempt (cancel). nil when
// keep-alives are off.
func (c *call) kaTicker(cancel func()) *ticker {
	if !c.kaEnabled() {
		return nil
	}
	return c.startTicker(c.kaDue(), func() (time.Duration, bool) {
		if !c.keepAlive() {
			cancel()
			return 0, false
		}
		return c.kaDue(), true
	})
}

// roundTrip sends member m the request req (sendMember); while the member has not answered with its head,
// the call's keep-alives go on (a member may queue a request for minutes
// before its head). cancel ends the attempt when the client is gone.
func (c *call) roundTrip(m string, req *http.Request, cancel func()) (*http.Response, error) {
	if !c.kaEnabled() {
		return c.sendMember(m, req)
	}
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := c.sendMember(m, req)
		done <- result{resp, err}
	}()
	t := c.kaTimer()
	defer t.Stop()
	for {
		select {
		case r := <-done:
			return r.resp, r.err
		case <-t.C:
			if !c.tick(t) {
				cancel()
			}
		}
	}
}

// earlyError ends a call whose head already went out with the API's own
// error event (SPEC POOL-7b): a member's pass-through error or the
// aggregated one.
func (c *call) earlyError(status int, msg string) {
	_ = c.write(c.fl.ErrorEvent(status, msg))
}
