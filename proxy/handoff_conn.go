package proxy

// The proxy's own endpoints on a keep-alive connection: a handoffConn is
// net/http's view of a client connection that
// carries only the origin-form requests the proxy's loop assigns to it —
// for each, the head the loop already read, then the body's bytes framed
// by the proxy's own readers, then nothing until net/http goes idle on it
// (the answer is complete and keep-alive). The loop then reads the next
// request itself, which may be absolute-form or CONNECT; the next
// origin-form one goes to the same view, so net/http's connection (its
// goroutine with its grown stack, its buffers) lives as long as the
// client's instead of being set up per request.
//
// Why a view and not a ResponseWriter of our own: the handlers (pool
// streaming with a flush per SSE event, promhttp's gzip, the editor's
// ETag/If-Match, ServeContent's HEAD/304/206, the pool's hijacked 529)
// keep every net/http behaviour — chunked answers, bodyless statuses,
// Expect: 100-continue, the 256 KiB drain of an unread body, keep-alive
// rules for HTTP/1.0 — with nothing re-implemented that could drift from
// it (TestHandoffDifferential compares both servings). The price is two
// goroutine hand-offs per request (loop → net/http → loop) and a few small
// allocations (BenchmarkHandoffPool).

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"sync"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
)

// States of a handoffConn.
const (
	viewIdle    = iota // between requests: reads wait for the next origin-form request
	viewServing        // a request is assigned: reads return its head, then its body
	viewClosed         // net/http closed the view, or the loop let go of the connection
)

// handoffConn is a client connection's view for net/http, one per client
// connection that sends origin-form requests: net/http's connection (its
// goroutine, buffers and grown stack) lives as long as the client's, and
// the loop feeds it the origin-form requests one at a time (serve).
// Writes, addresses and write deadlines are the client connection's while
// a request is served. Reads return the request's head, then its body (a
// read deadline of idleTimeout per read, like forward's), then block until
// net/http's read deadline, the request's end, or the client leaving (the
// server's client watch, watch.go, cancels the connection's
// context, so a pool call whose client hung up stops spending the
// model's time). Between requests reads block until the
// loop assigns the next one, or return io.EOF once it let go of the
// connection (a CONNECT, the client left). After a hijack, reads and read
// deadlines are the client connection's.
type handoffConn struct {
	net.Conn
	br *bufio.Reader
	ws *watchSweeper

	mu        sync.Mutex
	state     int
	head      []byte                  // head bytes net/http has not read yet
	body      io.Reader               // the body's unread part; nil: none, or read to its end
	rdl       time.Time               // net/http's read deadline, for the waits
	wake      chan struct{}           // closed to wake a waiting Read
	wdl       bool                    // a write deadline is set on the client connection
	cancel    context.CancelCauseFunc // of the connection's context (handoffContext)
	stopWatch func()                  // the client watch, once the body was read to its end
	watched   bool                    // this request's watch was started (and maybe stopped)
	gone      bool                    // the client left (the watch saw EOF)
	broken    bool                    // a body read failed: the connection is not at a request boundary
	hijacked  bool
	keep      bool          // set when endc closes: the client connection can carry another request
	endc      chan struct{} // closed when the assigned request ends
}

func newHandoffConn(c net.Conn, br *bufio.Reader, ws *watchSweeper) *handoffConn {
	return &handoffConn{Conn: c, br: br, ws: ws}
}

// assign makes head the view's request; false when the view is not idle
// (net/http closed it: the caller starts a new view).
func (h *handoffConn) assign(head *httpmsg.RequestHead) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != viewIdle || h.gone || h.broken {
		return false
	}
	h.head, h.body = head.Raw, nil
	switch {
	case head.Chunked:
		h.body = &rechunker{br: h.br, cr: httputil.NewChunkedReader(h.br)}
	case head.ContentLength > 0:
		h.body = &lengthReader{r: h.br, n: head.ContentLength}
	}
	h.watched, h.keep = false, false
	h.endc = make(chan struct{})
	h.state = viewServing
	h.wakeLocked()
	return true
}

