package proxy

import (
	"context"
	"errors"
	"github.com/dual-proxy/dual-proxy/internal/httpmsg"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/netutil"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
	"github.com/dual-proxy/dual-proxy/proxy/upstream"
)

// NonIdempotentBody is the exact body of the 502 answered when a
// non-idempotent request may have reached the origin and is not replayed
// (SPEC HTTP-3).
const NonIdempotentBody = "non-idempotent request may have been delivered; not replayed"

// request is one plain HTTP request being forwarded.
type request struct {
	method string
	// target is the request-target; when nil, roundTrip derives it from
	// url (callers holding a parsed *url.URL, e.g. Transport).
	target *target
	url    *url.URL
	host   string // normalized host for routing
	port   int
	header []httpmsg.Field // end-to-end fields only, in order (outgoingHeader)
	body   *body
	length int64             // Content-Length to send; -1: chunked
	up     *upstream.Request // built by tripOnce from the fields above, in upStore
	// upStore holds *up (one allocation with the request).
	upStore upstream.Request
	// respTimeout and reuse come from a Transport (SPEC POOL-17):
	// upstream.Request.ResponseTimeout and ReuseUnreplayable.
	respTimeout time.Duration
	reuse       bool
	// intr watches the context roundTrip is given (forward: the client
	// connection's connCtx); nil: upstream's own context.AfterFunc.
	intr upstream.Interrupter
	// memo is the client connection's last cache put (forward); nil:
	// every success puts.
	memo *putMemo
	// loop is isLoopback(host) when known (forward); nil: plan finds out.
	loop *bool
	// headerValid: header holds the fields of a head httpmsg parsed
	// (names are tokens, values free of control characters) and our Via
	// (upstream.Request.HeaderValid).
	headerValid bool
	// into is where responses are read (upstream.Request.Into: the
	// client connection's, forward); nil: a new one per attempt.
	into *upstream.Response
}

// targetFromURL builds the request-target of an http:// URL that was
// already parsed (its path re-encoded by net/url).
func targetFromURL(u *url.URL, host string, port int) *target {
	origin := u.RequestURI()
	return &target{authority: u.Host, host: host, port: port, origin: origin, absolute: "http://" + u.Host + origin}
}

// idempotent reports whether method is idempotent (RFC 9110 §9.2.2).
func idempotent(method string) bool {
	switch method {
	case "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE":
		return true
	}
	return false
}

// canReplay is the replay policy once a connection was established (SPEC
// HTTP-3): only a buffered body can be sent again, and only for an
// idempotent method, or with --retry-non-idempotent-after-send, or with
// --retry-non-idempotent-with-idempotency-key and a non-empty
// Idempotency-Key or X-Idempotency-Key.
func (e *Engine) canReplay(lc *liveConfig, r *request) bool {
	if r.body.rest != nil {
		return false
	}
	switch {
	case idempotent(r.method), lc.cfg.RetryNonIdempotentAfterSend:
		return true
	case lc.cfg.RetryWithIdempotencyKey:
		return fieldValue(r.header, "Idempotency-Key") != "" || fieldValue(r.header, "X-Idempotency-Key") != ""
	}
	return false
}

// fieldValue is the value of the first field called name (ASCII case
// insensitive), like http.Header.Get; "" when there is none.
func fieldValue(fields []httpmsg.Field, name string) string {
	for _, f := range fields {
		if strings.EqualFold(f.Name, name) {
			return f.Value
		}
	}
	return ""
}

// notReplayedError stops the candidate loop: the request may have reached
// the origin, or its answer had started, and it is not sent again (SPEC
// HTTP-3). The client gets 502 with body().
type notReplayedError struct {
	reason string // "" for the SPEC's non-idempotent case
	err    error
}

func (e *notReplayedError) Error() string {
	if e.reason == "" {
		return NonIdempotentBody + ": " + e.err.Error()
	}
	return e.reason + ": " + e.err.Error()
}

func (e *notReplayedError) Unwrap() error { return e.err }

// body is the 502 body: exactly NonIdempotentBody for a non-idempotent
// request (SPEC HTTP-3), else a short reason.
func (e *notReplayedError) body() string {
	if e.reason == "" {
		return NonIdempotentBody
	}
	return "dual-proxy: " + e.reason + "; not replayed\n"
}

// errShuttingDown ends a request the server's shutdown interrupted.
var errShuttingDown = errors.New("proxy shutting down")

// tripResult is the outcome of one attempt.
type tripResult struct {
	resp      *upstream.Response
	err       error
	connected bool // a TCP connection to the gateway/origin was established
	// local is true when the transport refused the request before asking
	// for a connection (an invalid request): not a failure of the path.
	local bool
}

