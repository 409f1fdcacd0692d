package pool

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/api"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// A non-streamed call is silent on the member's connection until the whole
// answer is there, and a gateway between the pool and the channel that
// cuts idle connections kills a long one (docs/POOL.md "Non-streamed calls
// and idle timeouts"). With the pool's stream_upstream on, such a call to
// a same-API Anthropic Messages or Chat Completions member asks the member
// for a stream, whose events keep that connection busy, and answers the
// client with the JSON answer built from them. The client
// sees what a non-streamed call gives: one JSON answer, the member's
// status semantics. Failures before the stream's first part fail over as
// before; a failure after it (an error event, a cut stream) is the call's
// error answer in the client's API. A member that refuses to stream is
// asked again without a stream.

// collects says whether this attempt asks its member for a stream to build
// a non-streamed answer from (stream_upstream).
func (a *attempt) collects() bool {
	c := a.c
	return c.pc.StreamUpstream && !c.ci.Stream && c.ep.Kind == neutral.EpGenerate && !a.rt.translate &&
		a.rt.fl.CollectsStreams()
}

// refusesStreaming says a member's error answer says it does not stream:
// the attempt is repeated without a stream on the same member.
func refusesStreaming(status int, msg string) bool {
	if status/100 != 4 {
		return false
	}
	m := strings.ToLower(msg)
	return strings.Contains(m, "stream") && (strings.Contains(m, "not support") || strings.Contains(m, "unsupported") ||
		strings.Contains(m, "not allowed") || strings.Contains(m, "not available"))
}

// collect runs one non-streamed attempt through a member stream; the whole
// attempt is bounded by response_timeout_ms, as a non-streamed one is.
func (a *attempt) collect() outcome {
	c := a.c
	ctx, cancel := context.WithTimeout(c.r.Context(), c.pc.ResponseTimeout)
	defer cancel()
	req, err := a.memberRequest(ctx)
	if err == nil {
		err = a.streamingRequest(req)
	}
	if err != nil {
		return a.unbuildable(err)
	}
	resp, err := a.send(req)
	if err != nil {
		return a.transportFailure(err, false)
	}
	decoded := wirefmt.DecodeResponse(resp)
	defer drain(resp.Body)
	if resp.StatusCode/100 != 2 || !strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/event-stream") {
		body, err := wirefmt.ReadBody(resp.Body, MaxRequestBody)
		if err != nil {
			return a.transportFailure(err, false)
		}
		if resp.StatusCode/100 != 2 {
			if _, msg := a.rt.fl.ParseError(body); refusesStreaming(resp.StatusCode, msg) && !c.oneMember {
				return a.plain()
			}
			return a.errorAnswer(resp, body)
		}
		if !decoded {
			a.writeBody(resp.Header, resp.StatusCode, body)
			return outcome{done: true, served: true}
		}
		return a.completeAnswer(resp, body) // a member that answered JSON anyway
	}
	if !decoded {
		return a.failure(config.ClassServer, resp.StatusCode, "stream uses a Content-Encoding the pool cannot read")
	}
	return a.collectStream(resp)
}

// streamingRequest turns the member request req into its streamed form.
func (a *attempt) streamingRequest(req *http.Request) error {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return err
	}
	if body, err = a.rt.fl.StreamingBody(body); err != nil {
		return err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	req.ContentLength = int64(len(body))
	req.Header.Set("Accept", "text/event-stream")
	return nil
}

// collectStream reads the member's stream into the client's answer.
func (a *attempt) collectStream(resp *http.Response) outcome {
	c := a.c
	col := api.NewCollector(a.rt.to)
	rd := wirefmt.NewSSEReader(resp.Body)
	defer rd.Release()
	var se *neutral.Error
	var err error
	for se == nil && err == nil && !col.Finished() {
		var ev wirefmt.SSEEvent
		if ev, err = rd.Next(); err != nil {
			break
		}
		if !ev.Comment {
			se, err = col.Feed(ev.Name, ev.Data)
		}
	}
	if errors.Is(err, io.EOF) {
		se, err = col.End()
	}
	committed := len(col.Response().Parts) > 0
	switch {
	case se != nil:
		return a.collectFailed(resp, committed, *se)
	case err != nil && c.r.Context().Err() != nil:
		return outcome{canceled: true}
	case err != nil:
		return a.collectFailed(resp, committed, neutral.Error{Status: http.StatusBadGateway, Type: "api_error",
			Message: "member stream failed: " + shortErr(err)})
	}
	body, err := api.EncodeResponse(a.rt.to, col.Response(), c.target(a.m))
	if err != nil {
		return a.failure(config.ClassServer, resp.StatusCode, c.scrub.Scrub(neutral.Clip("answer not buildable from the stream: "+err.Error())))
	}
	resp.Header.Set("Content-Type", "application/json")
	return a.completeAnswer(resp, body)
}

// collectFailed is a member's failure inside the stream: before the first
// part it fails over like any failure before the commit point; after it,
// the client gets the error answer of its API with the error's status.
func (a *attempt) collectFailed(resp *http.Response, committed bool, e neutral.Error) outcome {
	class := balance.ClassifyStatus(e.Status, e.Type, e.Message)
	f := &neutral.Attempt{Member: a.m, Class: class, Status: e.Status, Message: a.c.scrub.Scrub(neutral.Clip(e.Message))}
	if !committed && class != config.ClassBadRequest {
		return outcome{fail: f}
	}
	st, doc := api.EncodeError(a.rt.to, e)
	f.Status = st
	resp.Header.Set("Content-Type", "application/json")
	a.writeBody(resp.Header, st, doc)
	return outcome{done: true, served: committed, fail: f}
}
