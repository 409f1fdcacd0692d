package pool

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// attempt is one try of one member: it builds the member's request, sends
// it (once more on a connection of its own when a kept-alive one closed
// unanswered), reads the answer's head, classifies it, and writes,
// collects or relays the answer through the client stream. It lives for
// that one try: its route, converter and timers end with it, and the call
// learns what happened only from the outcome it returns, so nothing of one
// member's try reaches the next member's.
type attempt struct {
	c      *call         // the request, its configuration, the call's request caches
	client *clientStream // the client's side (the call's)
	m      string        // the member
	ch     *config.Channel
	rt     memberRoute
	// answerModel is the JSON string the answer names as its model (the
	// client's unified id) when the member's model is another id; nil when
	// they are the same (the answer passes as is).
	answerModel []byte
	// conv converts a translated stream's events; nil for a stream passed
	// through.
	conv *api.Stream
}

// outcome is how one attempt ended, all the call learns of it: done
// (the client has its answer, the call ends), served (the member answered:
// the binding follows it), canceled (the client left), or a failure with
// its class, before the commit point (the call fails over) or after it.
type outcome struct {
	// done: a response was written (success, pass-through, or a failure
	// after the commit point); no further member is tried.
	done bool
	// served: the member answered (commit point reached or a complete
	// non-streamed answer); it becomes the binding.
	served bool
	// canceled: the client went away: no failure, no failover.
	canceled bool
	// fail describes a failure (before or after the commit point).
	fail     *neutral.Attempt
	explicit time.Duration // server-given wait for rate_limit
	// noCooldown: the failure is the transport's, not the member's (a
	// kept-alive connection the channel closed unanswered): it is
	// recorded and logged but cools nothing and counts no member failure.
	noCooldown bool
	u          neutral.Accounting
	// state: the state keys the answer produced; retry: send to
	// the same member once more (it rejected encrypted content).
	state []string
	retry bool
}

// attempt tries member m once: its
// route (same API or translated), the model its answer names (the id the
// client asked for), then the kind of exchange the request calls for.
func (c *call) attempt(m string) outcome {
	a := attempt{c: c, client: &c.client, m: m, ch: c.cfg.Channel(m)}
	a.rt = c.routeFor(a.ch)
	if t := c.target(m); t != c.ci.Model && c.ci.Model != "" {
		a.answerModel = wirefmt.ModelValue(c.ci.Model)
	}
	switch {
	case a.rt.translate && c.ep.Kind == neutral.EpCountTokens:
		return a.estimateTokens()
	case c.ci.Stream:
		return a.stream()
	case a.collects():
		return a.collect() // a member stream built into the JSON answer
	}
	return a.plain()
}

// plain runs one non-streamed attempt (non-streaming calls fail over on the
// same classes as streamed ones); the wait for the whole answer is
// bounded by the pool's response_timeout_ms.
func (a *attempt) plain() outcome {
	c := a.c
	ctx, cancel := context.WithTimeout(c.r.Context(), c.pc.ResponseTimeout)
	defer cancel()
	req, err := a.memberRequest(ctx)
	if err != nil {
		return a.unbuildable(err)
	}
	resp, err := a.send(req)
	if err != nil {
		return a.transportFailure(err, false)
	}
	decoded := wirefmt.DecodeResponse(resp)
	defer drain(resp.Body)
	body, err := wirefmt.ReadBody(resp.Body, MaxRequestBody)
	if err != nil {
		return a.transportFailure(err, false)
	}
	if resp.StatusCode/100 != 2 {
		return a.errorAnswer(resp, body)
	}
	if !decoded && a.rt.translate {
		return a.failure(config.ClassServer, resp.StatusCode, "answer uses a Content-Encoding the pool cannot read for translation")
	}
	if !decoded {
		// A coding the pool cannot read (br, zstd): passed on intact, with
		// its Content-Encoding, uninspected.
		a.writeBody(resp.Header, resp.StatusCode, body)
		return outcome{done: true, served: true}
	}
	return a.completeAnswer(resp, body)
}

