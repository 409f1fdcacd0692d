package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// MaxReplayBody is the largest request body (bytes) buffered so it can be
// replayed on another candidate (SPEC HTTP-2). Larger bodies, and chunked
// bodies that grow past it, are streamed once through the first candidate.
const MaxReplayBody = 8 << 20

// nonIdempotentBody is the exact 502 body when a non-idempotent request may
// have reached the origin and is not replayed (SPEC HTTP-3).
const nonIdempotentBody = "non-idempotent request may have been delivered; not replayed"

// forward serves one absolute-form plain HTTP request (SPEC HTTP-1..HTTP-6).
// It reports whether the client connection can carry another request.
func (s *Server) forward(c net.Conn, br *bufio.Reader, bw *bufio.Writer, head *requestHead) bool {
	u, err := url.Parse(head.target)
	if err != nil || !strings.EqualFold(u.Scheme, "http") || u.Host == "" {
		msg := "absolute-form http:// target required"
		if err == nil && strings.EqualFold(u.Scheme, "https") {
			msg = "https:// targets must use CONNECT"
		}
		writeSimple(bw, 400, msg+"\n", nil)
		return false
	}
	u.Scheme = "http"
	host, err := route.NormalizeHost(u.Hostname())
	if err != nil {
		writeSimple(bw, 400, "bad host\n", nil)
		return false
	}
	port := 80
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
			writeSimple(bw, 400, "bad port\n", nil)
			return false
		}
	}

	hdr := make(http.Header, len(head.fields))
	for _, f := range head.fields {
		hdr.Add(f.name, f.value)
	}
	removeHopByHop(hdr)
	hdr.Del("Expect") // answered here, below
	hdr.Del("Content-Length")

	body, replayable, bodyErr := s.readBody(br, bw, head)
	if bodyErr != nil {
		return false
	}
	req := &request{
		method:     head.method,
		url:        u,
		host:       host,
		port:       port,
		header:     hdr,
		body:       body,
		replayable: replayable,
		length:     head.contentLength,
	}
	if head.chunked {
		req.length = -1
		if replayable {
			req.length = int64(len(body.buf))
		}
	}
	resp, err := s.engine.roundTrip(s.baseCtx, req)
	if err != nil {
		status, msg := 502, "dual-proxy: "+err.Error()+"\n"
		var ne *notReplayedError
		if errors.As(err, &ne) {
			msg = nonIdempotentBody
		}
		writeSimple(bw, status, msg, nil)
		return false
	}
	defer resp.Body.Close()
	keep := writeResponse(bw, resp, head) && head.keepAlive && !body.unread()
	return keep
}

// readBody returns the request body: fully buffered (replayable) when it is
// at most MaxReplayBody bytes, else a stream that is read once. It answers
// "Expect: 100-continue" itself so a waiting client never deadlocks.
func (s *Server) readBody(br *bufio.Reader, bw *bufio.Writer, head *requestHead) (*body, bool, error) {
	var r io.Reader
	switch {
	case head.chunked:
		r = httputil.NewChunkedReader(br)
	case head.contentLength > 0:
		r = io.LimitReader(br, head.contentLength)
	default:
		return &body{}, true, nil
	}
	if head.expect100 {
		bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
		if err := bw.Flush(); err != nil {
			return nil, false, err
		}
	}
	if head.contentLength > MaxReplayBody {
		return &body{rest: r, br: br, chunked: false, remaining: head.contentLength}, false, nil
	}
	buf, err := io.ReadAll(io.LimitReader(r, MaxReplayBody+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(buf)) > MaxReplayBody {
		return &body{buf: buf, rest: r, br: br, chunked: true}, false, nil
	}
	if head.chunked {
		if err := skipTrailers(br); err != nil {
			return nil, false, err
		}
	}
	return &body{buf: buf}, true, nil
}

// skipTrailers consumes the trailer section after a chunked body (RFC 9112
// §7.1.2); trailers are not forwarded.
func skipTrailers(br *bufio.Reader) error {
	for i := 0; i < 128; i++ {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return nil
		}
	}
	return errors.New("too many trailer fields")
}

// body is a request body: buf is the buffered prefix; rest, when set, is the
// unbuffered remainder read once from the client.
type body struct {
	buf       []byte
	rest      io.Reader
	br        *bufio.Reader
	chunked   bool
	remaining int64
	consumed  bool // rest was read to EOF
}

// reader returns a fresh reader over the body. Without rest it can be
// called once per attempt; with rest only the first call is meaningful.
func (b *body) reader() io.Reader {
	if b.rest == nil {
		return bytes.NewReader(b.buf)
	}
	return io.MultiReader(bytes.NewReader(b.buf), &eofMark{r: b.rest, b: b})
}

// unread reports whether client body bytes may be left on the connection.
func (b *body) unread() bool { return b.rest != nil && !b.consumed }

type eofMark struct {
	r io.Reader
	b *body
}

func (e *eofMark) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		e.b.consumed = true
		if e.b.chunked && e.b.br != nil {
			if terr := skipTrailers(e.b.br); terr != nil {
				e.b.consumed = false
			}
		}
	}
	return n, err
}

