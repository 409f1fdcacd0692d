package pool

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// maxPreamble caps the events held before the commit point (SPEC POOL-7).
// A preamble that grows past it is committed as is: the client gets its
// bytes, and the attempt can no longer fail over.
const maxPreamble = 256 << 10

// streamAttempt runs one streamed attempt (SPEC POOL-7):
//
//   - before the commit point nothing of the member reaches the client
//     (after keepalive_hold_ms only the pool's early head and keep-alives,
//     POOL-7b, keepalive.go): preamble events are held; an HTTP error, connect failure, `event: error`, early EOF,
//     clean end with no content, or no visible event within
//     first_output_timeout_ms is a failure and the caller tries the next
//     member;
//   - at the first visible event the response head, the held preamble and
//     the event are written and flushed (the commit point); the binding is
//     recorded now (POOL-5, POOL-8);
//   - after it every event is written and flushed as it arrives; a quiet
//     stream gets our ping; an upstream failure becomes the protocol's error
//     event and the stream ends — never a fake clean end, never a second
//     member's output.
//
// The pre-commit loop is one function on purpose: every exit before the
// commit point must stop the same first-output timer and keep-alive ticker
// and close the same member stream, and the held preamble is written
// exactly once at the commit. openStream gets the member's event stream
// before it; relay takes over after the commit point. The events are read
// on this goroutine (stream_read.go).
func (c *call) streamAttempt(m string, key balance.BindKey) outcome {
	actx, cancel := context.WithCancel(c.r.Context())
	defer cancel()
	var timedOut atomic.Bool
	firstOutput := time.AfterFunc(c.pc.FirstOutputTimeout, func() { timedOut.Store(true); cancel() })
	defer firstOutput.Stop()
	resp, src, o, ok := c.openStream(actx, cancel, m, &timedOut)
	if !ok {
		return o
	}

	u := newMemberStream(actx, cancel, src, resp.Body)
	clean := false // the stream reached its protocol's end
	defer func() {
		if clean {
			u.drainEnd()
		}
		u.close()
	}()

	w := c.rt.fl.NewWatcher()
	if c.rt.translate {
		c.conv = api.NewStream(c.rt.to, c.rt.from, c.target(m), c.customTools()...) // POOL-21: the member's model, as passed through
	}
	var held bytes.Buffer
	ka := c.kaTicker(cancel)
	defer ka.stop()
	var ev wirefmt.SSEEvent // one per attempt, not one per event: &ev escapes
	for {
		var err error
		if ev, err = u.next(); err != nil {
			return c.preCommitReadFailure(m, resp.StatusCode, err, timedOut.Load())
		}
		obs := w.Observe(&ev, false)
		out, err := c.out(&ev)
		if err != nil {
			return outcome{fail: &neutral.Attempt{Member: m, Class: config.ClassServer, Status: resp.StatusCode,
				Message: c.scrub.Scrub(neutral.Clip("stream not translatable: " + err.Error()))}}
		}
		switch obs.Verdict {
		case neutral.VPreamble:
			held.Write(out)
			if held.Len() <= maxPreamble {
				continue
			}
		case neutral.VEnd:
			return outcome{fail: &neutral.Attempt{Member: m, Class: config.ClassEmpty, Status: resp.StatusCode, Message: "stream ended with no content"}}
		case neutral.VError:
			a := c.streamError(m, u, w, obs)
			if a.Class != config.ClassBadRequest {
				return outcome{fail: a}
			}
			// The request is wrong: pass the stream's answer through as is.
			held.Write(out)
			ka.stop()
			if !firstOutput.Stop() {
				return c.transportFailure(m, context.DeadlineExceeded, true)
			}
			if err := c.commit(m, resp, held.Bytes()); err != nil {
				return outcome{canceled: true}
			}
			return outcome{done: true, fail: a}
		}
		// Commit point: a visible event (or a preamble past its cap). The
		// keep-alives stop first: from here only this goroutine and the
		// relay's pings write.
		ka.stop()
		if !firstOutput.Stop() {
			return c.transportFailure(m, context.DeadlineExceeded, true)
		}
		if ev.Raw != nil && obs.Verdict == neutral.VVisible {
			held.Write(out)
		}
		var o outcome
		o, clean = c.commitAndRelay(m, key, resp, u, w, held.Bytes())
		return o
	}
}

// commitAndRelay is a streamed attempt from its commit point on: the
// binding, the head and held bytes, then the relay of the rest (SPEC
// POOL-7). clean: the stream reached its protocol's end.
func (c *call) commitAndRelay(m string, key balance.BindKey, resp *http.Response, u *memberStream, w neutral.StreamWatcher, held []byte) (o outcome, clean bool) {
	if m != c.boundTo && m != c.picked {
		// A failover off the binding or off the first pick: joiners see
		// it now, not when the stream ends (POOL-5, POOL-8).
		c.p.state.Bind(c.sctx(), c.pc, key, m, c.p.opts.Now())
	}
	if err := c.commit(m, resp, held); err != nil {
		return outcome{canceled: true, served: true}, false
	}
	o = c.relay(m, u, w)
	clean = o.done && o.fail == nil && !o.canceled
	if sw, ok := w.(neutral.StateWatcher); ok {
		o.state = sw.StateKeys()
	}
	return o, clean
}

