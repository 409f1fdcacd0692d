// Package upstream is the HTTP/1.1 client of plain forwarding: it sends one
// request through one candidate (an http or https gateway, in absolute-form
// with Proxy-Authorization; or direct or through a SOCKS5
// tunnel, in origin-form) and returns the response with its body
// streaming from the connection.
//
// It runs on the caller's goroutine (no reader/writer goroutines per
// connection, unlike net/http.Transport, whose hand-offs cost ≈ 15 % of the
// plain path's CPU, see docs/BENCHMARKS.md) and reports exactly what replay
// rules need: was a connection established, was it reused.
// Which candidate to try, and whether to try another, is the caller's
// business (proxy.Engine).
//
// Idle connections are pooled per (candidate, address): at most
// maxIdlePerKey each and maxIdle in all, closed IdleTimeout (90 s) after they became idle. Only
// requests that may be replayed take a pooled connection, since a pooled
// connection may have been closed by its peer meanwhile: such a failure
// before any response byte is retried once on a fresh connection, which is
// only allowed for replayable requests. Other requests dial, unless they set
// Request.ReuseUnreplayable (the model pool's calls): then they
// take a pooled connection too, and a failure on it is retried on a fresh
// connection only when not one byte of the request was written — the
// request provably never left, the rule net/http's Transport applies to
// non-idempotent requests. A close by the peer after the request was
// written and before one byte of the answer (an EOF or a reset: a server
// whose idle timeout fired as the request arrived) is returned as a
// *ClosedUnansweredError, any other failure before the response as it is,
// with Connected true; neither is resent here: the caller decides
// (stale.go).
package upstream

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
	"github.com/dual-proxy/dual-proxy/internal/lib/netutil"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

const (
	maxIdlePerKey = 64
	maxIdle       = 512
	// DefaultIdleTimeout is how long an idle pooled connection is kept
	// when Client.IdleTimeout is zero.
	DefaultIdleTimeout = 90 * time.Second
)

// Client sends requests upstream and pools idle connections. Set Dial and
// ResponseTimeout before the first Send; the zero value of the rest is
// ready. Safe for concurrent use.
type Client struct {
	// Dial opens the connection on which a request for the origin addr
	// ("host:port") is written through cand: to the gateway when
	// cand.SpeaksHTTP(), else to the origin (direct, or a SOCKS5 tunnel);
	// dial.Dialer.Forward does this. Send bounds it with the attempt's
	// connect timeout. Its errors are returned in Result.Err as they are
	// (a *candidate.PathError keeps its phase and tier).
	Dial func(ctx context.Context, cand candidate.Candidate, addr string) (net.Conn, error)
	// ResponseTimeout bounds the wait for the response head after the
	// request was written, and every write.
	ResponseTimeout time.Duration
	// IdleTimeout is how long an idle pooled connection is kept before it
	// is closed, even when no request comes; zero: DefaultIdleTimeout.
	IdleTimeout time.Duration

	once sync.Once
	pool connPool
}

// Request is one request to send. Header holds end-to-end fields only
// (the caller removed hop-by-hop fields, Host and Content-Length), in the
// order they are written; Send writes Host, Proxy-Authorization and the
// framing itself.
type Request struct {
	Method string
	// Origin is the origin-form target ("/a?b", "*"), sent to an origin;
	// Absolute the absolute-form one ("http://host/a?b"), sent to a
	// gateway; Authority the Host value. Addr is the origin's "host:port"
	// for the dial of a direct or SOCKS5 path.
	Origin, Absolute, Authority, Addr string
	Header                            []httpmsg.Field
	// Length is the Content-Length to send; -1 sends the body chunked.
	// A POST, PUT or PATCH with Length 0 gets "Content-Length: 0".
	Length int64
	// ResponseTimeout, when non-zero, replaces Client.ResponseTimeout for
	// the wait for this request's response head; negative: no such bound,
	// the context governs (the model pool's calls carry their own
	// deadlines).
	ResponseTimeout time.Duration
	// ReuseUnreplayable lets a request that is not replayed (Send's reuse
	// false) take a pooled connection under the not-one-byte-written rule
	// of the package comment.
	ReuseUnreplayable bool
	// Interrupt, when set, watches the context given to Send in place of
	// a context.AfterFunc per request (two allocations and an insert into
	// the context's children).
	Interrupt Interrupter
	// HeaderValid says that every field of Header has a token for a name
	// and a value without control characters (CR, LF, NUL …; HTAB
	// allowed), what check verifies field by field: the caller's parser
	// checked them already (the proxy's request heads, httpmsg), and
	// check skips them (an agent's head is ≈ 1-2 KiB of
	// fields, scanned twice per request). The method, targets and Host
	// value are checked regardless.
	HeaderValid bool
	// Into, when set, is where the response is read (its field slice
	// reused): a caller that sends one request after another and is done
	// with each response, its body closed, before the next Send (the
	// proxy's client connections; two allocations per request
	// less). nil: a new Response.
	Into *Response
	// Close sends "Connection: close" (RFC 9112 §9.6): the connection
	// serves this one exchange and is closed with the response body, never
	// pooled (the health check's single request).
	Close bool
	// Reopen returns a fresh reader over the whole body, for the one retry
	// on a fresh connection after a pooled one turned out closed; nil when
	// the body cannot be read again (Send then only reuses connections when
	// asked to, and the caller must not ask).
	Reopen func() io.Reader
}

