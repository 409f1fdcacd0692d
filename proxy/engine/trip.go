package engine

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/ctxdone"
	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"

	"github.com/dual-proxy/dual-proxy/internal/lib/netutil"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
	"github.com/dual-proxy/dual-proxy/proxy/upstream"
)

// NonIdempotentBody is the exact body of the 502 answered when a
// non-idempotent request may have reached the origin and is not replayed
// (canReplay); its wording is part of the replay rule, so it never changes.
const NonIdempotentBody = "non-idempotent request may have been delivered; not replayed"

// Request is one plain HTTP request to forward (Forward). The front end
// fills it from the client's head; a connection's requests may reuse one
// Request, which Forward owns until it returns (and the response's body is
// closed).
type Request struct {
	Method string
	// Authority is the target's authority as the client sent it
	// ("Example.com:8080"), for Host; Host and Port are the normalized
	// destination that routing and dialling use.
	Authority string
	Host      string
	Port      int
	// Origin is the request-target for the origin, byte for byte as the
	// client sent it (the proxy never re-encodes paths); Absolute is the
	// one for a gateway ("http://host/…").
	Origin, Absolute string
	// Header holds the end-to-end fields to send, in order, with this
	// proxy's Via entry last; never Host, Content-Length or Expect.
	Header []httpmsg.Field
	// HeaderValid: Header holds the fields of a head httpmsg parsed (names
	// are tokens, values free of control characters) and our Via
	// (upstream.Request.HeaderValid), so they are not checked again.
	HeaderValid bool
	// Body is the body; required (the zero Body is an empty one).
	Body *Body
	// Length is the Content-Length to send; -1: chunked.
	Length int64
	// Interrupt watches the context Forward is given (the client
	// connection's); nil: upstream's own context.AfterFunc per exchange.
	Interrupt upstream.Interrupter
	// Into is where responses are read (a connection's, reused); nil: a
	// new one per attempt.
	Into *upstream.Response
	// Memo is what the client connection's earlier requests left (nil:
	// nothing remembered).
	Memo *ConnMemo

	up *upstream.Request // built by tripOnce from the fields above, in upStore
	// upStore holds *up (one allocation with the request).
	upStore upstream.Request
	// respTimeout and reuse come from a Transport (the pool's own bounds):
	// upstream.Request.ResponseTimeout and ReuseUnreplayable.
	respTimeout time.Duration
	reuse       bool
	// close: upstream.Request.Close (a Transport request with Close set).
	close bool
	// caller is Transport.Caller ("" for the proxy's own clients).
	caller string
}

// ConnMemo is what one client connection's plain requests remember from
// one to the next (a connection usually names one destination): the last
// route cache put, and whether the last host was a loopback one (no parse
// per request). The zero value remembers nothing.
type ConnMemo struct {
	put      putMemo
	loopHost string
	loop     bool
}

// loopback reports isLoopback(r.Host), from r's memo when its host repeats.
func (r *Request) loopback() bool {
	m := r.Memo
	if m == nil {
		return isLoopback(r.Host)
	}
	if m.loopHost != r.Host {
		m.loopHost, m.loop = r.Host, isLoopback(r.Host)
	}
	return m.loop
}

// putMemo is r's connection's last cache put, or nil.
func (r *Request) putMemo() *putMemo {
	if r.Memo == nil {
		return nil
	}
	return &r.Memo.put
}

