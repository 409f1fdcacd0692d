package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
	"github.com/dual-proxy/dual-proxy/internal/lib/netutil"
)

// One client connection's state machine (serveConn): wait for a head under
// the head deadlines (head.go), refuse a request that comes back round
// through a gateway (the Via loop check), then by the head's form hand the
// connection to a tunnel (connect.go) for good, serve an absolute-form
// request (forward.go) or an origin-form one (handoff.go), and loop while
// the connection can carry another request.

// connState is what the server-wide walks (Shutdown, the pending-head
// cap) read of one client connection. Its goroutine updates it with
// atomics per request, without the server's lock (two lock and
// map updates per request for idle, two for pending heads, shared by every
// connection).
type connState struct {
	idle atomic.Bool // waiting for the next request head
	// pendingSince is when c began waiting for a complete head, in ns since
	// Server.epoch plus one; 0 while it is not waiting (head.go).
	pendingSince atomic.Int64

	// up is the upstream connection of c's CONNECT tunnel, nil before and
	// after (setUpstream; Shutdown force-closes it). Its own lock, not the
	// server's: a new tunnel took the server lock twice more for a map of
	// upstreams.
	upMu sync.Mutex
	up   net.Conn

	io clientIO // what serveConn's reader and writer use (clientIO)
}

// setIdle marks a connection idle (waiting for a request head) or busy. An
// idle connection is closed at once by Shutdown. It reports false when the
// server is closing and the connection should be dropped. The store comes
// before the load of closing and Shutdown stores closing before it loads
// idle (both sequentially consistent atomics), so a connection that turns
// idle during Shutdown either sees closing or is closed by the walk.
func (s *Server) setIdle(cs *connState, idle bool) bool {
	cs.idle.Store(idle)
	return !s.closing.Load()
}

// serveConn runs the request loop of one client connection; oc is its
// goroutine's context for opening tunnels.
func (s *Server) serveConn(c net.Conn, cs *connState, oc *openCtx) {
	relayed := false
	defer func() {
		if relayed {
			return // the tunnel relay closes and untracks c
		}
		c.Close()
		s.untrack(c)
	}()
	cs.io.c = c
	br := getReader(&cs.io)
	// The answer buffer is made on first use: a CONNECT writes its 200
	// straight to c and never needs it (4 KiB less per tunnel).
	var bw *bufio.Writer
	out := func() *bufio.Writer {
		if bw == nil {
			bw = bufio.NewWriterSize(&cs.io, 4096)
		}
		return bw
	}
	var cc connCtx // plain requests' context, made by the first (forward.go)
	defer cc.end()
	var view *handoffConn // net/http's view of c, made by the first origin-form request
	defer func() { view.release() }()
	for first := true; ; first = false {
		if !s.setIdle(cs, true) {
			return
		}
		head, err := s.readHead(c, cs, br, first, &cc)
		if !s.setIdle(cs, false) {
			return
		}
		if err != nil {
			var se *httpmsg.StatusError
			if errors.As(err, &se) {
				s.log.Info("request refused", "status", se.Status, "reason", se.Msg)
				writeSimple(out(), se.Status, se.Msg+"\n", nil)
				lingerIfNotHTTP(c, err)
			}
			return
		}
		if s.via.Looped(head.Vias()) {
			s.log.Warn("request loop detected: a gateway leads back to this proxy", "phase", "connect-response")
			writeSimple(out(), http.StatusLoopDetected, "dual-proxy: request loop detected (a gateway leads back to this proxy)\n", nil)
			return
		}
		switch {
		case head.Method == http.MethodConnect:
			view.release() // the tunnel owns c now
			cc.clearIdle(c)
			relayed = s.handleConnect(c, cs, br, out, head, oc)
			return
		case len(head.Target) > 0 && head.Target[0] == '/' || s.selfTarget(head):
			// Origin-form: the proxy's own endpoints. An
			// absolute-form request naming this listener (a child that
			// ignores NO_PROXY and sends its pool call through the proxy)
			// is served the same way instead of looping back to itself.
			cc.clearIdle(c)
			if !s.handOff(c, br, head, &view) {
				return
			}
		default:
			cs.io.plain()
			if !s.forward(c, br, out(), head, &cc) {
				return
			}
		}
	}
}

