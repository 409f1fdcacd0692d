package proxy

import (
	"syscall"

	"bufio"
	"context"
	"errors"
	"golang.org/x/sys/unix"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"sync"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/httpmsg"
	"github.com/dual-proxy/dual-proxy/internal/netutil"
	"github.com/dual-proxy/dual-proxy/proxy/path"
)

// The upstream HTTP/1.1 client of plain forwarding. It runs on the serving
// goroutine (no reader/writer goroutines per connection, unlike
// net/http.Transport, whose hand-offs cost ≈ 15 % of the plain path's CPU,
// see docs/BENCHMARKS.md) and reports exactly what replay rules need: was
// a connection established, was it reused (SPEC HTTP-3).
//
// Idle connections are pooled per (candidate, address): at most
// maxIdlePerKey each and maxIdle in all, dropped after idleConnTimeout. Only
// requests that may be replayed take a pooled connection, since a pooled
// connection may have been closed by its peer meanwhile: such a failure
// before any response byte is retried once on a fresh connection, which is
// only allowed for replayable requests. Other requests always dial.

const (
	maxIdlePerKey   = 64
	maxIdle         = 512
	idleConnTimeout = 90 * time.Second
)

// upConn is one upstream connection with its buffers.
type upConn struct {
	conn  net.Conn
	lim   *headLimit // under br: bounds the response head
	br    *bufio.Reader
	bw    *bufio.Writer
	key   string
	since time.Time // idle since
}

// newUpConn wraps a fresh connection; writes extend a write deadline of
// writeIdle (a peer that stops reading our request fails instead of
// hanging, SPEC HTTP-4).
func newUpConn(conn net.Conn, key string, writeIdle time.Duration) *upConn {
	uc := &upConn{conn: conn, key: key, lim: &headLimit{r: conn, n: -1}}
	uc.br = bufio.NewReaderSize(uc.lim, 4096)
	uc.bw = bufio.NewWriterSize(&deadlineWriter{c: conn, idle: writeIdle}, 4096)
	return uc
}

// maxResponseHead bounds a response head (bytes), like net/http's
// Transport (10 MB there; agents' answers have small heads).
const maxResponseHead = 1 << 20

// errHeadTooLarge is a response head over maxResponseHead.
var errHeadTooLarge = errors.New("response head too large")

// headLimit limits reads to n bytes while n >= 0 (reading a head).
type headLimit struct {
	r io.Reader
	n int64
}

func (l *headLimit) Read(p []byte) (int, error) {
	if l.n < 0 {
		return l.r.Read(p)
	}
	if l.n == 0 {
		return 0, errHeadTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

// deadlineWriter sets a write deadline of idle before every write.
type deadlineWriter struct {
	c    net.Conn
	idle time.Duration
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.c.SetWriteDeadline(time.Now().Add(w.idle))
	return w.c.Write(p)
}

// quiet reports whether an idle connection has nothing to read: no
// buffered bytes, no unsolicited data and no EOF waiting in the socket (a
// peek that never blocks). Anything else would be read as the answer to
// the next request (response desync), so such a connection is dropped.
func (uc *upConn) quiet() bool {
	if uc.br.Buffered() > 0 {
		return false
	}
	sc, ok := uc.conn.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	quiet := false
	var b [1]byte
	rerr := rc.Read(func(fd uintptr) bool {
		n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		quiet = n < 0 && (err == unix.EAGAIN || err == unix.EWOULDBLOCK)
		return true // never wait
	})
	return rerr == nil && quiet
}

// connPool holds idle upstream connections, newest last per key.
type connPool struct {
	mu    sync.Mutex
	idle  map[string][]*upConn
	n     int
	swept time.Time // last sweep (at most every sweepEvery, and when full)
}

// sweepEvery is how often put drops expired idle connections of all keys,
// so connections to origins never asked again do not hold descriptors.
const sweepEvery = 30 * time.Second

// get returns an idle connection for key that is not too old, or nil.
func (p *connPool) get(key string) *upConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		l := p.idle[key]
		if len(l) == 0 {
			return nil
		}
		c := l[len(l)-1]
		p.idle[key] = l[:len(l)-1]
		p.n--
		if time.Since(c.since) < idleConnTimeout && c.quiet() {
			return c
		}
		c.conn.Close()
	}
}

// sweep closes idle connections older than idleConnTimeout (all keys);
// when the pool is still full it drops the oldest one. Called with mu held.
func (p *connPool) sweep() {
	now := time.Now()
	var oldestKey string
	var oldest time.Time
	for k, l := range p.idle {
		kept := l[:0]
		for _, c := range l {
			if now.Sub(c.since) >= idleConnTimeout {
				c.conn.Close()
				p.n--
				continue
			}
			kept = append(kept, c)
		}
		if len(kept) == 0 {
			delete(p.idle, k)
			continue
		}
		p.idle[k] = kept
		if oldestKey == "" || kept[0].since.Before(oldest) {
			oldestKey, oldest = k, kept[0].since
		}
	}
	if p.n >= maxIdle && oldestKey != "" {
		l := p.idle[oldestKey]
		l[0].conn.Close()
		p.idle[oldestKey] = l[1:]
		p.n--
	}
	p.swept = now
}