// addr is the origin's "host:port" for a direct or SOCKS5 dial: the
// authority itself when it already is exactly that ("127.0.0.1:8080",
// "example.com:80"), no new string per request. A port that starts with a
// digit from 1 to 9 leaves Atoi no sign or leading zero to accept, so
// Atoi's success means the authority spells the port as JoinHostPort
// would.
func (r *Request) addr() string {
	a, h := r.Authority, r.Host
	if len(a) > len(h)+1 && a[:len(h)] == h && a[len(h)] == ':' && '1' <= a[len(h)+1] && a[len(h)+1] <= '9' {
		if p, err := strconv.Atoi(a[len(h)+1:]); err == nil && p == r.Port {
			return a
		}
	}
	return net.JoinHostPort(h, strconv.Itoa(r.Port))
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
func (e *Engine) canReplay(lc *liveConfig, r *Request) bool {
	if r.Body.Rest != nil {
		return false
	}
	switch {
	case idempotent(r.Method), lc.cfg.RetryNonIdempotentAfterSend:
		return true
	case lc.cfg.RetryWithIdempotencyKey:
		return fieldValue(r.Header, "Idempotency-Key") != "" || fieldValue(r.Header, "X-Idempotency-Key") != ""
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

// NotReplayedError stops the candidate loop: the request may have reached
// the origin, or its answer had started, and it is not sent again (a
// replay could repeat its side effect). The client gets 502 with Answer().
type NotReplayedError struct {
	reason string // "" for the SPEC's non-idempotent case
	err    error
}

// Error is the reason and the last attempt's failure.
func (e *NotReplayedError) Error() string {
	if e.reason == "" {
		return NonIdempotentBody + ": " + e.err.Error()
	}
	return e.reason + ": " + e.err.Error()
}

// Unwrap is the last attempt's failure.
func (e *NotReplayedError) Unwrap() error { return e.err }

// Answer is the 502 body: exactly NonIdempotentBody for a non-idempotent
// request, else a short reason.
func (e *NotReplayedError) Answer() string {
	if e.reason == "" {
		return NonIdempotentBody
	}
	return "dual-proxy: " + e.reason + "; not replayed\n"
}

// errClientGone is the cause of a context that ended because the client
// left; it ends a request with no cooldown recorded.
var errClientGone = httpmsg.ErrClientGone

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

// Forward sends r through the candidates in plan order and returns the
// first usable response (SPEC HTTP-3, HTTP-5c). With more than one
// candidate and racing on, a request that may be sent twice races
// (raceTrip; a first candidate that is the host's cache entry is
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
// *NotReplayedError, *AllFailedError, errShuttingDown, errClientGone
// (the client left; no cooldown recorded), or a *candidate.PathError of
// PhaseLocal (this machine out of descriptors; no cooldown recorded).
// Each attempt's outcome is decided by tripEnded (the request ends
// whatever the path did), tripFailed (a transport failure) and tripAnswer
// (a response head arrived).
func (e *Engine) Forward(ctx context.Context, r *Request) (*upstream.Response, error) {
	tl := tripLog{start: time.Now()}
	lc := e.live.Load() // this request's configuration to its end: a reload mid-request does not mix two
	replay := e.canReplay(lc, r)
	loop := lc.cfg.LoopbackDirect && r.loopback()
	atts, _ := e.planFor(lc, r.Host, r.Port, loop)
	if r.respTimeout == 0 && lc.cfg.ResponseTimeout != e.client.ResponseTimeout {
		r.respTimeout = lc.cfg.ResponseTimeout // changed since start; the client keeps the start value
	}
	if len(atts) > 1 && lc.cfg.RaceDelay > 0 {
		// A silent gateway costs the race delay, not the response
		// timeout (race_plain.go); a cached one about twice
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
		ab, ok := r.Body.open()
		if !ok {
			e.decide(r, &tl, "", "streamed body not replayed")
			return nil, &NotReplayedError{reason: "request body was streamed", err: tl.fails[len(tl.fails)-1]}
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
	e.allFailed(r.Host, r.caller)
	e.decide(r, &tl, "", "all candidates failed")
	return nil, &AllFailedError{Host: r.Host, Errs: tl.fails}
}

// tripLog is what Forward's decision records (the status document's last
// decisions): when the request started and the failures of its attempts so far, in order.
type tripLog struct {
	start time.Time
	fails []error
}

// decide records the request's decision: the candidate that served it
// (cand, "" for none) or why it ended (errText).
func (e *Engine) decide(r *Request, tl *tripLog, cand, errText string) {
	e.decisions.Add(statusdoc.Decision{Time: tl.start, Kind: "http", Host: r.Host, Candidate: cand, Failed: statusdoc.Failures(tl.fails), LatencyMS: ms(time.Since(tl.start)), Error: errText, Caller: r.caller})
}

// tripEnded returns the error that ends the request after an attempt
// whatever the path did, with no cooldown recorded: errClientGone when the
// client left (its body failed or its connection's context ended; the
// response is discarded), errShuttingDown when the attempt failed because
// ctx ended (Server.Shutdown), a *NotReplayedError when the transport
// refused the request before asking for a connection. Else nil.
func (e *Engine) tripEnded(ctx context.Context, r *Request, tl *tripLog, res tripResult) error {
	if cerr := r.Body.clientFailed(); cerr != nil || ctxdone.Ended(ctx) && context.Cause(ctx) == errClientGone {
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
		return &NotReplayedError{reason: "request cannot be sent", err: res.err}
	}
	return nil
}

// tripFailed handles an attempt through c that failed without a response
// head: this machine out of resources ends the request
// with the *candidate.PathError (no cooldown, no candidate would do
// better); else the failure cools c down (unless it is a kept-alive
// connection closed unanswered) and is logged, and a request
// that reached a connection and may not be replayed ends with a
// *NotReplayedError. nil: the next candidate may be tried.
func (e *Engine) tripFailed(r *Request, tl *tripLog, c candidate.Candidate, res tripResult, replay bool) error {
	pe := classifyRoundTrip(c, res, res.err)
	if pe.Tier == candidate.TierHost && pe.Phase == candidate.PhaseResponseHeader && c.SpeaksHTTP() && isTimeout(res.err) && e.unproven(c) {
		// No answer in time from a gateway that has answered nothing
		// since it was configured: the gateway is silent, not the
		// host's path; every host skips it until a check
		// proves it (one is kicked now).
		pe.Tier = candidate.TierGateway
	}
	if pe.Phase == candidate.PhaseLocal {
		e.cfg.Logger.Warn("out of local resources", "host", r.Host, "reason", pe.Err.Error())
		e.decide(r, tl, "", "local resources exhausted")
		return pe
	}
	var cu *upstream.ClosedUnansweredError
	if !errors.As(res.err, &cu) {
		// A kept-alive connection the peer closed unanswered is no sign
		// of the path's ill health (the peer's idle timeout ran out): nothing cools.
		e.fail(r.Host, r.Port, pe)
	}
	tl.fails = append(tl.fails, pe)
	// No complete response head reached us, so the client has seen
	// nothing: an idempotent (or explicitly replayable) request goes on to
	// the next candidate even when garbage or half a head arrived (RFC
	// 9110 §9.2.2); others stop here: they may have reached the origin.
	if !res.connected || replay {
		return nil
	}
	e.decide(r, tl, "", "not replayed")
	if idempotent(r.Method) {
		return &NotReplayedError{reason: "request body was streamed", err: pe}
	}
	return &NotReplayedError{err: pe}
}

// tripAnswer handles the response head of an attempt through c: an
// origin's answer, or a gateway's that is no failure of its own, is the
// request's (the route cache remembers c). A gateway's own
// failure answer (isGatewayFailure) cools c down (401, 407 and 508
// at the gateway tier, not delivered: wrong credentials or a loop fail
// every host alike; internal/lib/via) and is returned only
// when it was delivered and final (no candidate left or no replay);
// otherwise it is discarded and tripAnswer returns nil to try the next.
func (e *Engine) tripAnswer(lc *liveConfig, r *Request, tl *tripLog, c candidate.Candidate, resp *upstream.Response, final bool) *upstream.Response {
	e.markAnswered(c)
	if !c.SpeaksHTTP() || !isGatewayFailure(c, resp.StatusCode, resp.Get("Server")) {
		e.succeedMemo(r.Host, c, r.putMemo())
		e.decide(r, tl, lc.candName(c), "")
		return resp
	}
	pe := &candidate.PathError{Candidate: c, Phase: candidate.PhaseConnectResponse, Tier: candidate.TierHost, Status: resp.StatusCode, Sent: true,
		Err: errors.New("gateway answered " + strconv.Itoa(resp.StatusCode))}
	if resp.StatusCode == http.StatusProxyAuthRequired || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusLoopDetected {
		pe.Tier, pe.Sent = candidate.TierGateway, false // refused by the gateway, not delivered; 508: a loop (internal/lib/via)
	}
	e.fail(r.Host, r.Port, pe)
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
func (e *Engine) tripOnce(ctx context.Context, a attempt, r *Request, ab *attemptBody, replay bool) tripResult {
	if r.up == nil {
		r.upStore = upstream.Request{Method: r.Method, Origin: r.Origin, Absolute: r.Absolute, Authority: r.Authority,
			Addr: r.addr(), Header: r.Header, Length: r.Length,
			ResponseTimeout: r.respTimeout, ReuseUnreplayable: r.reuse, Interrupt: r.Interrupt, Into: r.Into, HeaderValid: r.HeaderValid,
			Close: r.close}
		r.up = &r.upStore
		if ab != nil { // Send reopens only a body it was given (no closure per GET)
			r.up.Reopen = func() io.Reader {
				if ab, _ := r.Body.open(); ab != nil {
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
// serve the request (SPEC HTTP-5c): 500, 502, 503, 504, 407, and the
// 401 tinyproxy 1.11 sends for wrong proxy credentials (it answers plain
// requests like CONNECT; recognised by its own Server header,
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
// socks-handshake, a SOCKS5 reply); other failures to connect →
// gateway-connect (gateway tier) or origin-connect (host tier); connected,
// then a timeout or a reset before the response → response-header, host
// tier, and so is anything the origin itself sent (direct or through a
// SOCKS5 tunnel); an http/https gateway that closed or answered garbage
// before its response → connect-response, gateway tier.
func classifyRoundTrip(c candidate.Candidate, res tripResult, err error) *candidate.PathError {
	var dialed *candidate.PathError
	if !res.connected && errors.As(err, &dialed) {
		return dialed // the dialer's own phase: TLS, SOCKS5 handshake or reply
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

// closeResp discards a response that is not passed on.
func closeResp(resp *upstream.Response) {
	if resp != nil {
		resp.Body.Close()
	}
}