// Interrupter ends a request's I/O when the context given to Send ends,
// as context.AfterFunc would, for a caller that holds one such watch for
// many requests (the proxy: one per client connection). Send calls Arm
// with the function that interrupts the connection before anything is
// written; Arm calls it at once (on the caller's goroutine) when the
// context has already ended, else once it ends. Disarm, called once the
// exchange is over (an error, or the response body's release), undoes
// Arm and reports false when the function has run or is running: the
// connection is not reused then. One exchange is armed at a time.
type Interrupter interface {
	Arm(interrupt func())
	Disarm() bool
}

// watch is one exchange's interruption: r.Interrupt, or a
// context.AfterFunc's stop.
type watch struct {
	intr Interrupter
	stop func() bool
}

// arm starts watching ctx for uc.
func arm(ctx context.Context, r *Request, uc *upConn) watch {
	if r.Interrupt != nil {
		r.Interrupt.Arm(uc.interrupt)
		return watch{intr: r.Interrupt}
	}
	return watch{stop: context.AfterFunc(ctx, uc.interrupt)}
}

// end stops watching; false when the interruption has run or is running.
func (w watch) end() bool {
	if w.intr != nil {
		return w.intr.Disarm()
	}
	return w.stop()
}

// Response is the final answer to one Send (interim 1xx answers are
// skipped): its head as received, fields in wire order (the proxy writes
// them on without a header map), and its body. Close is set too when the
// request was not fully sent (the connection is never reused then).
type Response struct {
	httpmsg.ResponseHead
	// Body streams from the upstream connection by the head's framing
	// (empty when NoBody); closing it returns the connection to the pool
	// when the exchange completed cleanly.
	Body io.ReadCloser
	body upBody // Body's storage: one allocation for both
}

// Result is the outcome of one Send. Exactly one of Resp and Err is set.
type Result struct {
	Resp *Response
	Err  error
	// Connected is true when a TCP connection to the gateway or origin
	// was established (request bytes may have reached it).
	Connected bool
}

// CloseIdle closes every idle pooled connection.
func (c *Client) CloseIdle() { c.idlePool().closeAll() }

// idlePool returns the pool with its lifetime set from IdleTimeout.
func (c *Client) idlePool() *connPool {
	c.once.Do(func() {
		c.pool.ttl = c.IdleTimeout
		if c.pool.ttl <= 0 {
			c.pool.ttl = DefaultIdleTimeout
		}
	})
	return &c.pool
}

// errStaleConn marks a failure on a reused connection before any byte of
// the response arrived (the peer had closed it while it sat idle).
var errStaleConn = errors.New("reused connection closed by peer")

// errNotQuiet marks a reused connection on which bytes or EOF had arrived
// while it sat idle: it is closed before any byte of the request
// was written, so any request may take the next one.
var errNotQuiet = errors.New("reused connection not quiet")

// Send performs one attempt of r through cand: body (nil: none) is the
// request body, connectTimeout bounds the dial, and reuse allows a pooled
// connection (only for requests the caller may replay; see the package
// comment). A failure to dial is a Result with Connected false; so is a
// request Send refuses to write (ErrInvalidRequest), which is the caller's
// fault, not the candidate's.
func (c *Client) Send(ctx context.Context, cand candidate.Candidate, r *Request, body io.Reader, connectTimeout time.Duration, reuse bool) Result {
	if err := r.check(); err != nil {
		return Result{Err: err}
	}
	// Pooled per path end: the gateway for an HTTP proxy, else the origin
	// (a SOCKS5 tunnel leads to one origin only).
	key := poolKey{cand.Key(), cand.Addr}
	if !cand.SpeaksHTTP() {
		key.end = r.Addr
	}
	if reuse || r.ReuseUnreplayable {
		for {
			uc := c.idlePool().get(key)
			if uc == nil {
				break
			}
			res := c.exchange(ctx, cand, r, body, uc, true, !reuse)
			if errors.Is(res.Err, errNotQuiet) {
				continue // nothing was written: the next idle connection, or a fresh one
			}
			if !errors.Is(res.Err, errStaleConn) {
				return res
			}
			if body != nil && r.Reopen != nil { // a fresh copy of the buffered body
				if body = r.Reopen(); body == nil {
					return res // cannot be sent again: the failure stands
				}
			}
			break
		}
	}
	dctx, cancel := context.WithTimeout(ctx, connectTimeout)
	conn, err := c.Dial(dctx, cand, r.Addr)
	cancel()
	if err != nil {
		return Result{Err: err}
	}
	uc := newUpConn(conn, key, c.ResponseTimeout)
	return c.exchange(ctx, cand, r, body, uc, false, false)
}