// roundTrip sends r through the candidates in plan order and returns the
// first usable response (SPEC HTTP-3, HTTP-5c, CD-1). Plain requests are
// never raced (ORD-6). The response body streams; the caller closes it.
//
// Per attempt: a failure before the connection is established moves on for
// any method; after it, only when canReplay allows; never once a response
// byte arrived. A gateway's 500/502/503/504 is that path's failure and
// moves on under the same rules; with no candidate left (or no replay
// allowed) it is returned as is. A gateway's 407 moves on whenever the body
// can be sent again; it is never passed to the client. Errors:
// *notReplayedError, *AllFailedError, errShuttingDown, errClientGone
// (the client left; no cooldown recorded), or a *candidate.PathError of
// PhaseLocal (this machine out of descriptors; no cooldown recorded).
// One function on purpose: every exit is a replay decision (HTTP-3) that
// reads the same loop state (fails, replay, last); split, the rules would
// be spread over helpers that each need all of it.
func (e *Engine) roundTrip(ctx context.Context, r *request) (*upstream.Response, error) {
	var fails []error
	start := time.Now()
	decide := func(cand, errText string) {
		e.decisions.Add(statusdoc.Decision{Time: start, Kind: "http", Host: r.host, Candidate: cand, Failed: statusdoc.Failures(fails), LatencyMS: ms(time.Since(start)), Error: errText})
	}
	if r.target == nil {
		r.target = targetFromURL(r.url, r.host, r.port)
	}
	lc := e.live.Load() // this request's configuration to its end (SPEC OPS-7)
	replay := e.canReplay(lc, r)
	var atts []attempt
	if r.loop != nil {
		atts, _ = e.planFor(lc, r.host, r.port, lc.cfg.LoopbackDirect && *r.loop)
	} else {
		atts, _ = e.planFor(lc, r.host, r.port, lc.cfg.LoopbackDirect && isLoopback(r.host))
	}
	if r.respTimeout == 0 && lc.cfg.ResponseTimeout != e.client.ResponseTimeout {
		r.respTimeout = lc.cfg.ResponseTimeout // changed since start; the client keeps the start value
	}
	for i, a := range atts {
		ab, ok := r.body.open()
		if !ok {
			decide("", "streamed body not replayed")
			return nil, &notReplayedError{reason: "request body was streamed", err: fails[len(fails)-1]}
		}
		last := i == len(atts)-1
		c := a.cand
		res := e.tripOnce(ctx, a, r, ab, replay)
		if cerr := r.body.clientFailed(); cerr != nil || ended(ctx) && context.Cause(ctx) == errClientGone {
			closeResp(res.resp)
			decide("", "client gone")
			return nil, errClientGone
		}
		if res.err != nil && ctx.Err() != nil {
			// Shutdown: not the path's fault; no cooldown, no health kick.
			decide("", "shutting down")
			return nil, errShuttingDown
		}
		if res.err != nil && res.local {
			decide("", "request refused by the transport")
			return nil, &notReplayedError{reason: "request cannot be sent", err: res.err}
		}
		if res.err != nil {
			pe := classifyRoundTrip(c, res, res.err)
			if pe.Phase == candidate.PhaseLocal {
				// Our own resources, not the path's fault; no candidate
				// would do better (no cooldown, no further attempt).
				e.cfg.Logger.Warn("out of local resources", "host", r.host, "reason", pe.Err.Error())
				decide("", "local resources exhausted")
				return nil, pe
			}
			e.fail(r.host, r.port, pe)
			fails = append(fails, pe)
			// No complete response head reached us, so the client has seen
			// nothing: an idempotent (or explicitly replayable) request goes
			// on to the next candidate even when garbage or half a head
			// arrived (RFC 9110 §9.2.2); others stop here (SPEC HTTP-3).
			switch {
			case res.connected && !replay:
				decide("", "not replayed")
				if idempotent(r.method) {
					return nil, &notReplayedError{reason: "request body was streamed", err: pe}
				}
				return nil, &notReplayedError{err: pe}
			}
			continue
		}
		resp := res.resp
		if !c.SpeaksHTTP() || !isGatewayFailure(c, resp.StatusCode, resp.Get("Server")) {
			e.succeedMemo(r.host, c, r.memo)
			decide(lc.candName(c), "")
			return resp, nil
		}
		// SPEC HTTP-5c / CD-1: the gateway's own failure answer.
		pe := &candidate.PathError{Candidate: c, Phase: candidate.PhaseConnectResponse, Tier: candidate.TierHost, Status: resp.StatusCode, Sent: true,
			Err: errors.New("gateway answered " + strconv.Itoa(resp.StatusCode))}
		if resp.StatusCode == http.StatusProxyAuthRequired || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusLoopDetected {
			pe.Tier, pe.Sent = candidate.TierGateway, false // GW-4: refused by the gateway, not delivered; 508: a loop (loop.go)
		}
		e.fail(r.host, r.port, pe)
		fails = append(fails, pe)
		if pe.Sent && (last || !replay) {
			// No replay: the gateway's answer is the truthful one.
			decide("", "gateway answer returned: "+strconv.Itoa(resp.StatusCode))
			return resp, nil
		}
		closeResp(resp)
	}
	e.allFailed(r.host)
	decide("", "all candidates failed")
	return nil, &AllFailedError{Host: r.host, Errs: fails}
}

