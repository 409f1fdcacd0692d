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
	// close: upstream.Request.Close (a Transport request with Close set).
	close bool
	// caller is Transport.Caller ("" for the proxy's own clients).
	caller string
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
// first usable response (SPEC HTTP-3, HTTP-5c, CD-1). With more than one
// candidate and racing on, a request that may be sent twice races
// (raceTrip, ORD-6; a first candidate that is the host's cache entry is
// proved before the next gets the request, and a direct one is not raced);
// one that may not is sent only once a path is proved when the first
// candidate is an unproven gateway and not the host's cache entry
// (proveFirst). The response body streams; the caller closes it.
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
// Each attempt's outcome is decided by tripEnded (the request ends
// whatever the path did), tripFailed (a transport failure) and tripAnswer
// (a response head arrived).
func (e *Engine) roundTrip(ctx context.Context, r *request) (*upstream.Response, error) {
	tl := tripLog{start: time.Now()}
	if r.target == nil {
		r.target = targetFromURL(r.url, r.host, r.port)
	}
	lc := e.live.Load() // this request's configuration to its end (SPEC OPS-7)
	replay := e.canReplay(lc, r)
	loop := lc.cfg.LoopbackDirect && (r.loop != nil && *r.loop || r.loop == nil && isLoopback(r.host))
	atts, _ := e.planFor(lc, r.host, r.port, loop)
	if r.respTimeout == 0 && lc.cfg.ResponseTimeout != e.client.ResponseTimeout {
		r.respTimeout = lc.cfg.ResponseTimeout // changed since start; the client keeps the start value
	}
	if len(atts) > 1 && lc.cfg.RaceDelay > 0 {
		// A silent gateway costs the race delay, not the response
		// timeout (race_plain.go, SPEC ORD-6); a cached one about twice
		// that, its path proved before the request is sent twice.
		switch {
		case replay && (!atts[0].cached || !atts[0].cand.Direct):
			return e.raceTrip(ctx, lc, r, atts, &tl)
		case !replay && !atts[0].cached && e.unproven(atts[0].cand):
			var err error
			if atts, err = e.proveFirst(ctx, lc, r, atts, &tl); err != nil {
				return nil, err
			}
		}
	}
	for i, a := range atts {
		ab, ok := r.body.open()
		if !ok {
			e.decide(r, &tl, "", "streamed body not replayed")
			return nil, &notReplayedError{reason: "request body was streamed", err: tl.fails[len(tl.fails)-1]}
		}
		res := e.tripOnce(ctx, a, r, ab, replay)
		if err := e.tripEnded(ctx, r, &tl, res); err != nil {
			return nil, err
		}
		if res.err != nil {
			if err := e.tripFailed(r, &tl, a.cand, res, replay); err != nil {
				return nil, err
			}
			continue
		}
		if resp := e.tripAnswer(lc, r, &tl, a.cand, res.resp, i == len(atts)-1 || !replay); resp != nil {
			return resp, nil
		}
	}
	e.allFailed(r.host, r.caller)
	e.decide(r, &tl, "", "all candidates failed")
	return nil, &AllFailedError{Host: r.host, Errs: tl.fails}
}

// tripLog is what roundTrip's decision records (the status document's last decisions, SPEC OPS-2): when the
// request started and the failures of its attempts so far, in order.
type tripLog struct {
	start time.Time
	fails []error
}

// decide records the request's decision: the candidate that served it
// (cand, "" for none) or why it ended (errText).
func (e *Engine) decide(r *request, tl *tripLog, cand, errText string) {
	e.decisions.Add(statusdoc.Decision{Time: tl.start, Kind: "http", Host: r.host, Candidate: cand, Failed: statusdoc.Failures(tl.fails), LatencyMS: ms(time.Since(tl.start)), Error: errText, Caller: r.caller})
}

// tripEnded returns the error that ends the request after an attempt
// whatever the path did, with no cooldown recorded: errClientGone when the
// client left (its body failed or its connection's context ended; the
// response is discarded), errShuttingDown when the attempt failed because
// ctx ended (Server.Shutdown), a *notReplayedError when the transport
// refused the request before asking for a connection. Else nil.
func (e *Engine) tripEnded(ctx context.Context, r *request, tl *tripLog, res tripResult) error {
	if cerr := r.body.clientFailed(); cerr != nil || ended(ctx) && context.Cause(ctx) == errClientGone {
		closeResp(res.resp)
		e.decide(r, tl, "", "client gone")
		return errClientGone
	}
	if res.err != nil && ctx.Err() != nil {
		// Shutdown: not the path's fault; no cooldown, no health kick.
		e.decide(r, tl, "", "shutting down")
		return errShuttingDown
	}
	if res.err != nil && res.local {
		e.decide(r, tl, "", "request refused by the transport")
		return &notReplayedError{reason: "request cannot be sent", err: res.err}
	}
	return nil
}