// headDeadline is when the wait for r's response head ends; zero: never
// (the context governs).
func (c *Client) headDeadline(r *Request) time.Time {
	d := c.ResponseTimeout
	if r.ResponseTimeout != 0 {
		d = r.ResponseTimeout
	}
	if d < 0 {
		return time.Time{}
	}
	return time.Now().Add(d)
}

// bodyBuffered reports whether resp's body needs no further read from
// the socket: none, or all of its Content-Length already buffered. The
// head's read deadline then stays armed (clearing it is a timer operation
// per request) and bounds nothing: the next exchange sets its
// own, and connPool.get clears one that passed while idle.
func bodyBuffered(resp *Response, uc *upConn) bool {
	return resp.NoBody || !resp.Chunked && resp.ContentLength >= 0 && int64(uc.br.Buffered()) >= resp.ContentLength
}

// sendPlain writes r on uc with conn.Write and sets the head's read
// deadline after it; check (a reused connection) first asks quiet, which
// is false when bytes or EOF arrived while it sat idle: nothing is
// written then. Connections that are no socket, and every connection where
// send has no read(2) of its own (Windows), take this path.
func (uc *upConn) sendPlain(c *Client, check bool, cand candidate.Candidate, r *Request, body io.Reader) (quiet bool, werr error) {
	if check && !uc.quiet() {
		return false, nil
	}
	if werr = writeRequest(uc.bw, cand, r, body); werr != nil {
		return true, werr
	}
	uc.headDeadline = c.headDeadline(r)
	uc.conn.SetReadDeadline(uc.headDeadline)
	return true, nil
}

// maxInterim bounds the 1xx answers read before the final one.
const maxInterim = 8

// exchange writes r on uc and reads the response head. strict (a reused
// connection for a request that is not replayed): only a failure before
// any byte was written is errStaleConn (retried on a fresh connection); the
// peer's close after that and before any answer byte is a
// *ClosedUnansweredError (closedUnanswered), returned.
func (c *Client) exchange(ctx context.Context, cand candidate.Candidate, r *Request, body io.Reader, uc *upConn, reused, strict bool) Result {
	res := Result{Connected: true}
	// The response body's Close reuses the connection only when ending
	// the watch keeps this from running (upBody.release): a cancelled
	// exchange's connection, its deadline in the past, is never pooled.
	w := arm(ctx, r, uc)
	fail := func(err error) Result {
		w.end()
		uc.conn.Close()
		if ce := context.Cause(ctx); ce != nil {
			err = ce
		}
		res.Err = err
		return res
	}
	before, got := uc.dw.written, uc.src.got
	quiet, werr := uc.send(c, reused, cand, r, body)
	if !quiet {
		return fail(errNotQuiet)
	}
	if werr != nil && reused && (!strict || uc.dw.written == before) {
		return fail(errStaleConn)
	}
	if werr != nil {
		// The origin may have answered early and stopped reading (413,
		// 401 during a large upload): that answer is the truthful one.
		uc.conn.SetReadDeadline(time.Now().Add(min(c.ResponseTimeout, 2*time.Second)))
		if resp, err := readFinal(uc, r.Method, r.Into); err == nil {
			uc.conn.SetReadDeadline(time.Time{})
			resp.Close = true // the request was not fully sent: never reuse
			resp.setBody(uc, c.idlePool(), w)
			res.Resp = resp
			return res
		} else if reused && strict && (uc.closedUnanswered(werr, got) || uc.closedUnanswered(err, got)) {
			return fail(&ClosedUnansweredError{Err: werr}) // the caller decides on a resend (stale.go)
		}
		return fail(werr)
	}
	resp, err := readFinal(uc, r.Method, r.Into)
	if err != nil {
		if reused && !strict && uc.br.Buffered() == 0 && (errors.Is(err, io.EOF) || netutil.IsClosed(err)) {
			return fail(errStaleConn)
		}
		if reused && strict && uc.closedUnanswered(err, got) {
			return fail(&ClosedUnansweredError{Err: err}) // the caller decides on a resend (stale.go)
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && ctx.Err() == nil {
			err = errHeaderTimeout
		}
		return fail(err)
	}
	resp.Close = resp.Close || r.Close
	if !uc.headDeadline.IsZero() && !bodyBuffered(resp, uc) {
		// No timeout once the body streams.
		uc.conn.SetReadDeadline(time.Time{})
		uc.headDeadline = time.Time{}
	}
	resp.setBody(uc, c.idlePool(), w)
	res.Resp = resp
	return res
}
