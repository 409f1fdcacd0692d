package pool

import (
	"net/http"
	"sync/atomic"
	"time"
)

// Pre-commit keep-alive. A streamed call whose members stay
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

// keepAlive is the client stream's part before the commit point.
type keepAlive struct {
	// hold is keepalive_hold_ms for a streamed call, 0 for one that gets
	// no keep-alives (not streamed, or turned off); every is the wait
	// between keep-alives and between pings after the commit point.
	hold, every time.Duration
	early       bool      // the early head went out (under mu while a ticker runs)
	last        time.Time // the last keep-alive (under mu)
	// gone: a keep-alive or ping write failed, the client left. Set on a
	// ticker's goroutine; the attempt reads it to tell a cancel from a
	// member's failure.
	gone atomic.Bool
}

// keepAlives writes the keep-alives while the call waits before a commit
// point: for a member's head, its first visible event, or a rate limit's
// end. pending is the early head's pool fields. gone runs (on the ticker's
// goroutine) when a write fails: it ends the wait. nil (a stopped ticker)
// when the call gets no keep-alives. The ticker must be stopped before the
// serving goroutine writes.
func (s *clientStream) keepAlives(pending poolHead, gone func()) *ticker {
	if s.hold <= 0 {
		return nil
	}
	return s.startTicker(s.due(), func() (time.Duration, bool) {
		if !s.keepAliveOnce(pending) {
			gone()
			return 0, false
		}
		return s.due(), true
	})
}

// due is the wait until the next keep-alive: the rest of the hold before
// the head went out, then the ping interval since the last one.
func (s *clientStream) due() time.Duration {
	if !s.early {
		return max(0, s.hold-time.Since(s.start))
	}
	return max(0, s.every-time.Since(s.last))
}

// keepAliveOnce writes the early head (the first time) and one keep-alive
// event, and flushes. false: the client is gone (gone is set).
func (s *clientStream) keepAliveOnce(pending poolHead) bool {
	if !s.early {
		h := s.w.Header()
		setEventStream(h)
		pending.set(h)
		s.w.WriteHeader(http.StatusOK)
		s.early = true
	}
	s.last = time.Now()
	if err := s.write(s.flavour.PingEvent()); err != nil {
		s.gone.Store(true)
		return false
	}
	return true
}