// openStream sends member m the streamed request and returns its answer
// and the reader of its event stream; ok false: the attempt ended with o
// (a request that cannot be built, a transport failure, an error status,
// or an answer that is not a readable event stream). timedOut tells
// whether first_output_timeout_ms stopped the attempt.
func (c *call) openStream(actx context.Context, cancel context.CancelFunc, m string, timedOut *atomic.Bool) (resp *http.Response, src io.Reader, o outcome, ok bool) {
	req, err := c.memberRequest(actx, c.cfg.Channel(m))
	if err != nil {
		return nil, nil, outcome{fail: &neutral.Attempt{Member: m, Class: config.ClassBadRequest, Message: err.Error()}, done: true}, false
	}
	resp, err = c.roundTrip(m, req, cancel)
	if err != nil {
		return nil, nil, c.transportFailure(m, err, timedOut.Load()), false
	}
	if !wirefmt.DecodeResponse(resp) && resp.StatusCode/100 == 2 {
		drain(resp.Body)
		return nil, nil, outcome{fail: &neutral.Attempt{Member: m, Class: config.ClassServer, Status: resp.StatusCode,
			Message: "stream uses a Content-Encoding the pool cannot read (" + c.scrub.Scrub(neutral.Clip(resp.Header.Get("Content-Encoding"))) + ")"}}, false
	}
	if resp.StatusCode/100 != 2 {
		defer drain(resp.Body)
		body, err := wirefmt.ReadBody(resp.Body, MaxRequestBody)
		if err != nil {
			return nil, nil, c.transportFailure(m, err, timedOut.Load()), false
		}
		return nil, nil, c.errorAnswer(m, resp, body), false
	}
	if wirefmt.IsEventStream(resp.Header) {
		return resp, resp.Body, outcome{}, true
	}
	// No (or another) Content-Type: an event stream is recognised by its
	// first line; a captive portal's HTML or a JSON document is not the
	// answer a streaming client can read.
	br := bufio.NewReaderSize(resp.Body, 32<<10)
	if isStream, err := wirefmt.SniffEventStream(br); err != nil {
		drain(resp.Body)
		return nil, nil, c.transportFailure(m, err, timedOut.Load()), false
	} else if !isStream {
		drain(resp.Body)
		ct := resp.Header.Get("Content-Type")
		if ct == "" {
			ct = "none"
		}
		return nil, nil, outcome{fail: &neutral.Attempt{Member: m, Class: config.ClassServer, Status: resp.StatusCode,
			Message: "answer to a streaming request is not an event stream (Content-Type " + c.scrub.Scrub(neutral.Clip(ct)) + ")"}}, false
	}
	return resp, br, outcome{}, true
}

// preCommitReadFailure is the outcome of a read error before the commit
// point: the client gone is a cancel (POOL-9), an early end of the stream
// a network failure, anything else a transport failure.
func (c *call) preCommitReadFailure(m string, status int, err error, timedOut bool) outcome {
	if (err == io.EOF || err == io.ErrUnexpectedEOF) && !timedOut && !c.gone.Load() {
		if c.r.Context().Err() != nil {
			return outcome{canceled: true}
		}
		return outcome{fail: &neutral.Attempt{Member: m, Class: config.ClassNetwork, Status: status, Message: "stream closed before the first output"}}
	}
	return c.transportFailure(m, err, timedOut)
}

// streamError is the failure an error event before the commit point
// describes, classified (SPEC POOL-10); a failure event without a reason
// takes the one of the error event that may follow it (Responses: an
// "error" event after a response.failed without one, SPEC POOL-19).
func (c *call) streamError(m string, u *memberStream, w neutral.StreamWatcher, obs neutral.Observation) *neutral.Attempt {
	if obs.ErrMsg == "" || obs.ErrMsg == "response failed" {
		if more, ok := nextError(u, w); ok {
			obs = more
		}
	}
	class := balance.ClassifyStatus(obs.ErrStatus, obs.ErrType, obs.ErrMsg)
	return &neutral.Attempt{Member: m, Class: class, Status: obs.ErrStatus, Message: c.scrub.Scrub(neutral.Clip(obs.ErrMsg))}
}

// commit writes the response head and the held bytes, and flushes. After
// an early head (POOL-7b) only the held bytes are written: the client has
// seen keep-alives, and now this attempt's preamble and first output.
func (c *call) commit(m string, resp *http.Response, held []byte) error {
	if c.early {
		c.ttfb = time.Since(c.start)
		c.translated = c.rt.translate
		return c.write(held)
	}
	h := c.w.Header()
	copyResponseHeaders(h, resp.Header, c.scrub)
	h.Del("Content-Encoding")
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	c.headers(h, m)
	c.ttfb = time.Since(c.start)
	c.translated = c.rt.translate
	c.w.WriteHeader(resp.StatusCode)
	return c.write(held)
}

// write writes b to the client and flushes (SPEC POOL-7: events are
// flushed as they arrive). While a ticker may write (keep-alives, pings)
// it runs under c.wmu: the ticker's own callback, or send.
func (c *clientStream) write(b []byte) error {
	if _, err := c.w.Write(b); err != nil {
		return err
	}
	return c.flush()
}

// flush flushes what was written. The ResponseController is made once per
// call, not per event.
func (c *clientStream) flush() error {
	if c.rc == nil {
		c.rc = http.NewResponseController(c.w)
	}
	c.unflushed = false
	return c.rc.Flush()
}