// setUpstream records up (nil: forgets it) as the upstream of cs's tunnel,
// so Shutdown can force-close it. It reports false when the server is
// closing: the store comes before the load of closing, and Shutdown
// stores closing before its force-close walk reads up under cs.upMu, so
// a tunnel either sees closing or has its upstream closed by the walk.
func (s *Server) setUpstream(cs *connState, up net.Conn) bool {
	cs.upMu.Lock()
	cs.up = up
	cs.upMu.Unlock()
	if up == nil {
		return true
	}
	if s.closing.Load() {
		cs.upMu.Lock()
		cs.up = nil
		cs.upMu.Unlock()
		return false
	}
	return true
}

// writeSimple writes a short plain-text answer with Connection: close.
func writeSimple(bw *bufio.Writer, status int, body string, extra http.Header) {
	bw.WriteString("HTTP/1.1 ")
	bw.WriteString(itoa(status))
	bw.WriteString(" ")
	bw.WriteString(http.StatusText(status))
	bw.WriteString("\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ")
	bw.WriteString(itoa(len(body)))
	bw.WriteString("\r\nConnection: close\r\n")
	for k, vs := range extra {
		for _, v := range vs {
			bw.WriteString(k + ": " + v + "\r\n")
		}
	}
	bw.WriteString("\r\n")
	bw.WriteString(body)
	bw.Flush()
}

// readers recycles the 4 KiB head readers of client connections that
// became tunnels (the relay reads the socket directly): one allocation and
// clear of 4 KiB less per new tunnel. Plain connections drop
// theirs: a client-gone watch may still hold it (watch.go).
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}

// getReader returns a head reader on c.
func getReader(c io.Reader) *bufio.Reader {
	br := readers.Get().(*bufio.Reader)
	br.Reset(c)
	return br
}

// putReader returns br to the pool; nothing may use it afterwards.
func putReader(br *bufio.Reader) {
	br.Reset(nil)
	readers.Put(br)
}

// clientIO is what a client connection's head reader and answer writer
// read and write: the connection itself until its first plain request,
// then its netutil.RawIO, whose reads and writes do not wake the runtime's
// sysmon thread after each wait (at one request at a time that
// wake was a futex call on the request's path and 10-18 µs of CPU per
// request, rawio.go). Only plain requests switch: a CONNECT's relay
// reads and writes the socket itself, and raw I/O costs four allocations
// per connection to set up.
type clientIO struct {
	c  net.Conn
	rw io.ReadWriter // nil until plain; then set once, by serveConn
}

func (ci *clientIO) Read(p []byte) (int, error) {
	if ci.rw != nil {
		return ci.rw.Read(p)
	}
	return ci.c.Read(p)
}

func (ci *clientIO) Write(p []byte) (int, error) {
	if ci.rw != nil {
		return ci.rw.Write(p)
	}
	return ci.c.Write(p)
}

// plain switches to raw I/O; serveConn calls it before each plain
// request, before the request's client watch may read (watch.go).
func (ci *clientIO) plain() {
	if ci.rw == nil {
		ci.rw = netutil.RawIO(ci.c)
	}
}

// connCtx is the context of one client connection's plain requests, made
// by the first of them and cancelled when the connection ends (one
// context per request registered with the server's base context cost a
// lock and a map insert and delete shared by all connections). Sharing it
// is safe because whatever cancels it ends the connection too: the client
// left (errClientGone, forward then answers that no further request
// follows) or Shutdown cancelled the base context.
//
// It is also the upstream.Interrupter of those requests: one
// context.AfterFunc per connection calls the interrupt of the exchange
// armed at that moment, instead of one AfterFunc per request (two
// allocations and an insert into the context's children). A
// connection's requests are sequential, so one is armed at a time.
type connCtx struct {
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu    sync.Mutex
	armed func() // the exchange's interrupt (under mu)
	ended bool   // ctx ended: the AfterFunc ran (under mu)

	ps *plainScratch // made by the first plain request (scratch)

	// idleArmed: the read deadline of c is the idle deadline that
	// armIdle set at idleSince (a monotonic time since the server's
	// epoch); false: c's read deadline is clear or something else's.
	idleArmed bool
	idleSince time.Duration
}

// clearIdle clears c's read deadline when armIdle left it armed (before
// c goes to a tunnel or to net/http, which read it with their own bounds).
func (cc *connCtx) clearIdle(c net.Conn) {
	if cc.idleArmed {
		c.SetReadDeadline(time.Time{})
		cc.idleArmed = false
	}
}

// end cancels the context, if one was made.
func (cc *connCtx) end() {
	if cc.cancel != nil {
		cc.cancel(nil)
	}
}