// completeAnswer checks a complete 2xx answer for content, then writes it.
func (a *attempt) completeAnswer(resp *http.Response, body []byte) outcome {
	c := a.c
	u, class, msg := a.rt.fl.InspectBody(c.ep, body)
	if class != "" {
		return a.failure(class, resp.StatusCode, c.scrub.Scrub(neutral.Clip(msg)))
	}
	if a.rt.translate {
		out, err := a.translateAnswer(body)
		if err != nil {
			return a.failure(config.ClassServer, resp.StatusCode, c.scrub.Scrub(neutral.Clip("answer not translatable: "+err.Error())))
		}
		a.writeBody(resp.Header, resp.StatusCode, out)
		return outcome{done: true, served: true, u: u}
	}
	a.writeBody(resp.Header, resp.StatusCode, body)
	o := outcome{done: true, served: true, u: u}
	if sr, ok := c.fl.(neutral.StateReader); ok {
		o.state = sr.StateKeys(body)
	}
	return o
}

// errorAnswer classifies a non-2xx upstream answer. bad_request is passed
// through as is, once, without cooldown or failover (after the early head, as
// the API's error event); a member that refused the request's encrypted content
// or reasoning signatures is asked once more without what it cannot read.
func (a *attempt) errorAnswer(resp *http.Response, body []byte) outcome {
	c, m := a.c, a.m
	typ, msg := a.rt.fl.ParseError(body)
	class := balance.ClassifyStatus(resp.StatusCode, typ, msg)
	f := &neutral.Attempt{Member: m, Class: class, Status: resp.StatusCode, Message: c.scrub.Scrub(neutral.Clip(msg))}
	if class == config.ClassBadRequest {
		switch {
		case a.client.early:
			a.client.errorEvent(resp.StatusCode, f.Message) // the status is spent
		case a.rt.translate:
			st, doc := a.translateError(resp.StatusCode, body)
			a.writeBody(resp.Header, st, doc)
		default:
			a.writeBody(resp.Header, resp.StatusCode, body)
		}
		return outcome{done: true, fail: f}
	}
	o := outcome{fail: f}
	encrypted := c.ci.Encrypted && strings.Contains(strings.ToLower(typ+" "+msg), "encrypted")
	signed := c.ci.Signed && !a.rt.translate && signatureRefused(typ, msg) // signatures.go
	if class == config.ClassState && (encrypted || signed) && !c.stripAll[m] {
		if c.stripAll == nil {
			c.stripAll = map[string]bool{}
		}
		c.stripAll[m], o.retry = true, true
		if signed {
			c.unverified(m)
		}
	}
	if class == config.ClassRateLimit {
		o.explicit = balance.RetryAfter(resp.Header, c.p.opts.Now())
	}
	return o
}

// writeBody writes a complete answer of the member's through the client
// stream: keys scrubbed from it, the model it names the client's id.
func (a *attempt) writeBody(upstream http.Header, status int, body []byte) {
	body = a.c.scrub.ScrubBytes(body)
	if a.answerModel != nil {
		body = wirefmt.AnswerModel(body, a.answerModel)
	}
	a.client.answer(status, upstream, a.c.head(a.m), a.rt.translate, body)
}

// estimateTokens answers a count_tokens call for a member of another API
// (countTokensEstimate).
func (a *attempt) estimateTokens() outcome {
	a.writeBody(http.Header{}, http.StatusOK, a.c.countTokensEstimate())
	return outcome{done: true, served: true}
}

// failure is the member's failure of class before the commit point, with
// the answer's status (0: none) and msg, already scrubbed.
func (a *attempt) failure(class string, status int, msg string) outcome {
	return outcome{fail: &neutral.Attempt{Member: a.m, Class: class, Status: status, Message: msg}}
}

