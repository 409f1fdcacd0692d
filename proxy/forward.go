package proxy

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/ctxdone"
	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
	"github.com/dual-proxy/dual-proxy/proxy/upstream"
)

// forward serves one absolute-form plain HTTP request (SPEC HTTP-1..HTTP-6):
// read the body (buffered up to MaxReplayBody, else streamed), send
// it through the candidates (replay rules: trip.go), and
// stream the answer with a flush per read (response.go). It reports
// whether the client connection can carry another request.
func (s *Server) forward(c net.Conn, br *bufio.Reader, bw *bufio.Writer, head *httpmsg.RequestHead, cc *connCtx) bool {
	ps := cc.scratch()
	if err := ps.target.parse(head.Target, head.Method); err != nil {
		writeSimple(bw, 400, err.Error()+"\n", nil)
		return false
	}
	body := &ps.body
	err := s.readRequestBody(c, br, bw, head, cc, body)
	if body.reserved > 0 {
		defer s.releaseBody(body.reserved)
	}
	if err != nil {
		var se *httpmsg.StatusError
		if errors.As(err, &se) {
			writeSimple(bw, se.Status, se.Msg+"\n", nil)
		}
		return false
	}
	req := s.prepareRequest(c, head, cc, ps)

	ctx, cancel := cc.get(s.baseCtx)
	var watch *clientWatch // nil-safe stop; no func value per request
	if body.Rest == nil {
		// The client sent the whole request: watch its connection so a
		// client that hangs up aborts the upstream request (no cooldown).
		// A watch that starts clears the idle deadline first, so a
		// request longer than idleTimeout is still watched.
		watch = s.watches.watchInto(&ps.watch, c, br, cancel, cc.idleArmed)
	}
	resp, err := s.engine.Forward(ctx, req)
	if err != nil {
		watch.stop() // the connection ends: no deadline to track
		answerTripError(bw, err)
		return false
	}
	ok, n := writeResponse(bw, resp, head)
	s.engine.Counters().HTTPResponseBytes.Add(uint64(n))
	resp.Body.Close()
	if watch.stopRan() {
		cc.idleArmed = false // the watch's stop cleared the deadline
	}
	// Another request may follow only when this one was read to its end:
	// a streamed body the upstream did not consume leaves client bytes on
	// the connection (and possibly a reader still at work), so close.
	if !ok || !head.KeepAlive || !body.Finished() || ctxdone.Ended(ctx) {
		return false
	}
	// Nothing of this request is used any more: the next one reuses its
	// head and scratch state.
	ps.head = head
	return true
}

// readRequestBody reads the request body into body (buffered up to
// MaxReplayBody so a failed attempt can be replayed, else the rest
// streams), with the idle deadline as
// the bound of a client that stalls mid-body; a request without a body
// sets and clears no deadline. Errors are body.read's (a
// *httpmsg.StatusError is answered by forward); body.reserved is set
// either way and is the caller's to release.
func (s *Server) readRequestBody(c net.Conn, br *bufio.Reader, bw *bufio.Writer, head *httpmsg.RequestHead, cc *connCtx, body *body) error {
	hasBody := head.Chunked || head.ContentLength > 0
	if hasBody {
		c.SetReadDeadline(time.Now().Add(idleTimeout)) // a client that stalls mid-body
	}
	err := body.read(br, bw, head, s.reserveBody)
	if hasBody {
		c.SetReadDeadline(time.Time{})
		cc.idleArmed = false
	}
	return err
}

// prepareRequest fills the connection's request for the target and body
// just read (no allocation but a streamed body's deadline func): the
// end-to-end header with this proxy's Via (internal/lib/via), the
// loopback flag of the host (kept while the host repeats), and the
// connection's interrupter, route-cache memo and response to read into.
func (s *Server) prepareRequest(c net.Conn, head *httpmsg.RequestHead, cc *connCtx, ps *plainScratch) *engine.Request {
	t, body := &ps.target, &ps.body
	if body.Rest != nil {
		body.rest.touch = func() { c.SetReadDeadline(time.Now().Add(idleTimeout)) }
	}
	ps.header = appendOutgoingHeader(ps.header[:0], head, s.via.Entry())
	req := &ps.req
	*req = engine.Request{
		Method:    head.Method,
		Authority: t.authority,
		Host:      t.host,
		Port:      t.port,
		Origin:    t.origin,
		Absolute:  t.absolute,
		Header:    ps.header,
		Body:      &body.Body,
		Length:    body.length(head),
		Interrupt: cc,
		Memo:      &ps.memo,
		Into:      &ps.resp,
		// The fields come from head, which ReadRequestHead checked as
		// upstream's check would (FuzzOutgoingHeaderValid).
		HeaderValid: true,
	}
	return req
}

