package proxy

// One origin-form request as net/http sees it (SPEC HTTP-1, HTTP-5b): a
// handoffConn is a view of the client connection that carries exactly one
// request — the head the proxy already read, then the request body's bytes
// framed by the proxy's own readers, then nothing — and ends when net/http
// goes idle on it (the answer is complete and keep-alive) or closes it.
// The proxy's loop then reads the next request from the client connection,
// which may be absolute-form or CONNECT again.
//
// Why a view and not a ResponseWriter of our own: the handlers (pool
// streaming with a flush per SSE event, promhttp's gzip, the editor's
// ETag/If-Match, ServeContent's HEAD/304/206, the pool's hijacked 529)
// keep every net/http behaviour — chunked answers, bodyless statuses,
// Expect: 100-continue, the 256 KiB drain of an unread body, keep-alive
// rules for HTTP/1.0 — with nothing re-implemented that could drift from
// it (TestHandoffDifferential compares both servings). The price is
// net/http's per-connection setup per request (a goroutine, pooled
// buffers, a context), well under the dial, accept and TIME_WAIT socket
// per call it replaces (BenchmarkHandoff).

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/httpmsg"
)

// handoffConn is one request's view of a client connection for net/http.
// Writes, addresses and write deadlines are the client connection's.
// Reads return the head, then the body (a read deadline of idleTimeout
// per read, like forward's), then block until net/http's read deadline,
// the end of the request, or the client leaving (the server's client
// watch, forward_watch.go: net/http's background read sees EOF and cancels
// the request context, SPEC HTTP-4). After a hijack, reads and read
// deadlines are the client connection's.
type handoffConn struct {
	net.Conn
	br   *bufio.Reader
	ws   *watchSweeper
	head []byte    // head bytes net/http has not read yet
	body io.Reader // the body's unread part; nil: none, or read to its end

	mu        sync.Mutex
	rdl       time.Time               // net/http's read deadline, for the wait after the body
	wake      chan struct{}           // closed to wake a waiting Read
	wdl       bool                    // a write deadline is set on the client connection
	cancel    context.CancelCauseFunc // of the request's context (handoffContext)
	stopWatch func()                  // the client watch, once the body was read to its end
	watched   bool                    // the watch was started (and maybe stopped again)
	gone      bool                    // the client left (the watch saw EOF)
	broken    bool                    // a body read failed: the connection is not at a request boundary
	hijacked  bool
	ended     bool
	keep      bool          // set with ended: the client connection can carry another request
	endc      chan struct{} // closed when ended is set
}

func newHandoffConn(c net.Conn, br *bufio.Reader, head *httpmsg.RequestHead, ws *watchSweeper) *handoffConn {
	h := &handoffConn{Conn: c, br: br, ws: ws, head: head.Raw, endc: make(chan struct{})}
	switch {
	case head.Chunked:
		h.body = &rechunker{br: br, cr: httputil.NewChunkedReader(br)}
	case head.ContentLength > 0:
		h.body = &lengthReader{r: br, n: head.ContentLength}
	}
	return h
}

// Read serves net/http's reads. Only one runs at a time (net/http's
// connReader serialises them; after a hijack the handler reads).
func (h *handoffConn) Read(p []byte) (int, error) {
	if len(h.head) > 0 {
		n := copy(p, h.head)
		h.head = h.head[n:]
		return n, nil
	}
	h.mu.Lock()
	switch {
	case h.ended:
		h.mu.Unlock()
		if h.hijacked {
			return 0, net.ErrClosed
		}
		return 0, io.EOF // net/http's read for a next request: none on this view
	case h.hijacked:
		h.mu.Unlock()
		return h.br.Read(p)
	case h.body != nil:
		h.mu.Unlock()
		return h.readBody(p)
	}
	return h.waitLocked()
}