// tripOnce sends r through one candidate with the proxy's own upstream
// client (proxy/upstream): requests that may be replayed use pooled
// connections, others a fresh one, so nothing is ever re-sent silently.
func (e *Engine) tripOnce(ctx context.Context, a attempt, r *request, ab *attemptBody, replay bool) tripResult {
	if r.up == nil {
		t := r.target
		r.upStore = upstream.Request{Method: r.method, Origin: t.origin, Absolute: t.absolute, Authority: t.authority,
			Addr: t.addr(), Header: r.header, Length: r.length,
			ResponseTimeout: r.respTimeout, ReuseUnreplayable: r.reuse, Interrupt: r.intr, Into: r.into, HeaderValid: r.headerValid}
		r.up = &r.upStore
		if ab != nil { // Send reopens only a body it was given (no closure per GET)
			r.up.Reopen = func() io.Reader {
				if ab, _ := r.body.open(); ab != nil {
					return ab
				}
				return nil
			}
		}
	}
	var body io.Reader
	if ab != nil {
		body = ab
	}
	res := e.client.Send(ctx, a.cand, r.up, body, a.timeout, replay)
	return tripResult{resp: res.Resp, err: res.Err, connected: res.Connected, local: errors.Is(res.Err, upstream.ErrInvalidRequest)}
}

// isGatewayFailure reports answers by which a gateway says it could not
// serve the request (SPEC HTTP-5c, GW-4): 500, 502, 503, 504, 407, and the
// 401 tinyproxy 1.11 sends for wrong proxy credentials (it answers plain
// requests like CONNECT, SPEC CD-1; recognised by its own Server header,
// server, so an origin's 401 relayed by the gateway still passes through).
func isGatewayFailure(c candidate.Candidate, status int, server string) bool {
	switch status {
	case 500, 502, 503, 504, http.StatusProxyAuthRequired, http.StatusLoopDetected:
		return true
	case http.StatusUnauthorized:
		return c.HasAuth && strings.HasPrefix(strings.ToLower(server), "tinyproxy/")
	}
	return false
}

// classifyRoundTrip turns a transport error into a PathError (SPEC CD-1,
// CD-3): this machine out of descriptors or memory → local, no tier; a
// dial failure the dialer classified keeps its phase (gateway-tls,
// socks-handshake, a SOCKS5 reply; GW-6, GW-7); other failures to connect →
// gateway-connect (gateway tier) or origin-connect (host tier); connected,
// then a timeout or a reset before the response → response-header, host
// tier, and so is anything the origin itself sent (direct or through a
// SOCKS5 tunnel); an http/https gateway that closed or answered garbage
// before its response → connect-response, gateway tier.
func classifyRoundTrip(c candidate.Candidate, res tripResult, err error) *candidate.PathError {
	var dialed *candidate.PathError
	if !res.connected && errors.As(err, &dialed) {
		return dialed // the dialer's own phase: TLS, SOCKS5 handshake or reply (GW-6, GW-7)
	}
	pe := &candidate.PathError{Candidate: c, Sent: res.connected, Err: err}
	var ne net.Error
	switch {
	case netutil.IsLocalResource(err):
		pe.Phase, pe.Tier = candidate.PhaseLocal, candidate.TierNone
	case !res.connected && c.Direct:
		pe.Phase, pe.Tier = candidate.PhaseOriginConnect, candidate.TierHost
	case !res.connected:
		pe.Phase, pe.Tier = candidate.PhaseGatewayConnect, candidate.TierGateway
	case !c.SpeaksHTTP(), netutil.IsReset(err), errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		pe.Phase, pe.Tier = candidate.PhaseResponseHeader, candidate.TierHost
	default:
		pe.Phase, pe.Tier = candidate.PhaseConnectResponse, candidate.TierGateway
	}
	return pe
}

// ended reports whether ctx is done, without the lock that Err and Cause
// take (a plain request asked three times).
func ended(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// closeResp discards a response that is not passed on.
func closeResp(resp *upstream.Response) {
	if resp != nil {
		resp.Body.Close()
	}
}
