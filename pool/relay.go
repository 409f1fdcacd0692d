package pool

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// relay forwards the rest of a committed stream. An event
// is written as it arrives; it is flushed unless the next one arrived with
// it (EventBuffered), whose flush then carries both: one write for what
// came in one read, never a wait for more.
func (a *attempt) relay(u *memberStream, w neutral.StreamWatcher) outcome {
	c := a.c
	every := a.client.every
	ping := a.client.pings(u.cancel)
	defer ping.stop()
	// The idle timer measures the member's silence: while an event is
	// being written it does not fire (a client that reads slowly holds up
	// the write, and the member's stream waits in its socket), and the
	// write's end re-arms it.
	var idled, writing atomic.Bool
	var idleT *lazyTimer
	if idle := c.pc.StreamIdleTimeout; idle > 0 {
		idleT = afterFuncLazy(idle, func(l *lazyTimer) {
			if writing.Load() {
				l.again(idle) // the write's end pushes it on
				return
			}
			idled.Store(true)
			u.cancel()
		})
		defer idleT.stop()
	}
	var ev wirefmt.SSEEvent // one per stream, not one per event: &ev escapes
	if a.conv == nil {
		// Passed through: each event is observed, scrubbed and written
		// before the next is read, so it may stay in the reader's scratch
		// space (no allocation per event; the translator may keep parts).
		u.rd.Share()
	}
	for {
		var err error
		if ev, err = u.next(); err != nil {
			ping.stop()
			return a.relayReadEnd(w, err, idled.Load())
		}
		obs := w.Observe(&ev, true)
		raw, err := a.out(&ev) // scrubbed: an upstream may echo its key anywhere
		if err != nil {
			return a.relayFail(w, config.ClassServer, http.StatusBadGateway, c.scrub.Scrub(neutral.Clip("upstream event not translatable: "+err.Error())))
		}
		last := obs.Verdict == neutral.VEnd || obs.Verdict == neutral.VError
		writing.Store(true)
		err = a.client.send(raw, last || !u.rd.EventBuffered())
		writing.Store(false)
		if err != nil {
			return outcome{canceled: true, served: true}
		}
		now := monoNow() // one clock read moves both deadlines
		ping.reset(now, every)
		if idleT != nil {
			idleT.pushFrom(now, c.pc.StreamIdleTimeout)
		}
		switch obs.Verdict {
		case neutral.VEnd:
			return outcome{done: true, served: true, u: w.Usage()}
		case neutral.VError:
			class := balance.ClassifyStatus(obs.ErrStatus, obs.ErrType, obs.ErrMsg)
			if a.conv == nil {
				ping.stop()
				a.forwardTrailer(u) // translated: the client's error event was the end
			}
			return outcome{done: true, served: true, u: w.Usage(),
				fail: &neutral.Attempt{Member: a.m, Class: class, Status: obs.ErrStatus, Message: c.scrub.Scrub(neutral.Clip(obs.ErrMsg))}}
		}
	}
}

// relayReadEnd is the outcome of a committed stream whose read ended with
// err: the client gone is a cancel, the member's silence past
// stream_idle_timeout_ms a timeout, a clean end the protocol's end (the
// converter's, translated), anything else a network failure; a failure
// reaches the client as the protocol's error event.
func (a *attempt) relayReadEnd(w neutral.StreamWatcher, err error, idled bool) outcome {
	c := a.c
	switch {
	case c.r.Context().Err() != nil || a.client.gone.Load():
		return outcome{canceled: true, served: true}
	case idled:
		return a.relayFail(w, config.ClassTimeout, http.StatusGatewayTimeout, fmt.Sprintf("upstream stream idle for %v", c.pc.StreamIdleTimeout))
	}
	if ce, clean := w.(neutral.CleanEnder); clean && ce.EndedCleanly() && err == io.EOF {
		var end []byte
		if a.conv != nil {
			if b, err := a.conv.End(); err == nil {
				end = c.scrub.ScrubBytes(b)
			}
		}
		_ = a.client.send(end, true)
		return outcome{done: true, served: true, u: w.Usage()}
	}
	msg := "upstream stream ended before its end event"
	if err != io.EOF && err != io.ErrUnexpectedEOF {
		msg = "upstream stream failed: " + shortErr(err)
	}
	return a.relayFail(w, config.ClassNetwork, http.StatusBadGateway, c.scrub.Scrub(msg))
}

// relayFail ends a committed stream with the protocol's error event (the
// member's API's, or the converter's when translated) and reports the
// failure as the member's.
func (a *attempt) relayFail(w neutral.StreamWatcher, class string, status int, msg string) outcome {
	ev := a.c.fl.ErrorEvent(status, msg)
	if ee, ok := w.(neutral.ErrorEventer); ok && a.conv == nil {
		ev = ee.ErrorEvent(status, msg)
	}
	if a.conv != nil {
		ev = a.conv.Error(neutral.Error{Status: status, Message: msg})
	}
	_ = a.client.send(ev, true)
	return outcome{done: true, served: true, u: w.Usage(), fail: &neutral.Attempt{Member: a.m, Class: class, Status: status, Message: msg}}
}

// reasonWait bounds the wait for an error event that gives the reason of a
// failure event that had none.
const reasonWait = time.Second

// nextError returns the next event's error observation when the stream's
// next event (within reasonWait) is an error event with a message.
func nextError(u *memberStream, w neutral.StreamWatcher) (neutral.Observation, bool) {
	ev, err := u.nextWithin(reasonWait)
	if err != nil {
		return neutral.Observation{}, false
	}
	if o := w.Observe(&ev, false); o.Verdict == neutral.VError && o.ErrMsg != "" {
		return o, true
	}
	return neutral.Observation{}, false
}

// endDrainWait bounds the wait for a body's end after its protocol's end
// event (the chunked terminator, or EOF): memberStream.drainEnd.
const endDrainWait = time.Second

// readerExitWait bounds the wait for a stream reader to notice its canceled
// context before the body is closed under it.
const readerExitWait = 2 * time.Second

// trailerWait bounds how long the pool keeps forwarding after an upstream's
// own error or failure event, waiting for the stream to close.
const trailerWait = 5 * time.Second

// forwardTrailer passes on what an upstream sends after its own error or
// failure event until the stream closes (at most trailerWait): the
// Responses API sends the reason as an "error" event after
// "response.failed" (SPEC POOL-19). Nothing is added: the upstream has
// ended the stream in its protocol's own way.
func (a *attempt) forwardTrailer(u *memberStream) {
	t := time.AfterFunc(trailerWait, u.cancel) // the client gone cancels the read too
	defer t.Stop()
	for {
		ev, err := u.next()
		if err != nil {
			return
		}
		if a.client.send(a.c.scrub.ScrubBytes(ev.Raw), true) != nil {
			return
		}
	}
}