// readBody reads the body; at its end the client watch starts.
func (h *handoffConn) readBody(p []byte) (int, error) {
	h.Conn.SetReadDeadline(time.Now().Add(idleTimeout)) // a client that stalls mid-body
	n, err := h.body.Read(p)
	if err == nil {
		return n, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != io.EOF {
		h.broken = true
		return n, err
	}
	h.body = nil
	h.startWatchLocked()
	if n > 0 {
		return n, nil
	}
	return 0, io.EOF
}

// startWatchLocked starts the client watch once (h.mu held; the watch's
// cancel takes h.mu from its own goroutine, never under ws.mu).
func (h *handoffConn) startWatchLocked() {
	if !h.watched && !h.hijacked && !h.ended {
		h.watched = true
		h.stopWatch = h.ws.watch(h.Conn, h.br, h.clientGone)
	}
}

// waitLocked blocks (h.mu held) until the request ends, the client leaves
// (io.EOF for both), or the read deadline passes (os.ErrDeadlineExceeded,
// a net.Error whose Timeout is true: net/http's abortPendingRead).
func (h *handoffConn) waitLocked() (int, error) {
	h.startWatchLocked() // a request without a body reaches here first
	for {
		if h.ended || h.gone {
			h.mu.Unlock()
			return 0, io.EOF
		}
		var tc <-chan time.Time
		var t *time.Timer
		if !h.rdl.IsZero() {
			d := time.Until(h.rdl)
			if d <= 0 {
				h.mu.Unlock()
				return 0, os.ErrDeadlineExceeded
			}
			t = time.NewTimer(d)
			tc = t.C
		}
		wake := make(chan struct{})
		h.wake = wake
		h.mu.Unlock()
		select {
		case <-wake:
		case <-tc:
		}
		if t != nil {
			t.Stop()
		}
		h.mu.Lock()
	}
}

func (h *handoffConn) wakeLocked() {
	if h.wake != nil {
		close(h.wake)
		h.wake = nil
	}
}

// clientGone is the client watch's cancel: the client closed its
// connection while the request was served. It cancels the request's
// context, also when the handler did not read the body to its end
// (net/http's background read starts only then).
func (h *handoffConn) clientGone(error) {
	h.mu.Lock()
	h.gone = true
	h.wakeLocked()
	cancel := h.cancel
	h.mu.Unlock()
	if cancel != nil {
		cancel(errClientGone)
	}
}

// handoffContext is the internal http.Server's ConnContext hook: the
// request context of a handoffConn is cancelled when its client leaves
// (SPEC HTTP-4, POOL-9).
func handoffContext(ctx context.Context, c net.Conn) context.Context {
	h, ok := c.(*handoffConn)
	if !ok {
		return ctx
	}
	ctx, cancel := context.WithCancelCause(ctx)
	h.mu.Lock()
	h.cancel = cancel
	h.mu.Unlock()
	return ctx
}

// SetReadDeadline sets the deadline of the wait after the body (net/http
// sets one only to abort its background read); after a hijack, the client
// connection's.
func (h *handoffConn) SetReadDeadline(t time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hijacked {
		return h.Conn.SetReadDeadline(t)
	}
	h.rdl = t
	h.wakeLocked()
	return nil
}

// SetWriteDeadline sets the client connection's write deadline; clearing
// one that was never set costs nothing (net/http clears it per request).
func (h *handoffConn) SetWriteDeadline(t time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t.IsZero() && !h.wdl {
		return nil
	}
	h.wdl = !t.IsZero()
	return h.Conn.SetWriteDeadline(t)
}

// SetDeadline sets both deadlines.
func (h *handoffConn) SetDeadline(t time.Time) error {
	h.SetReadDeadline(t)
	return h.SetWriteDeadline(t)
}

// Close ends the request without keep-alive: net/http closes a connection
// after an answer with "Connection: close", after an error, and a handler
// that hijacked it closes it when done. The client connection is closed.
func (h *handoffConn) Close() error {
	if h.end(false) {
		return h.Conn.Close()
	}
	return nil
}

// end marks the request over, the client connection reusable when keep;
// it reports whether this call ended it.
func (h *handoffConn) end(keep bool) bool {
	h.mu.Lock()
	if h.ended {
		h.mu.Unlock()
		return false
	}
	h.ended = true
	h.keep = keep && !h.broken && !h.gone && !h.hijacked
	h.wakeLocked()
	h.mu.Unlock()
	close(h.endc)
	return true
}

// hijack switches reads to the client connection; the client watch stops
// first (it must not read concurrently with the handler).
func (h *handoffConn) hijack() {
	h.mu.Lock()
	h.hijacked = true
	stop := h.stopWatch
	h.stopWatch = nil
	h.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// finish waits for the request's end, stops the client watch and reports
// whether the client connection can carry another request.
func (h *handoffConn) finish() bool {
	<-h.endc
	h.mu.Lock()
	stop := h.stopWatch
	h.stopWatch = nil
	keep := h.keep
	h.mu.Unlock()
	if stop != nil {
		stop()
	}
	return keep
}

// handoffState is the internal http.Server's ConnState hook: idle means
// the answer on a handoffConn is complete and keep-alive.
func handoffState(c net.Conn, st http.ConnState) {
	h, ok := c.(*handoffConn)
	if !ok {
		return
	}
	switch st {
	case http.StateIdle:
		h.end(true)
	case http.StateHijacked:
		h.hijack()
	}
}

// rechunker reads a chunked body from the client and hands net/http the
// same body chunked again (the head it parses says chunked), so the view
// ends exactly at the body's end; the trailer section is consumed and not
// passed on (RFC 9110 §6.5.1 lets a recipient drop it).
type rechunker struct {
	br      *bufio.Reader
	cr      io.Reader
	buf     []byte
	pending []byte // framing and data not yet returned
	done    bool
}

func (r *rechunker) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		if r.done {
			return 0, io.EOF
		}
		if r.buf == nil {
			r.buf = make([]byte, 4096+32)
		}
		n, err := r.cr.Read(r.buf[16 : 16+4096])
		if n > 0 {
			hdr := strconv.AppendInt(r.buf[:0:16], int64(n), 16)
			hdr = append(hdr, '\r', '\n')
			start := 16 - len(hdr)
			copy(r.buf[start:], hdr)
			r.pending = append(r.buf[start:16+n], '\r', '\n')
		}
		if err == io.EOF {
			if terr := skipTrailers(r.br); terr != nil {
				return 0, terr
			}
			r.done = true
			r.pending = append(r.pending, "0\r\n\r\n"...)
		} else if err != nil {
			return 0, err
		}
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}
