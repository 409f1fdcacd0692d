package engine

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
	"github.com/dual-proxy/dual-proxy/proxy/dial"

	"github.com/dual-proxy/dual-proxy/proxy/route"
	"github.com/dual-proxy/dual-proxy/proxy/upstream"
)

// DialContext opens a TCP path to addr ("host:port", IPv6 bracketed)
// through the engine's candidate selection, exactly like a CONNECT tunnel
// (SPEC OPS-4): candidates in plan order, staggered
// racing, the TLS probe on port 443 without a cache hit, cooldowns and the
// per-host cache updated. The returned connection carries raw bytes to the
// destination (run TLS over it for https). It has the signature of
// net.Dialer.DialContext, so it fits http.Transport.DialContext.
//
// network must be "tcp", "tcp4" or "tcp6" (the family is decided by the
// path, not by network). Errors: *net.OpError for a bad network or
// address, *AllFailedError when no candidate opened a path, or the
// context's error when ctx ended first.
func (e *Engine) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("dual-proxy dials TCP only")}
	}
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	host, err := route.NormalizeHost(h)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("bad port " + strconv.Quote(p))}
	}
	conn, _, err := e.Open(dial.WithVia(ctx, e.via.Entry()), host, port)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return conn, nil
}

// Transport is an http.RoundTripper that sends requests through an
// Engine's candidate selection, sharing its per-host cache,
// cooldowns and health state with the proxy server using the same engine.
//
//   - https:// URLs: an http.Transport whose DialContext is
//     Engine.DialContext; TLS runs end to end to the origin over the
//     selected path (a CONNECT tunnel through a gateway, or direct).
//     HTTP/2 is negotiated when the origin offers it.
//   - http:// URLs: the proxy's own plain-HTTP path:
//     a body of at most MaxReplayBody (8 MiB) is buffered so the replay
//     rules apply; a larger body is streamed once through the first
//     candidate. Hop-by-hop fields (RFC 9110 §7.6.1) are removed and Host is
//     set to the URL's host (Request.Host overrides are not used). A
//     method, field name, field value, target or host that could inject
//     header lines (CR, LF, NUL, other control characters; names that are
//     not tokens) is refused before anything is dialled, as net/http does:
//     the error wraps upstream.ErrInvalidRequest.
//
// The proxy has one HTTP/1.1 client, proxy/upstream: plain forwarding,
// health checks and these http:// requests all go through it. The
// http.Transport stays for https:// only, because upstream writes requests
// to gateways and origins in the clear: it does no TLS to origins and no
// HTTP/2, which https channels negotiate, and net/http's TLS session
// resumption and HTTP/2 streams are what a pool's many calls to one https
// channel want. The http.Request and http.Response at this boundary are
// the RoundTripper the pool is given (it gets nothing of proxy/upstream):
// roundTripPlain turns the request into the forwarding path's own (the
// replay rules of a client's plain request apply) and httpResponse the
// answer back.
//
// Other schemes are an error. Create it with Engine.RoundTripper,
// Engine.PoolRoundTripper or as &Transport{Engine: e}; fields must not
// change after the first request.
// Safe for concurrent use. Reuse one Transport: its https connections are
// pooled (close them with CloseIdleConnections).
type Transport struct {
	// Engine selects the path; required.
	Engine *Engine
	// TLSClientConfig configures TLS to https:// origins (RootCAs for
	// tests); nil: system roots. It is cloned.
	TLSClientConfig *tls.Config
	// ResponseTimeout bounds the wait for a response head after the request
	// was sent: 0 is the engine's --response-timeout-ms;
	// negative is no such bound — the request's context (its deadline)
	// governs, as the model pool's calls need: they wait minutes for a
	// non-streamed answer under their own response_timeout_ms (a slow
	// model is not a dead path).
	ResponseTimeout time.Duration
	// ReuseConnections lets http:// requests that are not replayed (POST…)
	// take idle keep-alive connections. A reused connection that fails is
	// retried on a fresh one only when not one byte of the request was
	// written (provably not delivered); after that the error is returned
	// and the request is never resent by the Transport (proxy/upstream).
	// A reused connection the peer closed after the request and before one
	// byte of the answer fails with an error that has the method
	// ClosedUnanswered() bool (upstream.ClosedUnansweredError; for
	// https:// over HTTP/1.1 too), so a caller may send the request once
	// more with Close set: a request with Close set takes a connection of
	// its own, never an idle one (a stale kept-alive connection would
	// fail it for nothing). https:// connections are
	// kept alive by net/http either way.
	ReuseConnections bool
	// Caller names who sends the requests when it reports their failure
	// itself: "pool" for the model pool, which logs a member's failure and
	// fails over itself. A request no candidate served then logs
	// no "no candidate left" warning and its decision is logged at debug;
	// the status document's decision carries it as "caller". "" for
	// other users of the Go API.
	Caller string

	once sync.Once
	tls  *http.Transport
	// fresh: httpsFresh's transport, made once.
	freshOnce sync.Once
	fresh     *http.Transport
}