// tripFailed handles an attempt through c that failed without a response
// head (SPEC HTTP-3, CD-1): this machine out of resources ends the request
// with the *candidate.PathError (no cooldown, no candidate would do
// better); else the failure cools c down (unless it is a kept-alive
// connection closed unanswered) and is logged, and a request
// that reached a connection and may not be replayed ends with a
// *notReplayedError. nil: the next candidate may be tried.
func (e *Engine) tripFailed(r *request, tl *tripLog, c candidate.Candidate, res tripResult, replay bool) error {
	pe := classifyRoundTrip(c, res, res.err)
	if pe.Tier == candidate.TierHost && pe.Phase == candidate.PhaseResponseHeader && c.SpeaksHTTP() && isTimeout(res.err) && e.unproven(c) {
		// No answer in time from a gateway that has answered nothing
		// since it was configured: the gateway is silent, not the
		// host's path (SPEC CD-1); every host skips it until a check
		// proves it (HC-2 kicks one now, CD-2).
		pe.Tier = candidate.TierGateway
	}
	if pe.Phase == candidate.PhaseLocal {
		e.cfg.Logger.Warn("out of local resources", "host", r.host, "reason", pe.Err.Error())
		e.decide(r, tl, "", "local resources exhausted")
		return pe
	}
	var cu *upstream.ClosedUnansweredError
	if !errors.As(res.err, &cu) {
		// A kept-alive connection the peer closed unanswered is no sign
		// of the path's ill health (SPEC POOL-26): nothing cools.
		e.fail(r.host, r.port, pe)
	}
	tl.fails = append(tl.fails, pe)
	// No complete response head reached us, so the client has seen
	// nothing: an idempotent (or explicitly replayable) request goes on to
	// the next candidate even when garbage or half a head arrived (RFC
	// 9110 §9.2.2); others stop here (SPEC HTTP-3).
	if !res.connected || replay {
		return nil
	}
	e.decide(r, tl, "", "not replayed")
	if idempotent(r.method) {
		return &notReplayedError{reason: "request body was streamed", err: pe}
	}
	return &notReplayedError{err: pe}
}

// tripAnswer handles the response head of an attempt through c: an
// origin's answer, or a gateway's that is no failure of its own, is the
// request's (SPEC HTTP-5c; the route cache remembers c). A gateway's own
// failure answer (isGatewayFailure) cools c down (CD-1; 401, 407 and 508
// at the gateway tier, not delivered: GW-4, loop.go) and is returned only
// when it was delivered and final (no candidate left or no replay);
// otherwise it is discarded and tripAnswer returns nil to try the next.
func (e *Engine) tripAnswer(lc *liveConfig, r *request, tl *tripLog, c candidate.Candidate, resp *upstream.Response, final bool) *upstream.Response {
	e.markAnswered(c)
	if !c.SpeaksHTTP() || !isGatewayFailure(c, resp.StatusCode, resp.Get("Server")) {
		e.succeedMemo(r.host, c, r.memo)
		e.decide(r, tl, lc.candName(c), "")
		return resp
	}
	pe := &candidate.PathError{Candidate: c, Phase: candidate.PhaseConnectResponse, Tier: candidate.TierHost, Status: resp.StatusCode, Sent: true,
		Err: errors.New("gateway answered " + strconv.Itoa(resp.StatusCode))}
	if resp.StatusCode == http.StatusProxyAuthRequired || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusLoopDetected {
		pe.Tier, pe.Sent = candidate.TierGateway, false // GW-4: refused by the gateway, not delivered; 508: a loop (loop.go)
	}
	e.fail(r.host, r.port, pe)
	tl.fails = append(tl.fails, pe)
	if pe.Sent && final {
		// No replay: the gateway's answer is the truthful one.
		e.decide(r, tl, "", "gateway answer returned: "+strconv.Itoa(resp.StatusCode))
		return resp
	}
	closeResp(resp)
	return nil
}

// tripOnce sends r through one candidate with the proxy's own upstream
// client (proxy/upstream): requests that may be replayed use pooled
// connections, others a fresh one, so nothing is ever re-sent silently.
func (e *Engine) tripOnce(ctx context.Context, a attempt, r *request, ab *attemptBody, replay bool) tripResult {
	if r.up == nil {
		t := r.target
		r.upStore = upstream.Request{Method: r.method, Origin: t.origin, Absolute: t.absolute, Authority: t.authority,
			Addr: t.addr(), Header: r.header, Length: r.length,
			ResponseTimeout: r.respTimeout, ReuseUnreplayable: r.reuse, Interrupt: r.intr, Into: r.into, HeaderValid: r.headerValid,
			Close: r.close}
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

// isTimeout reports a deadline that passed: a net.Error timeout (the
// response head's deadline, errHeaderTimeout) or context.DeadlineExceeded.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded)
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