// request is one plain HTTP request being forwarded.
type request struct {
	method     string
	url        *url.URL
	host       string // normalized host for routing
	port       int
	header     http.Header
	body       *body
	replayable bool  // body fully buffered
	length     int64 // -1 unknown
}

// idempotent reports whether method is idempotent (RFC 9110 §9.2.2).
func idempotent(method string) bool {
	switch method {
	case "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE":
		return true
	}
	return false
}

// notReplayedError stops the candidate loop: the request may have reached
// the origin and must not be sent again (SPEC HTTP-3).
type notReplayedError struct{ err error }

func (e *notReplayedError) Error() string { return nonIdempotentBody + ": " + e.err.Error() }
func (e *notReplayedError) Unwrap() error { return e.err }

// canReplay is the replay policy after the connection was established
// (SPEC HTTP-3).
func (e *Engine) canReplay(r *request) bool {
	if !r.replayable {
		return false
	}
	if idempotent(r.method) {
		return true
	}
	if e.cfg.RetryNonIdempotentAfterSend {
		return true
	}
	if e.cfg.RetryWithIdempotencyKey {
		return r.header.Get("Idempotency-Key") != "" || r.header.Get("X-Idempotency-Key") != ""
	}
	return false
}

// roundTrip sends r through the candidates in plan order and returns the
// first usable response (SPEC HTTP-3, HTTP-5c). Plain requests are never
// raced (ORD-6). The response body streams; the caller closes it.
func (e *Engine) roundTrip(ctx context.Context, r *request) (*http.Response, error) {
	var fails []error
	start := time.Now()
	decide := func(c string, errText string) {
		e.decisions.add(Decision{Time: start, Kind: "http", Host: r.host, Candidate: c, Failed: failures(fails), LatencyMS: ms(time.Since(start)), Error: errText})
	}
	atts, _ := e.plan(r.host, r.port)
	for i, a := range atts {
		c := a.cand
		last := i == len(atts)-1
		var connected bool
		trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected = true }}
		actx := context.WithValue(httptrace.WithClientTrace(ctx, trace), connectTimeoutKey{}, a.timeout)
		actx, cancel := context.WithCancel(actx)
		req := &http.Request{
			Method:        r.method,
			URL:           r.url,
			Proto:         "HTTP/1.1",
			ProtoMajor:    1,
			ProtoMinor:    1,
			Header:        r.header,
			Host:          r.url.Host,
			ContentLength: r.length,
		}
		if r.length != 0 {
			req.Body = io.NopCloser(r.body.reader())
		}
		req = req.WithContext(actx)
		resp, err := e.transport(c).RoundTrip(req)
		if err == nil && !c.Direct && isGatewayFailure(resp.StatusCode) {
			// SPEC HTTP-5c / CD-1: the gateway's own failure answer.
			tier := route.TierHost
			if resp.StatusCode == http.StatusProxyAuthRequired {
				tier = route.TierGateway
			}
			pe := &route.PathError{Candidate: c, Phase: route.PhaseConnectResponse, Tier: tier, Status: resp.StatusCode, Sent: true,
				Err: errors.New("gateway answered " + strconv.Itoa(resp.StatusCode))}
			e.fail(r.host, pe)
			fails = append(fails, pe)
			delivered := resp.StatusCode != http.StatusProxyAuthRequired
			if last || (delivered && !e.canReplay(r)) || (!delivered && !r.replayable) {
				// No replay: the gateway's answer is the truthful one.
				resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
				decide("", "gateway answer returned: "+strconv.Itoa(resp.StatusCode))
				return resp, nil
			}
			resp.Body.Close()
			cancel()
			continue
		}
		if err != nil {
			cancel()
			pe := classifyRoundTrip(c, connected, err)
			if ctx.Err() != nil {
				fails = append(fails, pe)
				break
			}
			e.fail(r.host, pe)
			fails = append(fails, pe)
			if connected && !e.canReplay(r) {
				decide("", "not replayed")
				return nil, &notReplayedError{err: pe}
			}
			continue
		}
		e.succeed(r.host, c)
		resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
		decide(c.String(), "")
		return resp, nil
	}
	e.allFailed(r.host)
	decide("", "all candidates failed")
	return nil, &AllFailedError{Host: r.host, Errs: fails}
}

// isGatewayFailure reports statuses by which a gateway says it could not
// serve the request (SPEC HTTP-5c, GW-4).
func isGatewayFailure(status int) bool {
	switch status {
	case 500, 502, 503, 504, http.StatusProxyAuthRequired:
		return true
	}
	return false
}

// classifyRoundTrip turns a transport error into a PathError (SPEC CD-1).
func classifyRoundTrip(c route.Candidate, connected bool, err error) *route.PathError {
	pe := &route.PathError{Candidate: c, Sent: connected, Err: err}
	switch {
	case !connected && c.Direct:
		pe.Phase, pe.Tier = route.PhaseOriginConnect, route.TierHost
	case !connected:
		pe.Phase, pe.Tier = route.PhaseGatewayConnect, route.TierGateway
	default:
		pe.Phase, pe.Tier = route.PhaseResponseHeader, route.TierHost
	}
	return pe
}

// cancelBody releases the attempt's context when the body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