// put returns c to the pool, or closes it when the pool is full.
func (p *connPool) put(c *upConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idle == nil {
		p.idle = map[string][]*upConn{}
	}
	if p.n >= maxIdle || time.Since(p.swept) > sweepEvery {
		p.sweep()
	}
	if p.n >= maxIdle || len(p.idle[c.key]) >= maxIdlePerKey {
		c.conn.Close()
		return
	}
	c.since = time.Now()
	p.idle[c.key] = append(p.idle[c.key], c)
	p.n++
}

// closeAll closes every idle connection.
func (p *connPool) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, l := range p.idle {
		for _, c := range l {
			c.conn.Close()
		}
		delete(p.idle, k)
	}
	p.n = 0
}

// errStaleConn marks a failure on a reused connection before any byte of
// the response arrived (the peer had closed it while it sat idle).
var errStaleConn = errors.New("reused connection closed by peer")

// send performs one attempt of r through a.cand on the serving goroutine.
// The response body streams from the connection; closing it returns the
// connection to the pool when the exchange completed cleanly.
func (e *Engine) send(ctx context.Context, a attempt, r *request, ab *attemptBody, replay bool) tripResult {
	addr := a.cand.Addr
	if a.cand.Direct {
		addr = net.JoinHostPort(r.target.host, strconv.Itoa(r.target.port))
	}
	key := a.cand.Key() + "|" + addr
	if replay {
		if uc := e.conns.get(key); uc != nil {
			res := e.exchange(ctx, a, r, ab, uc, true)
			if !errors.Is(res.err, errStaleConn) {
				return res
			}
			if ab != nil { // a fresh copy of the buffered body
				ab, _ = r.body.open()
			}
		}
	}
	dctx := context.WithValue(ctx, connectTimeoutKey{}, a.timeout)
	conn, err := e.dialContext(dctx, "tcp", addr)
	if err != nil {
		return tripResult{err: err}
	}
	uc := newUpConn(conn, key, e.cfg.ResponseTimeout)
	return e.exchange(ctx, a, r, ab, uc, false)
}

// maxInterim bounds the 1xx answers read before the final one.
const maxInterim = 8

// exchange writes r on uc and reads the response head.
func (e *Engine) exchange(ctx context.Context, a attempt, r *request, ab *attemptBody, uc *upConn, reused bool) tripResult {
	res := tripResult{connected: true}
	var cancelled bool
	var mu sync.Mutex
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		cancelled = true
		mu.Unlock()
		uc.conn.SetDeadline(time.Unix(1, 0))
	})
	fail := func(err error) tripResult {
		stop()
		uc.conn.Close()
		if ce := context.Cause(ctx); ce != nil {
			err = ce
		}
		res.err = err
		return res
	}
	werr := writeRequest(uc.bw, a.cand, r, ab)
	if werr != nil && reused {
		return fail(errStaleConn)
	}
	if werr != nil {
		// The origin may have answered early and stopped reading (413,
		// 401 during a large upload): that answer is the truthful one.
		uc.conn.SetReadDeadline(time.Now().Add(min(e.cfg.ResponseTimeout, 2*time.Second)))
		if resp, err := readFinal(uc, r.method); err == nil {
			uc.conn.SetReadDeadline(time.Time{})
			resp.Close = true // the request was not fully sent: never reuse
			resp.Body = &upBody{ReadCloser: resp.Body, uc: uc, pool: &e.conns, stop: stop, cancelled: func() bool { return true }}
			res.resp = resp
			return res
		}
		return fail(werr)
	}
	uc.conn.SetReadDeadline(time.Now().Add(e.cfg.ResponseTimeout))
	resp, err := readFinal(uc, r.method)
	if err != nil {
		if reused && uc.br.Buffered() == 0 && (errors.Is(err, io.EOF) || netutil.IsClosed(err)) {
			return fail(errStaleConn)
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && ctx.Err() == nil {
			err = errHeaderTimeout
		}
		return fail(err)
	}
	uc.conn.SetReadDeadline(time.Time{})
	reusable := !resp.Close
	resp.Body = &upBody{ReadCloser: resp.Body, uc: uc, pool: &e.conns, stop: stop, reusable: reusable,
		cancelled: func() bool { mu.Lock(); defer mu.Unlock(); return cancelled }}
	res.resp = resp
	return res
}