// finish waits for the assigned request's end, stops the client watch and
// reports whether the client connection can carry another request.
func (h *handoffConn) finish() bool {
	h.mu.Lock()
	endc := h.endc
	h.mu.Unlock()
	<-endc
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

// release lets go of the client connection (the loop ends or relays it):
// net/http's next read is io.EOF and the view never touches it again. A
// nil view has nothing to release.
func (h *handoffConn) release() {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.state = viewClosed
	h.wakeLocked()
	h.mu.Unlock()
}

// Read serves net/http's reads. Only one runs at a time (net/http's
// connReader serialises them; after a hijack the handler reads).
func (h *handoffConn) Read(p []byte) (int, error) {
	h.mu.Lock()
	for {
		switch {
		case h.state == viewClosed:
			h.mu.Unlock()
			if h.hijacked {
				return 0, net.ErrClosed
			}
			return 0, io.EOF
		case h.state == viewIdle:
		case len(h.head) > 0:
			n := copy(p, h.head)
			h.head = h.head[n:]
			h.mu.Unlock()
			return n, nil
		case h.hijacked:
			h.mu.Unlock()
			return h.br.Read(p)
		case h.body != nil:
			h.mu.Unlock()
			return h.readBody(p)
		case h.gone:
			h.mu.Unlock()
			return 0, io.EOF
		default:
			h.startWatchLocked() // a request without a body reaches here first
		}
		if err := h.waitLocked(); err != nil {
			h.mu.Unlock()
			return 0, err
		}
	}
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

// startWatchLocked starts the request's client watch once (h.mu held; the
// watch's cancel takes h.mu from its own goroutine, never under ws.mu).
func (h *handoffConn) startWatchLocked() {
	if !h.watched && !h.hijacked {
		h.watched = true
		h.stopWatch = h.ws.watch(h.Conn, h.br, h.clientGone).stop
	}
}

// waitLocked blocks (h.mu held, and held again on return) until woken or
// the read deadline passes (os.ErrDeadlineExceeded, a net.Error whose
// Timeout is true: net/http's abortPendingRead).
func (h *handoffConn) waitLocked() error {
	var tc <-chan time.Time
	var t *time.Timer
	if !h.rdl.IsZero() {
		d := time.Until(h.rdl)
		if d <= 0 {
			return os.ErrDeadlineExceeded
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
	return nil
}

func (h *handoffConn) wakeLocked() {
	if h.wake != nil {
		close(h.wake)
		h.wake = nil
	}
}

// clientGone is the client watch's cancel: the client closed its
// connection while a request was served. It cancels the connection's
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
// requests' context of a handoffConn is cancelled when its client leaves,
// so a handler (a pool call) stops work nobody will read.
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

// Write writes to the client connection while a request is served (never
// after the loop let go of it: a CONNECT tunnel may own it).
func (h *handoffConn) Write(p []byte) (int, error) {
	h.mu.Lock()
	ok := h.state == viewServing
	h.mu.Unlock()
	if !ok {
		return 0, net.ErrClosed
	}
	return h.Conn.Write(p)
}

// SetReadDeadline sets the deadline of the waits (net/http sets one only
// to abort its background read); after a hijack, the client
// connection's.
func (h *handoffConn) SetReadDeadline(t time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hijacked && h.state == viewServing {
		return h.Conn.SetReadDeadline(t)
	}
	h.rdl = t
	h.wakeLocked()
	return nil
}

// SetWriteDeadline sets the client connection's write deadline while a
// request is served; clearing one that was never set costs nothing
// (net/http clears it per request).
func (h *handoffConn) SetWriteDeadline(t time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != viewServing || t.IsZero() && !h.wdl {
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

// Close closes the view. While a request is served it ends it without
// keep-alive and closes the client connection: net/http closes after an
// answer with "Connection: close" or an error, and a handler that hijacked
// the connection closes it when done. Between requests (Shutdown closing
// idle connections, or net/http after the io.EOF of release) the client
// connection stays the loop's.
func (h *handoffConn) Close() error {
	h.mu.Lock()
	serving := h.state == viewServing
	h.state = viewClosed
	h.wakeLocked()
	if serving {
		close(h.endc)
	}
	h.mu.Unlock()
	if serving {
		return h.Conn.Close()
	}
	return nil
}

// idle is net/http's StateIdle: the assigned request's answer is complete
// and keep-alive.
func (h *handoffConn) idle() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != viewServing {
		return
	}
	h.state = viewIdle
	h.keep = !h.broken && !h.gone && !h.hijacked
	h.head, h.body = nil, nil
	close(h.endc)
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

// handoffState is the internal http.Server's ConnState hook.
func handoffState(c net.Conn, st http.ConnState) {
	h, ok := c.(*handoffConn)
	if !ok {
		return
	}
	switch st {
	case http.StateIdle:
		h.idle()
	case http.StateHijacked:
		h.hijack()
	}
}
