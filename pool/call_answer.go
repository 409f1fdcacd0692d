package pool

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// errorAnswer classifies a non-2xx upstream answer. bad_request is passed
// through as is, once, without cooldown or failover (SPEC POOL-10).
func (c *call) errorAnswer(m string, resp *http.Response, body []byte) outcome {
	typ, msg := c.rt.fl.ParseError(body)
	class := balance.ClassifyStatus(resp.StatusCode, typ, msg)
	a := &neutral.Attempt{Member: m, Class: class, Status: resp.StatusCode, Message: c.scrub.Scrub(neutral.Clip(msg))}
	if class == config.ClassBadRequest {
		switch {
		case c.early:
			c.earlyError(resp.StatusCode, a.Message) // the status is spent (POOL-7b)
		case c.rt.translate:
			st, doc := c.translateError(c.rt, resp.StatusCode, body)
			c.writeBody(m, resp.Header, st, doc)
		default:
			c.writeAnswer(m, resp, body)
		}
		return outcome{done: true, fail: a}
	}
	o := outcome{fail: a}
	encrypted := c.ci.Encrypted && strings.Contains(strings.ToLower(typ+" "+msg), "encrypted")
	signed := c.ci.Signed && !c.rt.translate && signatureRefused(typ, msg) // signatures.go
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

// writeAnswer writes a complete upstream answer to the client.
func (c *call) writeAnswer(m string, resp *http.Response, body []byte) {
	c.writeBody(m, resp.Header, resp.StatusCode, body)
}

// writeBody writes a complete answer with the upstream's headers.
func (c *call) writeBody(m string, upstream http.Header, status int, body []byte) {
	h := c.w.Header()
	copyResponseHeaders(h, upstream, c.scrub) // Content-Encoding only when still encoded (wirefmt.DecodeResponse)
	if c.rt.translate {
		h.Del("Content-Encoding")
		h.Set("Content-Type", "application/json")
		c.translated = true
	}
	c.headers(h, m)
	c.ttfb = time.Since(c.start)
	body = c.scrub.ScrubBytes(body)
	if c.answerModel != nil {
		body = wirefmt.AnswerModel(body, c.answerModel)
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	c.w.WriteHeader(status)
	_, _ = c.w.Write(body)
}

// plainAttempt runs one non-streamed attempt (SPEC POOL-7 "non-streaming
// calls fail over on the same classes"); the wait for the whole answer is
// bounded by the pool's response_timeout_ms.
func (c *call) plainAttempt(m string) outcome {
	ch := c.cfg.Channel(m)
	ctx, cancel := context.WithTimeout(c.r.Context(), c.pc.ResponseTimeout)
	defer cancel()
	req, err := c.memberRequest(ctx, ch)
	if err != nil {
		return outcome{fail: &neutral.Attempt{Member: m, Class: config.ClassBadRequest, Message: err.Error()}, done: true}
	}
	resp, err := c.sendMember(m, req)
	if err != nil {
		return c.transportFailure(m, err, false)
	}
	decoded := wirefmt.DecodeResponse(resp)
	defer drain(resp.Body)
	body, err := wirefmt.ReadBody(resp.Body, MaxRequestBody)
	if err != nil {
		return c.transportFailure(m, err, false)
	}
	if resp.StatusCode/100 != 2 {
		return c.errorAnswer(m, resp, body)
	}
	if !decoded && c.rt.translate {
		return outcome{fail: &neutral.Attempt{Member: m, Class: config.ClassServer, Status: resp.StatusCode,
			Message: "answer uses a Content-Encoding the pool cannot read for translation"}}
	}
	if !decoded {
		// A coding the pool cannot read (br, zstd): passed on intact, with
		// its Content-Encoding, uninspected.
		c.writeAnswer(m, resp, body)
		return outcome{done: true, served: true}
	}
	return c.completeAnswer(m, resp, body)
}

// completeAnswer checks a complete 2xx answer for content, then writes it.
func (c *call) completeAnswer(m string, resp *http.Response, body []byte) outcome {
	u, class, msg := c.rt.fl.InspectBody(c.ep, body)
	if class != "" {
		return outcome{fail: &neutral.Attempt{Member: m, Class: class, Status: resp.StatusCode, Message: c.scrub.Scrub(neutral.Clip(msg))}}
	}
	if c.rt.translate {
		out, err := c.translateAnswer(c.rt, m, body)
		if err != nil {
			return outcome{fail: &neutral.Attempt{Member: m, Class: config.ClassServer, Status: resp.StatusCode,
				Message: c.scrub.Scrub(neutral.Clip("answer not translatable: " + err.Error()))}}
		}
		c.writeBody(m, resp.Header, resp.StatusCode, out)
		return outcome{done: true, served: true, u: u}
	}
	c.writeAnswer(m, resp, body)
	o := outcome{done: true, served: true, u: u}
	if sr, ok := c.fl.(neutral.StateReader); ok {
		o.state = sr.StateKeys(body)
	}
	return o
}

func shortErr(err error) string {
	s := err.Error()
	// url.Error quotes the URL; keep only the cause (no paths in errors).
	if i := strings.LastIndex(s, "\": "); i >= 0 {
		s = s[i+3:]
	}
	return neutral.Clip(s)
}
