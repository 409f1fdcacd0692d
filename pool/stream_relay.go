package pool

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/pool/translate"
	"github.com/dual-proxy/dual-proxy/pool/wire"
)

// relay forwards the rest of a committed stream (SPEC POOL-7).
func (c *call) relay(m string, events <-chan sseResult, w wire.StreamWatcher) outcome {
	ping := time.NewTimer(c.p.opts.PingInterval)
	defer ping.Stop()
	var idle <-chan time.Time
	var idleT *time.Timer
	if c.pc.StreamIdleTimeout > 0 {
		idleT = time.NewTimer(c.pc.StreamIdleTimeout)
		defer idleT.Stop()
		idle = idleT.C
	}
	fail := func(class string, status int, msg string) outcome {
		ev := c.fl.ErrorEvent(status, msg)
		if ee, ok := w.(wire.ErrorEventer); ok && c.conv == nil {
			ev = ee.ErrorEvent(status, msg)
		}
		if c.conv != nil {
			ev = c.conv.Error(translate.Error{Status: status, Message: msg})
		}
		_ = c.write(ev)
		return outcome{done: true, served: true, u: w.Usage(), fail: &wire.Attempt{Member: m, Class: class, Status: status, Message: msg}}
	}
	for {
		select {
		case res, ok := <-events:
			if !ok || res.err != nil {
				if c.r.Context().Err() != nil {
					return outcome{canceled: true, served: true}
				}
				if ce, clean := w.(wire.CleanEnder); clean && ce.EndedCleanly() && (!ok || res.err == io.EOF) {
					if c.conv != nil {
						if end, err := c.conv.End(); err == nil {
							_ = c.write(c.scrub.ScrubBytes(end))
						}
					}
					return outcome{done: true, served: true, u: w.Usage()}
				}
				msg := "upstream stream ended before its end event"
				if ok && res.err != io.EOF && res.err != io.ErrUnexpectedEOF {
					msg = "upstream stream failed: " + shortErr(res.err)
				}
				return fail(config.ClassNetwork, http.StatusBadGateway, c.scrub.Scrub(msg))
			}
			obs := w.Observe(&res.ev, true)
			raw, err := c.out(&res.ev) // scrubbed: an upstream may echo its key anywhere (POOL-15)
			if err != nil {
				return fail(config.ClassServer, http.StatusBadGateway, c.scrub.Scrub(wire.Clip("upstream event not translatable: "+err.Error())))
			}
			if err := c.write(raw); err != nil {
				return outcome{canceled: true, served: true}
			}
			ping.Reset(c.p.opts.PingInterval)
			if idleT != nil {
				idleT.Reset(c.pc.StreamIdleTimeout)
			}
			switch obs.Verdict {
			case wire.VEnd:
				return outcome{done: true, served: true, u: w.Usage()}
			case wire.VError:
				class := balance.ClassifyStatus(obs.ErrStatus, obs.ErrType, obs.ErrMsg)
				if c.conv == nil {
					c.forwardTrailer(events) // translated: the client's error event was the end
				}
				return outcome{done: true, served: true, u: w.Usage(),
					fail: &wire.Attempt{Member: m, Class: class, Status: obs.ErrStatus, Message: c.scrub.Scrub(wire.Clip(obs.ErrMsg))}}
			}
		case <-ping.C:
			if err := c.write(c.fl.PingEvent()); err != nil {
				return outcome{canceled: true, served: true}
			}
			ping.Reset(c.p.opts.PingInterval)
		case <-idle:
			return fail(config.ClassTimeout, http.StatusGatewayTimeout, fmt.Sprintf("upstream stream idle for %v", c.pc.StreamIdleTimeout))
		case <-c.r.Context().Done():
			return outcome{canceled: true, served: true}
		}
	}
}

// reasonWait bounds the wait for an error event that gives the reason of a
// failure event that had none.
const reasonWait = time.Second

// nextError returns the next event's error observation when the stream's
// next event (within reasonWait) is an error event with a message.
func nextError(events <-chan sseResult, w wire.StreamWatcher) (wire.Observation, bool) {
	t := time.NewTimer(reasonWait)
	defer t.Stop()
	select {
	case res, ok := <-events:
		if !ok || res.err != nil {
			return wire.Observation{}, false
		}
		if o := w.Observe(&res.ev, false); o.Verdict == wire.VError && o.ErrMsg != "" {
			return o, true
		}
	case <-t.C:
	}
	return wire.Observation{}, false
}

// endDrainWait bounds the wait for a body's end after its protocol's end
// event (the chunked terminator, or EOF).
const endDrainWait = time.Second

// drainEnd waits at most endDrainWait for the stream reader to reach the
// body's end (events closed), discarding anything after the end event.
func drainEnd(events <-chan sseResult) {
	t := time.NewTimer(endDrainWait)
	defer t.Stop()
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-t.C:
			return
		}
	}
}

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
func (c *call) forwardTrailer(events <-chan sseResult) {
	t := time.NewTimer(trailerWait)
	defer t.Stop()
	for {
		select {
		case res, ok := <-events:
			if !ok || res.err != nil {
				return
			}
			if c.write(c.scrub.ScrubBytes(res.ev.Raw)) != nil {
				return
			}
		case <-t.C:
			return
		case <-c.r.Context().Done():
			return
		}
	}
}