// RoundTripper returns a new Transport routing through e.
func (e *Engine) RoundTripper() *Transport { return &Transport{Engine: e} }

// PoolRoundTripper returns the Transport for the model pool (SPEC POOL-17):
// like RoundTripper, but the caller's context governs how long a response
// may take (ResponseTimeout negative: the pool's first_output_timeout_ms
// and response_timeout_ms, never --response-timeout-ms) and keep-alive
// connections to http:// channels are reused (ReuseConnections).
func (e *Engine) PoolRoundTripper() *Transport {
	return &Transport{Engine: e, ResponseTimeout: -1, ReuseConnections: true, Caller: "pool"}
}

// callerKey is the context key of Transport.Caller, which reaches the
// tunnel an https:// request opens through DialContext (net/http dials
// with the request's context values).
type callerKey struct{}

// callerOf is the Transport.Caller ctx carries, or "".
func callerOf(ctx context.Context) string {
	c, _ := ctx.Value(callerKey{}).(string)
	return c
}

// https returns the transport for https:// URLs.
func (t *Transport) https() *http.Transport {
	t.once.Do(func() {
		t.tls = &http.Transport{
			Proxy:                 nil, // the engine is the proxy; never the environment's
			DialContext:           t.Engine.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          256,
			MaxIdleConnsPerHost:   32,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   t.Engine.live.Load().cfg.ConnectTimeout,
			ResponseHeaderTimeout: t.Engine.live.Load().cfg.ResponseTimeout,
		}
		switch {
		case t.ResponseTimeout < 0:
			t.tls.ResponseHeaderTimeout = 0 // the request's context governs
		case t.ResponseTimeout > 0:
			t.tls.ResponseHeaderTimeout = t.ResponseTimeout
		}
		if t.TLSClientConfig != nil {
			t.tls.TLSClientConfig = t.TLSClientConfig.Clone()
		}
	})
	return t.tls
}

// RoundTrip sends req (see Transport). The request body is always closed.
// Errors: *AllFailedError when no candidate served the request; for a
// non-idempotent request that may have reached the origin, an error whose
// text starts with "non-idempotent request may have been delivered; not
// replayed" (a replay could repeat its side effect); the context's error
// when it ended.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		closeReqBody(req)
		return nil, errors.New("proxy: request has no URL")
	}
	if t.Caller != "" && callerOf(req.Context()) != t.Caller {
		req = req.WithContext(context.WithValue(req.Context(), callerKey{}, t.Caller))
	}
	switch req.URL.Scheme {
	case "https":
		return t.roundTripTLS(req)
	case "http":
		return t.roundTripPlain(req)
	}
	closeReqBody(req)
	return nil, errors.New("proxy: unsupported scheme " + strconv.Quote(req.URL.Scheme))
}

// roundTripTLS sends an https:// request with net/http. For a Transport
// with ReuseConnections (the pool's) a request with Close set
// goes on a connection of its own (a Transport without keep-alives), and a
// request that failed on a reused HTTP/1.1 connection before one byte of
// the answer, not by its context or a timeout, fails with
// *upstream.ClosedUnansweredError, as on the plain path. net/http resends
// no POST itself after it was written (its errServerClosedIdle); HTTP/2
// resends what the server refused unprocessed on its own.
func (t *Transport) roundTripTLS(req *http.Request) (*http.Response, error) {
	if !t.ReuseConnections {
		return t.https().RoundTrip(req)
	}
	if req.Close {
		return t.httpsFresh().RoundTrip(req)
	}
	var reusedH1, answered atomic.Bool
	ctx := httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) {
			tc, ok := i.Conn.(*tls.Conn)
			reusedH1.Store(i.Reused && ok && tc.ConnectionState().NegotiatedProtocol != "h2")
		},
		GotFirstResponseByte: func() { answered.Store(true) },
	})
	resp, err := t.https().RoundTrip(req.WithContext(ctx))
	var ne net.Error
	if err != nil && reusedH1.Load() && !answered.Load() && req.Context().Err() == nil && !(errors.As(err, &ne) && ne.Timeout()) {
		return nil, &upstream.ClosedUnansweredError{Err: err}
	}
	return resp, err
}

// httpsFresh returns the transport for https:// requests with Close set:
// https's settings without keep-alives.
func (t *Transport) httpsFresh() *http.Transport {
	t.freshOnce.Do(func() {
		t.fresh = t.https().Clone()
		t.fresh.DisableKeepAlives = true
	})
	return t.fresh
}

// CloseIdleConnections closes idle https connections of this Transport
// and idle plain-HTTP upstream connections of its engine.
func (t *Transport) CloseIdleConnections() {
	if t.tls != nil {
		t.tls.CloseIdleConnections()
	}
	t.Engine.CloseIdle()
}

func closeReqBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// roundTripPlain sends an http:// request through Engine.Forward.
func (t *Transport) roundTripPlain(req *http.Request) (*http.Response, error) {
	u := *req.URL
	u.User = nil // the client has turned userinfo into Authorization already
	host, err := route.NormalizeHost(u.Hostname())
	if err != nil {
		closeReqBody(req)
		return nil, errors.New("proxy: bad host: " + err.Error())
	}
	port := 80
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
			closeReqBody(req)
			return nil, errors.New("proxy: bad port " + strconv.Quote(p))
		}
	}
	hdr := req.Header.Clone()
	if hdr == nil {
		hdr = http.Header{}
	}
	httpmsg.RemoveHopByHop(hdr)
	hdr.Del("Content-Length")
	hdr.Del("Host")
	fields := make([]httpmsg.Field, 0, len(hdr)+1)
	for _, k := range slices.Sorted(maps.Keys(hdr)) { // sorted, as net/http writes them
		for _, v := range hdr[k] {
			fields = append(fields, httpmsg.Field{Name: k, Value: v})
		}
	}
	fields = append(fields, httpmsg.Field{Name: "Via", Value: t.Engine.via.Entry()})

	// A request with Close set takes a connection of its own and closes it
	// after the answer (the pool's resend after a kept-alive connection
	// closed unanswered).
	origin := u.RequestURI() // the path as net/url re-encoded it
	r := &Request{Method: req.Method, Authority: u.Host, Host: host, Port: port, Origin: origin, Absolute: "http://" + u.Host + origin,
		Header: fields, Body: &Body{},
		respTimeout: t.ResponseTimeout, reuse: t.ReuseConnections && !req.Close, close: req.Close, caller: t.Caller}
	if r.Method == "" {
		r.Method = http.MethodGet
	}
	streamed := false
	if req.Body != nil && req.Body != http.NoBody {
		if req.ContentLength > MaxReplayBody {
			r.Body, r.Length, streamed = &Body{Rest: req.Body}, req.ContentLength, true
		} else {
			buf, err := io.ReadAll(io.LimitReader(req.Body, MaxReplayBody+1))
			if err != nil {
				req.Body.Close()
				return nil, err
			}
			if len(buf) > MaxReplayBody {
				// Unknown length that grew past the limit: the rest is
				// streamed once, chunked upstream.
				r.Body, r.Length, streamed = &Body{Buf: buf, Rest: req.Body}, -1, true
			} else {
				req.Body.Close()
				r.Body.Buf, r.Length = buf, int64(len(buf))
			}
		}
	}
	resp, err := t.Engine.Forward(req.Context(), r)
	if err != nil {
		if streamed {
			req.Body.Close()
		}
		if ctxErr := req.Context().Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, err
	}
	hr := httpResponse(resp)
	hr.Request = req
	if streamed {
		hr.Body = &closeBoth{ReadCloser: hr.Body, also: req.Body}
	}
	return hr, nil
}

// httpResponse is r as net/http.ReadResponse would have returned it, for
// the RoundTripper (the pool gets an http.RoundTripper, nothing of
// proxy/upstream): keys canonical, Transfer-Encoding in TransferEncoding
// instead of the header, one Content-Length kept (none for a chunked
// body). Unlike net/http it keeps a Connection field that holds "close"
// (so RemoveHopByHop still finds the fields it names), adds
// no Cache-Control for "Pragma: no-cache" and leaves Trailer empty (the
// trailer section is read and dropped).
func httpResponse(r *upstream.Response) *http.Response {
	hr := &http.Response{
		Status:     strconv.Itoa(r.StatusCode),
		StatusCode: r.StatusCode,
		Proto:      "HTTP/1." + strconv.Itoa(r.Minor), ProtoMajor: 1, ProtoMinor: r.Minor,
		Header:        make(http.Header, len(r.Fields)),
		ContentLength: r.ContentLength,
		Close:         r.Close,
		Body:          r.Body,
	}
	if r.Reason != "" {
		hr.Status += " " + r.Reason
	}
	if r.Chunked {
		hr.TransferEncoding = []string{"chunked"}
	}
	for _, f := range r.Fields {
		switch k := http.CanonicalHeaderKey(f.Name); k {
		case "Transfer-Encoding":
		case "Content-Length":
			if (!r.Chunked || r.NoBody) && hr.Header[k] == nil {
				hr.Header[k] = []string{f.Value}
			}
		default:
			hr.Header[k] = append(hr.Header[k], f.Value)
		}
	}
	return hr
}

// closeBoth closes the request body along with the response body, so a
// streamed request body is closed only once the exchange is over.
type closeBoth struct {
	io.ReadCloser
	also io.Closer
}

func (c *closeBoth) Close() error {
	err := c.ReadCloser.Close()
	c.also.Close()
	return err
}