// length is the Content-Length to send upstream: the buffered size, the
// client's Content-Length for a streamed body, or -1 (chunked upstream) for
// a chunked body that is streamed.
func (b *body) length(head *httpmsg.RequestHead) int64 {
	switch {
	case b.Rest == nil:
		return int64(len(b.Buf))
	case head.Chunked:
		return -1
	}
	return head.ContentLength
}

// answerTripError answers a request Engine.Forward could not serve: nothing
// when the client left (errClientGone), 503 for this machine's own
// resources (PhaseLocal), else 502, with NonIdempotentBody or the reason
// for a request that is not replayed (its body may have reached the
// origin, so another attempt could repeat a side effect).
func answerTripError(bw *bufio.Writer, err error) {
	if errors.Is(err, errClientGone) {
		return
	}
	if candidate.IsLocal(err) {
		writeSimple(bw, http.StatusServiceUnavailable, localAnswer(err), nil)
		return
	}
	msg := "dual-proxy: " + err.Error() + "\n"
	var ne *engine.NotReplayedError
	if errors.As(err, &ne) {
		msg = ne.Answer()
	}
	writeSimple(bw, http.StatusBadGateway, msg, nil)
}

// plainScratch is the per-request state of one client connection's plain
// requests, reused by each (seven allocations, ≈ 1.5 KiB, per
// request before). A connection's requests are sequential, and forward
// reports that another may follow only when nothing of the last one is in
// use any more: no attempt reads its body, its client watch stopped, the
// upstream exchange ended.
type plainScratch struct {
	target target
	body   body
	req    engine.Request
	watch  clientWatch
	header []httpmsg.Field
	memo   engine.ConnMemo // what the engine remembers for the next request
	// resp holds the answer of each attempt: an attempt's response is
	// closed before the next attempt (Engine.Forward) and the request's
	// before forward reports that another request may follow.
	resp upstream.Response
	// head is the last request's head, free for the next read
	// (nextHead), or nil.
	head *httpmsg.RequestHead
}

// scratch returns the connection's plainScratch, made on first use (a
// connection that only tunnels never needs one).
func (cc *connCtx) scratch() *plainScratch {
	if cc.ps == nil {
		cc.ps = &plainScratch{}
	}
	return cc.ps
}

// get returns the connection's context, derived from parent on first use.
func (cc *connCtx) get(parent context.Context) (context.Context, context.CancelCauseFunc) {
	if cc.ctx == nil {
		cc.ctx, cc.cancel = context.WithCancelCause(parent)
		context.AfterFunc(cc.ctx, cc.fire)
	}
	return cc.ctx, cc.cancel
}

// fire is the context's AfterFunc: the armed exchange is interrupted.
func (cc *connCtx) fire() {
	cc.mu.Lock()
	cc.ended = true
	f := cc.armed
	cc.armed = nil
	cc.mu.Unlock()
	if f != nil {
		f()
	}
}

// Arm implements upstream.Interrupter.
func (cc *connCtx) Arm(interrupt func()) {
	cc.mu.Lock()
	if cc.ended {
		cc.mu.Unlock()
		interrupt()
		return
	}
	cc.armed = interrupt
	cc.mu.Unlock()
}

// Disarm implements upstream.Interrupter.
func (cc *connCtx) Disarm() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.armed = nil
	return !cc.ended
}

// appendOutgoingHeader appends to out the client's header minus
// hop-by-hop fields (RFC 9110 §7.6.1; Proxy-Authorization is for this hop
// only, a gateway's credentials are set per attempt), Expect (answered by the
// proxy, which reads the body before choosing a path) and framing fields
// (set per attempt), in the client's order, with
// this proxy's Via entry last (RFC 9110 §7.6.3; loop detection, internal/lib/via).
// Host is set from the target when sending. One slice, no header map, and
// forward passes the connection's slice of its last request.
func appendOutgoingHeader(out []httpmsg.Field, head *httpmsg.RequestHead, via string) []httpmsg.Field {
	for f := range httpmsg.EndToEnd(head.Fields) {
		// Names are tokens (ASCII): no Unicode folding needed.
		if !httpmsg.EqualFoldASCII(f.Name, "Expect") && !httpmsg.EqualFoldASCII(f.Name, "Content-Length") && !httpmsg.EqualFoldASCII(f.Name, "Host") {
			out = append(out, f)
		}
	}
	return append(out, httpmsg.Field{Name: "Via", Value: via})
}

// localAnswer is the 503 body for a request or tunnel that failed on this
// machine's resources (candidate.IsLocal): it says so, so nobody blames
// the gateway.
func localAnswer(err error) string {
	cause := err.Error()
	var pe *candidate.PathError
	if errors.As(err, &pe) {
		cause = pe.Err.Error()
	}
	return "dual-proxy: out of local resources on the proxy's machine (not a gateway or origin failure): " + cause + "\n"
}
