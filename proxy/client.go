package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"sync"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/route"
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
	br    *bufio.Reader
	bw    *bufio.Writer
	key   string
	since time.Time // idle since
}

// connPool holds idle upstream connections, newest last per key.
type connPool struct {
	mu   sync.Mutex
	idle map[string][]*upConn
	n    int
}

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
		if time.Since(c.since) < idleConnTimeout {
			return c
		}
		c.conn.Close()
	}
}

// put returns c to the pool, or closes it when the pool is full.
func (p *connPool) put(c *upConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idle == nil {
		p.idle = map[string][]*upConn{}
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
	uc := &upConn{conn: conn, br: bufio.NewReaderSize(conn, 4096), bw: bufio.NewWriterSize(conn, 4096), key: key}
	return e.exchange(ctx, a, r, ab, uc, false)
}

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
	if err := writeHead(uc.bw, a.cand, r); err != nil {
		return fail(err)
	}
	if r.length != 0 && ab != nil {
		var err error
		if r.length < 0 {
			cw := httputil.NewChunkedWriter(uc.bw)
			if _, err = io.Copy(cw, ab); err == nil {
				cw.Close()
				_, err = uc.bw.WriteString("\r\n")
			}
		} else {
			_, err = io.Copy(uc.bw, io.LimitReader(ab, r.length))
		}
		if err != nil {
			return fail(err)
		}
	}
	if err := uc.bw.Flush(); err != nil {
		if reused {
			return fail(errStaleConn)
		}
		return fail(err)
	}
	uc.conn.SetReadDeadline(time.Now().Add(e.cfg.ResponseTimeout))
	var resp *http.Response
	for {
		var err error
		resp, err = http.ReadResponse(uc.br, &http.Request{Method: r.method})
		if err != nil {
			if reused && uc.br.Buffered() == 0 && (errors.Is(err, io.EOF) || isClosed(err)) {
				return fail(errStaleConn)
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && ctx.Err() == nil {
				err = errHeaderTimeout
			}
			return fail(err)
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != 101 {
			continue // interim answers (we never send Expect upstream)
		}
		break
	}
	uc.conn.SetReadDeadline(time.Time{})
	reusable := !resp.Close
	resp.Body = &upBody{ReadCloser: resp.Body, uc: uc, pool: &e.conns, stop: stop, reusable: reusable,
		cancelled: func() bool { mu.Lock(); defer mu.Unlock(); return cancelled }}
	res.resp = resp
	return res
}

// writeHead writes the request line and header of r for candidate c:
// origin-form to an origin, absolute-form with Proxy-Authorization to a
// gateway (SPEC GW-4); framing from r.length.
func writeHead(bw *bufio.Writer, c route.Candidate, r *request) error {
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
