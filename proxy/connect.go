package proxy

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/dial"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
	"github.com/dual-proxy/dual-proxy/proxy/relay"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// connectEstablished is the exact CONNECT success answer (SPEC CON-2): no
// Content-Length, no Transfer-Encoding (RFC 9110 §9.3.6). A []byte so the
// write converts nothing per tunnel.
var connectEstablished = []byte("HTTP/1.1 200 Connection established\r\n\r\n")

// handleConnect serves "CONNECT host:port" (SPEC CON-1..CON-3): open a path
// through the first working candidate, answer 200, relay bytes both ways.
//
// It reports true when the tunnel relay owns c from now on: the relay
// closes c and calls s.untrack(c) when the tunnel ends. out gives the
// buffered writer for error answers; oc is the goroutine's open context. The upstream connection is kept in
// cs (not in a server-wide map) so Shutdown can force-close it.
func (s *Server) handleConnect(c net.Conn, cs *connState, br *bufio.Reader, out func() *bufio.Writer, head *httpmsg.RequestHead, oc *openCtx) (relayed bool) {
	host, port, err := splitConnectTarget(head.Target)
	if err != nil {
		writeSimple(out(), 400, "bad CONNECT target: "+err.Error()+"\n", nil)
		return false
	}
	// A client that leaves during a slow open cancels it, racing attempts
	// included, and records no cooldown (the path did not fail): the
	// watch reads c only once the open has taken clientWatchDelay
	// (watch.go), so a fast open costs no goroutine, read or timer for it,
	// and the usual CONNECT
	// (no Via: ours alone) reuses its goroutine's context.
	ctx, cancel := oc.get(s.viaCtx)
	if vias := head.Vias(); len(vias) > 0 {
		ctx, cancel = context.WithCancelCause(dial.WithVia(s.baseCtx, s.via.Chain(vias)))
		defer cancel(nil)
	}
	watch := s.watches.watchTunnel(c, br, cancel)
	up, cand, err := s.engine.Open(ctx, host, port)
	watch.stop()
	if p := watch.probed; p > 0 {
		// The watch wrote the answer's first byte to a half-closed client
		// (connect.go): the answer goes on from there.
		out = func() *bufio.Writer { return bufio.NewWriterSize(&skipWriter{w: c, n: p}, 512) }
	}
	if context.Cause(ctx) == errClientGone {
		opened := ""
		if up != nil {
			up.Close()
			opened = cand.String()
		}
		s.log.Info("CONNECT abandoned: the client closed its connection while the path was opening", clientGoneAttrs(host, opened, err)...)
		return false
	}
	if candidate.IsLocal(err) {
		writeSimple(out(), 503, localAnswer(err), nil)
		return false
	}
	if err != nil {
		writeSimple(out(), 502, "dual-proxy: "+err.Error()+"\n", nil)
		return false
	}
	if !s.setUpstream(cs, up) {
		up.Close()
		return false
	}
	// Open from before the client sees the 200 (metrics, traffic.go).
	s.engine.Counters().OpenTunnels.Add(1)
	if !s.startTunnel(c, br, up, watch.probed) {
		s.engine.Counters().OpenTunnels.Add(-1)
		s.setUpstream(cs, nil)
		up.Close()
		return false
	}
	idle, halfClose := s.engine.TunnelTimeouts() // read per tunnel: a reload changes the bounds of new tunnels only
	relay.Run(c, up, idle, halfClose, func(sent, received int64) {
		s.engine.Counters().Tunnel(cand, sent, received)
		s.engine.Counters().OpenTunnels.Add(-1)
		s.setUpstream(cs, nil)
		s.untrack(c)
	})
	return true
}

// startTunnel writes the 200 answer but its first probed bytes (written by
// the watch) and forwards the bytes the client sent right after its
// CONNECT head (a TLS ClientHello sent before the 200 must not be lost);
// false when either write failed. br goes back
// to the pool: the relay reads c directly.
func (s *Server) startTunnel(c net.Conn, br *bufio.Reader, up net.Conn, probed int) bool {
	if _, err := c.Write(connectEstablished[probed:]); err != nil {
		return false
	}
	if n := br.Buffered(); n > 0 {
		early, _ := br.Peek(n)
		if _, err := up.Write(early); err != nil {
			return false
		}
		br.Discard(n)
	}
	putReader(br)
	return true
}

// clientGoneAttrs are the log attributes of a CONNECT whose client left
// while its path was opening (host, candidate, phase, reason, so the
// operator can tell a departure from a failed path): the attempts the
// departure cancelled (with their phases), or
// the candidate opened names the path that had just opened (phase
// "opened", closed unused).
func clientGoneAttrs(host, opened string, err error) []any {
	if opened != "" {
		return []any{"host", host, "candidate", opened, "phase", "opened", "reason", errClientGone.Error()}
	}
	var cands, phases []string
	var af *engine.AllFailedError
	if errors.As(err, &af) {
		for _, e := range af.Errs {
			var pe *candidate.PathError
			if errors.As(e, &pe) && errors.Is(e, context.Canceled) {
				cands = append(cands, pe.Candidate.String())
				phases = append(phases, string(pe.Phase))
			}
		}
	}
	return []any{"host", host, "candidate", strings.Join(cands, ","), "phase", strings.Join(phases, ","), "reason", errClientGone.Error()}
}

