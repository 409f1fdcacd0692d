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

// maxPreamble caps the events held before the commit point.
// A preamble that grows past it is committed as is: the client gets its
// bytes, and the attempt can no longer fail over.
const maxPreamble = 256 << 10

// stream runs one streamed attempt (SPEC POOL-7b):
//
//   - before the commit point nothing of the member reaches the client
//     (after keepalive_hold_ms only the pool's early head and keep-alives,
//     keepalive.go): preamble events are held; an HTTP error,
//     connect failure, `event: error`, early EOF, clean end with no
//     content, or no visible event within first_output_timeout_ms is a
//     failure and the call tries the next member;
//   - at the first visible event the response head, the held preamble and
//     the event are written and flushed (the commit point); the binding is
//     recorded now;
//   - after it every event is written and flushed as it arrives (relay.go);
//     a quiet stream gets our ping; an upstream failure becomes the
//     protocol's error event and the stream ends — never a fake clean end,
//     never a second member's output.
//
// The pre-commit loop is one function on purpose: every exit before the
// commit point must stop the same first-output timer and keep-alive ticker
// and close the same member stream, and the held preamble is written
// exactly once at the commit. open gets the member's event stream before
// it; relay takes over after the commit point. The events are read on
// this goroutine (memberstream.go).
func (a *attempt) stream() outcome {
	c := a.c
	actx, cancel := context.WithCancel(c.r.Context())
	defer cancel()
	var timedOut atomic.Bool
	firstOutput := time.AfterFunc(c.pc.FirstOutputTimeout, func() { timedOut.Store(true); cancel() })
	defer firstOutput.Stop()
	// The keep-alives go on until the commit point: while the member has
	// not answered with its head (a member may queue a request for
	// minutes) and while its preamble is held. A failed write ends the
	// attempt.
	ka := a.client.keepAlives(c.head("pending"), cancel)
	defer ka.stop()
	resp, src, o, ok := a.open(actx, ka, &timedOut)
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

	w := a.rt.fl.NewWatcher()
	if a.rt.translate {
		a.conv = api.NewStream(a.rt.to, a.rt.from, c.target(a.m), c.customTools()...) // the member's model, as a stream passed through names it
	}
	var held bytes.Buffer
	var ev wirefmt.SSEEvent // one per attempt, not one per event: &ev escapes
	for {
		var err error
		if ev, err = u.next(); err != nil {
			return a.preCommitReadFailure(resp.StatusCode, err, timedOut.Load())
		}
		obs := w.Observe(&ev, false)
		out, err := a.out(&ev)
		if err != nil {
			return a.failure(config.ClassServer, resp.StatusCode, c.scrub.Scrub(neutral.Clip("stream not translatable: "+err.Error())))
		}
		switch obs.Verdict {
		case neutral.VPreamble:
			held.Write(out)
			if held.Len() <= maxPreamble {
				continue
			}
		case neutral.VEnd:
			return a.failure(config.ClassEmpty, resp.StatusCode, "stream ended with no content")
		case neutral.VError:
			f := a.streamError(u, w, obs)
			if f.Class != config.ClassBadRequest {
				return outcome{fail: f}
			}
			// The request is wrong: pass the stream's answer through as is.
			held.Write(out)
			ka.stop()
			if !firstOutput.Stop() {
				return a.transportFailure(context.DeadlineExceeded, true)
			}
			if err := a.client.commit(resp.StatusCode, resp.Header, c.head(a.m), a.rt.translate, held.Bytes()); err != nil {
				return outcome{canceled: true}
			}
			return outcome{done: true, fail: f}
		}
		// Commit point: a visible event (or a preamble past its cap). The
		// keep-alives stop first: from here only this goroutine and the
		// relay's pings write.
		ka.stop()
		if !firstOutput.Stop() {
			return a.transportFailure(context.DeadlineExceeded, true)
		}
		if ev.Raw != nil && obs.Verdict == neutral.VVisible {
			held.Write(out)
		}
		var o outcome
		o, clean = a.commitAndRelay(resp, u, w, held.Bytes())
		return o
	}
}