// writeRequest writes r's head and body to bw and flushes.
func writeRequest(bw *bufio.Writer, c path.Candidate, r *request, ab *attemptBody) error {
	if err := writeHead(bw, c, r); err != nil {
		return err
	}
	if r.length != 0 && ab != nil {
		var err error
		if r.length < 0 {
			cw := httputil.NewChunkedWriter(bw)
			if _, err = io.Copy(cw, ab); err == nil {
				cw.Close()
				_, err = bw.WriteString("\r\n")
			}
		} else {
			_, err = io.Copy(bw, io.LimitReader(ab, r.length))
		}
		if err != nil {
			return err
		}
	}
	return bw.Flush()
}

// readFinal reads the final response head from uc: interim 1xx answers
// are skipped (at most maxInterim); a head over maxResponseHead, a status
// outside 100-599, 101 (we never ask to switch protocols: Upgrade is
// hop-by-hop and removed) and field names that are not tokens (RFC 9112
// §5.1: "Name : value" is a smuggling shape) are errors.
func readFinal(uc *upConn, method string) (*http.Response, error) {
	uc.lim.n = maxResponseHead
	defer func() { uc.lim.n = -1 }()
	for i := 0; ; i++ {
		resp, err := http.ReadResponse(uc.br, &http.Request{Method: method})
		if err != nil {
			return nil, err
		}
		switch {
		case resp.StatusCode < 100 || resp.StatusCode > 599:
			return nil, errors.New("malformed response status " + strconv.Itoa(resp.StatusCode))
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, errors.New("unexpected 101 Switching Protocols (the proxy does not forward Upgrade)")
		case resp.StatusCode < 200:
			if i >= maxInterim {
				return nil, errors.New("too many interim responses")
			}
			continue
		}
		for k := range resp.Header {
			if !httpmsg.IsTokenString(k) {
				return nil, errors.New("malformed response header field name")
			}
		}
		return resp, nil
	}
}

// writeHead writes the request line and header of r for candidate c:
// origin-form to an origin, absolute-form with Proxy-Authorization to a
// gateway (SPEC GW-4); framing from r.length.
func writeHead(bw *bufio.Writer, c path.Candidate, r *request) error {
	bw.WriteString(r.method)
	bw.WriteByte(' ')
	if c.Direct {
		bw.WriteString(r.target.origin)
	} else {
		bw.WriteString(r.target.absolute)
	}
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(r.target.authority)
	bw.WriteString("\r\n")
	for k, vs := range r.header {
		for _, v := range vs {
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	if auth := c.ProxyAuthorization(); auth != "" {
		bw.WriteString("Proxy-Authorization: ")
		bw.WriteString(auth)
		bw.WriteString("\r\n")
	}
	switch {
	case r.length > 0:
		bw.WriteString("Content-Length: ")
		bw.WriteString(strconv.FormatInt(r.length, 10))
		bw.WriteString("\r\n")
	case r.length < 0:
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	case r.method == http.MethodPost || r.method == http.MethodPut || r.method == http.MethodPatch:
		bw.WriteString("Content-Length: 0\r\n")
	}
	_, err := bw.WriteString("\r\n")
	return err
}

// upBody is a response body read from an upstream connection; at EOF or
// Close the connection goes back to the pool when the exchange is complete.
type upBody struct {
	io.ReadCloser
	uc        *upConn
	pool      *connPool
	stop      func() bool
	reusable  bool
	cancelled func() bool
	eof       bool
	done      bool
}

func (b *upBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
		b.Close() // release the connection before the client sees the end
	}
	return n, err
}

// Buffered is how many response bytes are already read from the socket:
// writeResponse sends a small body together with the head only when it is
// all here (never waiting for a slow body before the head, HTTP-4).
func (b *upBody) Buffered() int { return b.uc.br.Buffered() }

// Close releases the connection: pooled after a complete body, else closed.
func (b *upBody) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	if !b.eof {
		// The caller read exactly Content-Length bytes (or the last chunk
		// is already buffered): one more read returns EOF without
		// touching the network; anything else is not a clean end.
		b.uc.conn.SetReadDeadline(time.Now().Add(time.Millisecond))
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n == 0 && err == io.EOF {
			b.eof = true
		}
	}
	err := b.ReadCloser.Close()
	b.stop()
	// Bytes after the response (an origin that sent more than it framed)
	// would be read as the next answer: such a connection is not reused.
	if b.eof && b.reusable && !b.cancelled() && err == nil && b.uc.br.Buffered() == 0 {
		b.uc.conn.SetDeadline(time.Time{})
		b.pool.put(b.uc)
		return nil
	}
	b.uc.conn.Close()
	return err
}

// errHeaderTimeout is the response-header timeout (SPEC HTTP-4); it is a
// net.Error with Timeout() true, which classifies it as PhaseResponseHeader.
var errHeaderTimeout error = headerTimeout{}

type headerTimeout struct{}

func (headerTimeout) Error() string   { return "timeout awaiting response headers" }
func (headerTimeout) Timeout() bool   { return true }
func (headerTimeout) Temporary() bool { return true }
