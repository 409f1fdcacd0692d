// Package relay carries the bytes of an open CONNECT tunnel both ways: a
// half-close is passed on as a half-close, an idle tunnel and a half-closed one
// end after their bounds, and on Linux small messages go by read(2)/write(2)
// and bulk by splice(2) without holding a pipe or a buffer while the tunnel is
// idle (io.Copy elsewhere). It knows nothing of how the tunnel was chosen or
// opened: the proxy hands it two connected sockets.
package relay

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/netutil"
)

// Tunnel lifetime bounds (a tunnel whose one side closed while
// the other stayed silent was held forever). A tunnel with no byte in
// either direction for idle is closed; once one direction has ended (EOF,
// propagated as a half-close) the other is closed after
// halfClose without a byte. Non-positive values turn a bound off.
//
// Bytes flow with copyTunnel (on Linux read/write for small messages and
// splice(2) for bulk between two TCP connections, holding no pipe or
// buffer while idle; io.Copy elsewhere): each
// direction copies under a read deadline of one window (a
// quarter of the bound, at most maxWindow) and, when the deadline fires,
// checks the tunnel's last activity; a bound is therefore exact to within
// one window.

// maxWindow caps the read-deadline window of a tunnel direction.
const maxWindow = 10 * time.Second

// tunnel is the shared state of one relayed tunnel: one allocation per
// tunnel for the bounds, the byte counts and the end (the
// counters, the finish closure and the goroutines' captures were six).
type tunnel struct {
	idle, halfClose time.Duration
	last            atomic.Int64 // UnixNano of the last byte moved or half-close
	halfClosed      atomic.Bool  // one direction has ended

	client, up     net.Conn
	sent, received int64           // written by one direction each, read by the last
	left           atomic.Int32    // directions still running
	queued         [2]atomic.Int64 // client's and up's send queue at the last window (drained)
	done           func(sent, received int64)
}

// Run copies bytes both ways until both directions finish or a bound
// (idle, halfClose) closes the tunnel, then closes both connections and
// calls done with the bytes sent to up and received from it. EOF in one
// direction is propagated as a half-close (CloseWrite), not a full close
// (SPEC CON-2); any other error closes both connections. Run returns at
// once: each direction runs on a fresh goroutine, so an idle tunnel keeps
// two small stacks, not the caller's grown one (RSS per idle
// tunnel).
func Run(client, up net.Conn, idle, halfClose time.Duration, done func(sent, received int64)) {
	t := &tunnel{idle: idle, halfClose: halfClose, client: client, up: up, done: done}
	t.touch()
	t.left.Store(2)
	go t.upward()
	go t.downward()
}

// upward copies client to up, downward up to client; the last to end
// closes both connections and reports (the left counter orders each
// direction's count before the report).
func (t *tunnel) upward()   { t.sent = t.pipe(t.up, t.client); t.finish() }
func (t *tunnel) downward() { t.received = t.pipe(t.client, t.up); t.finish() }

func (t *tunnel) finish() {
	if t.left.Add(-1) == 0 {
		t.client.Close()
		t.up.Close()
		t.done(t.sent, t.received)
	}
}

func (t *tunnel) touch() { t.last.Store(time.Now().UnixNano()) }

// drained reports whether a connection's send queue shrank since the
// previous sample, a window earlier at most, and touches t then: a slow
// reader took bytes while the direction writing to it waited for room and
// did not return, so the tunnel is not idle (the idle bound is
// for a tunnel with no byte moving; a reader that stopped leaves the queue
// as it is and is closed). On Linux the queue is SIOCOUTQ; elsewhere
// unknown (copyTunnelFor's writes touch t there).
func (t *tunnel) drained() bool {
	moved := false
	for i, c := range [2]net.Conn{t.client, t.up} {
		q := sendQueued(c)
		if prev := t.queued[i].Swap(q); q >= 0 && q < prev {
			moved = true
		}
	}
	if moved {
		t.touch()
	}
	return moved
}

// socketOf is the socket under c: c itself, or the connection under a
// PrefixConn or a TLS client (an https gateway); nil when there is none.
func socketOf(c net.Conn) syscall.Conn {
	for {
		switch v := c.(type) {
		case *netutil.PrefixConn:
			c = v.Conn
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		case syscall.Conn:
			return v
		default:
			return nil
		}
	}
}

// window is the read-deadline window of a direction under bound limit (> 0).
func window(limit time.Duration) time.Duration {
	return min(max(limit/4, time.Millisecond), maxWindow)
}

// limit is the silence allowed now: halfClose once a direction ended.
func (t *tunnel) limit() time.Duration {
	if t.halfClosed.Load() {
		return t.halfClose
	}
	return t.idle
}

// pipe copies src to dst, then half-closes dst on a clean EOF, or closes
// both on error or when the tunnel was silent past its bound. It returns
// the bytes written to dst. Between two *net.TCPConn copyTunnel uses
// read/write and splice(2) on Linux.
func (t *tunnel) pipe(dst, src net.Conn) (written int64) {
	if pc, ok := src.(*netutil.PrefixConn); ok {
		if len(pc.Prefix) > 0 {
			w, err := dst.Write(pc.Prefix)
			written += int64(w)
			if err != nil {
				dst.Close()
				src.Close()
				return written
			}
			pc.Prefix = nil
			t.touch()
		}
		src = pc.Conn
	}
	if pc, ok := dst.(*netutil.PrefixConn); ok {
		dst = pc.Conn
	}
	for {
		limit := t.limit()
		if limit > 0 {
			src.SetReadDeadline(time.Now().Add(window(limit)))
		} else {
			src.SetReadDeadline(time.Time{})
		}
		if t.limit() != limit {
			// The other direction half-closed between reading the bound
			// and setting it, and its shorter deadline may have been
			// overwritten by ours: set the new bound (the
			// closer stores halfClosed before it sets our deadline).
			continue
		}
		n, err := copyTunnelFor(t, dst, src)
		written += n
		if n > 0 {
			t.touch()
		}
		if err == nil {
			break // EOF
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			drained := t.drained() // sampled every window
			if l := t.limit(); l <= 0 || drained || time.Since(time.Unix(0, t.last.Load())) < l {
				continue // the tunnel is alive, or the bound changed: next window
			}
		}
		dst.Close()
		src.Close()
		return written
	}
	// This direction ended: the other may stay silent for halfClose only,
	// counted from now. If the other ended first, Run closes both
	// connections now (a FIN each; no half-close to send).
	t.touch()
	if !t.halfClosed.CompareAndSwap(false, true) {
		return written
	}
	if t.halfClose > 0 {
		// The other direction checks the shorter bound within one of its
		// windows; not at once: waking it now cost every short-lived
		// tunnel a goroutine switch.
		dst.SetReadDeadline(time.Now().Add(window(t.halfClose)))
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() == nil {
			return written
		}
	}
	dst.Close()
	return written
}

// ioCopy is io.Copy from src to dst; with a tunnel t, every write to dst
// touches t (a write that waits long for a slow reader still
// moves bytes, and the idle bound must not close the tunnel meanwhile).
func ioCopy(t *tunnel, dst, src net.Conn) (int64, error) {
	if t == nil {
		return io.Copy(dst, src)
	}
	return io.Copy(touchWriter{w: dst, t: t}, src)
}

// touchWriter touches its tunnel after every write that moved bytes.
type touchWriter struct {
	w io.Writer
	t *tunnel
}

func (w touchWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if n > 0 {
		w.t.touch()
	}
	return n, err
}