// commitAndRelay is a streamed attempt from its commit point on: the binding,
// the head and held bytes, then the relay of the rest. clean: the stream
// reached its protocol's end.
func (a *attempt) commitAndRelay(resp *http.Response, u *memberStream, w neutral.StreamWatcher, held []byte) (o outcome, clean bool) {
	c := a.c
	if a.m != c.boundTo && a.m != c.picked {
		// A failover off the binding or off the first pick: joiners see
		// it now, not when the stream ends.
		c.p.state.Bind(c.sctx(), c.pc, c.key, a.m, c.p.opts.Now())
	}
	if err := a.client.commit(resp.StatusCode, resp.Header, c.head(a.m), a.rt.translate, held); err != nil {
		return outcome{canceled: true, served: true}, false
	}
	o = a.relay(u, w)
	clean = o.done && o.fail == nil && !o.canceled
	if sw, ok := w.(neutral.StateWatcher); ok {
		o.state = sw.StateKeys()
	}
	return o, clean
}

// open sends the member the streamed request and returns its answer and
// the reader of its event stream; ok false: the attempt ended with o (a
// request that cannot be built, a transport failure, an error status, or
// an answer that is not a readable event stream). ka, the keep-alives, end
// before a member's error answer is written; timedOut tells whether
// first_output_timeout_ms stopped the attempt.
func (a *attempt) open(actx context.Context, ka *ticker, timedOut *atomic.Bool) (resp *http.Response, src io.Reader, o outcome, ok bool) {
	c := a.c
	req, err := a.memberRequest(actx)
	if err != nil {
		return nil, nil, a.unbuildable(err), false
	}
	resp, err = a.send(req)
	if err != nil {
		return nil, nil, a.transportFailure(err, timedOut.Load()), false
	}
	if !wirefmt.DecodeResponse(resp) && resp.StatusCode/100 == 2 {
		drain(resp.Body)
		return nil, nil, a.failure(config.ClassServer, resp.StatusCode,
			"stream uses a Content-Encoding the pool cannot read ("+c.scrub.Scrub(neutral.Clip(resp.Header.Get("Content-Encoding")))+")"), false
	}
	if resp.StatusCode/100 != 2 {
		defer drain(resp.Body)
		body, err := wirefmt.ReadBody(resp.Body, MaxRequestBody)
		if err != nil {
			return nil, nil, a.transportFailure(err, timedOut.Load()), false
		}
		ka.stop()
		return nil, nil, a.errorAnswer(resp, body), false
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
		return nil, nil, a.transportFailure(err, timedOut.Load()), false
	} else if !isStream {
		drain(resp.Body)
		ct := resp.Header.Get("Content-Type")
		if ct == "" {
			ct = "none"
		}
		return nil, nil, a.failure(config.ClassServer, resp.StatusCode,
			"answer to a streaming request is not an event stream (Content-Type "+c.scrub.Scrub(neutral.Clip(ct))+")"), false
	}
	return resp, br, outcome{}, true
}

// preCommitReadFailure is the outcome of a read error before the commit
// point: the client gone is a cancel, an early end of the stream
// a network failure, anything else a transport failure.
func (a *attempt) preCommitReadFailure(status int, err error, timedOut bool) outcome {
	if (err == io.EOF || err == io.ErrUnexpectedEOF) && !timedOut && !a.client.gone.Load() {
		if a.c.r.Context().Err() != nil {
			return outcome{canceled: true}
		}
		return a.failure(config.ClassNetwork, status, "stream closed before the first output")
	}
	return a.transportFailure(err, timedOut)
}

// streamError is the failure an error event before the commit point
// describes, classified; a failure event without a reason
// takes the one of the error event that may follow it (Responses: an
// "error" event after a response.failed without one).
func (a *attempt) streamError(u *memberStream, w neutral.StreamWatcher, obs neutral.Observation) *neutral.Attempt {
	if obs.ErrMsg == "" || obs.ErrMsg == "response failed" {
		if more, ok := nextError(u, w); ok {
			obs = more
		}
	}
	class := balance.ClassifyStatus(obs.ErrStatus, obs.ErrType, obs.ErrMsg)
	return &neutral.Attempt{Member: a.m, Class: class, Status: obs.ErrStatus, Message: a.c.scrub.Scrub(neutral.Clip(obs.ErrMsg))}
}