// splitConnectTarget validates an authority-form target "host:port"
// (RFC 9112 §3.2.3), IPv6 literals bracketed, and returns the normalized
// host (lowercase, no brackets, no trailing dot) and port.
func splitConnectTarget(t string) (host string, port int, err error) {
	host, p, err := net.SplitHostPort(t)
	if err != nil {
		return "", 0, errors.New("want host:port")
	}
	port, err = strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 || p[0] < '1' || p[0] > '9' { // digits only, no sign or leading zero
		return "", 0, errors.New("bad port")
	}
	host, err = route.NormalizeHost(host)
	if err != nil {
		return "", 0, err
	}
	return host, port, nil
}

// openCtx is a connection goroutine's context for opening tunnels: the
// parent of every attempt's context, cancelled with errClientGone when the
// client leaves during the open (handleConnect). One that nothing
// cancelled serves the goroutine's next CONNECT too (a cancel
// context per tunnel, registered with the server's base context, was two
// lock round trips and five allocations).
type openCtx struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// get returns the context, derived from parent (s.viaCtx) when there is
// none yet or the last one was cancelled (a client left, Shutdown).
func (o *openCtx) get(parent context.Context) (context.Context, context.CancelCauseFunc) {
	if o.ctx == nil || o.ctx.Err() != nil {
		o.ctx, o.cancel = context.WithCancelCause(parent)
	}
	return o.ctx, o.cancel
}

// The client watch of a CONNECT open. It differs from
// a plain request's in two ways.
//
// Early bytes: a client may send bytes right after its CONNECT head (a TLS
// ClientHello). They stay in br for the tunnel, and the watch goes on
// reading behind them, so a client that sent some and then left is
// noticed as one that sent none (until br's 4 KiB are full: then the
// watch ends, and the open runs to its end).
//
// Half-close: a FIN is not a departure (RFC 9293 §3.6: the client may
// still read; `printf 'CONNECT …' | nc -N` sends its bytes, then FIN, and
// waits for the answer). The read cannot tell a half-close from a close,
// so the watch writes the first byte of the answer, which every answer to
// a CONNECT starts with ("HTTP/1.1 …"): a client that closed its socket
// answers it with a reset, one that half-closed takes it. Until the open
// ends, the watch then checks every clientWatchDelay whether the
// connection was reset (a zero-length write fails), and only a reset
// cancels the open. handleConnect writes the rest of its answer after the
// probe (answerProbe).

// answerProbe is the byte a tunnel watch writes to a half-closed client:
// the first of every answer handleConnect writes.
const answerProbe = "H"

// watchTunnel registers the open of a CONNECT on c (br holds the bytes the
// client sent after its head), as watch does for plain requests; its stop
// ends it, and afterwards probed says how many bytes of the answer were
// written.
func (ws *watchSweeper) watchTunnel(c net.Conn, br *bufio.Reader, cancel context.CancelCauseFunc) *clientWatch {
	return ws.register(&clientWatch{c: c, br: br, cancel: cancel, since: ws.ticks.Load(), ws: ws, tunnel: true})
}

// runTunnel reads the client's bytes into br without consuming them until
// EOF, an error or stop, and cancels the open when the client is gone.
func (w *clientWatch) runTunnel() {
	for {
		_, err := w.br.Peek(w.br.Buffered() + 1)
		if err == nil {
			continue // early bytes: kept, and the watch goes on behind them
		}
		var ne net.Error
		switch {
		case errors.Is(err, bufio.ErrBufferFull), errors.As(err, &ne) && ne.Timeout():
			return // br is full (the open runs to its end), or stopped
		case errors.Is(err, io.EOF):
			w.halfClosed()
		default:
			w.cancel(errClientGone) // reset
		}
		return
	}
}

// halfClosed writes the answer's first byte to a client whose read ended
// with EOF and cancels the open if the client turns out to have closed
// its socket (a reset), until stop.
func (w *clientWatch) halfClosed() {
	if _, err := io.WriteString(w.c, answerProbe); err != nil {
		w.cancel(errClientGone)
		return
	}
	w.probed = len(answerProbe)
	t := time.NewTicker(cmp.Or(w.ws.delay, clientWatchDelay))
	defer t.Stop()
	for {
		select {
		case <-w.quit:
			return
		case <-t.C:
			if _, err := w.c.Write(nil); err != nil {
				w.cancel(errClientGone)
				return
			}
		}
	}
}

// skipWriter drops the first n bytes written to it, then writes to w: an
// answer whose first bytes the tunnel watch already wrote.
type skipWriter struct {
	w io.Writer
	n int
}

func (s *skipWriter) Write(p []byte) (int, error) {
	skip := min(s.n, len(p))
	s.n -= skip
	if skip == len(p) {
		return len(p), nil
	}
	n, err := s.w.Write(p[skip:])
	return skip + n, err
}