// unbuildable is the outcome of a member request that cannot be built
// (the request cannot be expressed for the member): the client's
// bad_request, the call ends.
func (a *attempt) unbuildable(err error) outcome {
	return outcome{fail: &neutral.Attempt{Member: a.m, Class: config.ClassBadRequest, Message: err.Error()}, done: true}
}

// closedUnanswered is the Transport's mark of a request that went out on a
// kept-alive connection the channel closed before one byte of the answer
// (the proxy's upstream.ClosedUnansweredError, found by its method: the
// pool imports nothing of the proxy; Options.Transport).
type closedUnanswered interface{ ClosedUnanswered() bool }

// isClosedUnanswered reports whether err carries that mark.
func isClosedUnanswered(err error) bool {
	var cu closedUnanswered
	return errors.As(err, &cu) && cu.ClosedUnanswered()
}

// send sends the member request req through the Transport (SPEC POOL-26,
// POOL-17).
// When it fails on a kept-alive connection the channel closed before one
// byte of the answer (an idle timeout that fired as the request came, a
// server that closes after every answer without "Connection: close"), it
// is sent once more to the same member on a connection of its own
// (req.Close: the Transport takes no idle connection for it), as the
// Anthropic and OpenAI SDKs retry a connection error; never a third time,
// and the session does not move for it. A body beyond the replay budget is
// not sent again; nor is one whose attempt ended. Each resend is
// logged and told to Observer.Resend.
func (a *attempt) send(req *http.Request) (*http.Response, error) {
	c := a.c
	resp, err := c.p.opts.Transport.RoundTrip(req)
	if err == nil || c.oneMember || req.GetBody == nil || req.Context().Err() != nil || !isClosedUnanswered(err) {
		return resp, err
	}
	body, gerr := req.GetBody()
	if gerr != nil {
		return nil, err
	}
	again := req.Clone(req.Context())
	again.Body, again.Close = body, true
	c.p.log.Info("pool member's kept-alive connection closed unanswered; sent once more on a new connection",
		"pool", c.pc.ID, "member", a.m, "session", c.session)
	if f := c.p.opts.Observer.Resend; f != nil {
		f(c.pc.ID, a.m)
	}
	return c.p.opts.Transport.RoundTrip(again)
}

// transportFailure classifies a RoundTrip or body-read error (SPEC POOL-9). The
// client's own cancel is not a member failure. timedOut: the attempt was
// stopped by first_output_timeout_ms; a deadline error of a non-streamed call
// is response_timeout_ms. Both say so instead of "context canceled".
func (a *attempt) transportFailure(err error, timedOut bool) outcome {
	c := a.c
	if c.r.Context().Err() != nil || a.client.gone.Load() {
		return outcome{canceled: true}
	}
	class, msg := config.ClassNetwork, c.scrub.Scrub(shortErr(err))
	if isClosedUnanswered(err) {
		// The channel closed a kept-alive connection as the request came
		// and the request was not sent again (send: a body beyond the
		// replay budget): not a sign of ill health, so the next member is
		// tried and this one is not cooled.
		o := a.failure(class, 0, msg)
		o.noCooldown = true
		return o
	}
	switch {
	case timedOut:
		class, msg = config.ClassTimeout, fmt.Sprintf("no output within first_output_timeout_ms (%d ms)", c.pc.FirstOutputTimeout.Milliseconds())
	case errors.Is(err, context.DeadlineExceeded) && !c.ci.Stream:
		class, msg = config.ClassTimeout, fmt.Sprintf("no answer within response_timeout_ms (%d ms)", c.pc.ResponseTimeout.Milliseconds())
	case errors.Is(err, context.DeadlineExceeded):
		class = config.ClassTimeout
	}
	return a.failure(class, 0, msg)
}

// shortErr is err's text for a log line or an error document: a url.Error's
// cause only (no paths in errors), clipped.
func shortErr(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, "\": "); i >= 0 {
		s = s[i+3:]
	}
	return neutral.Clip(s)
}
