package proxy

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"

	"github.com/dual-proxy/dual-proxy/internal/httpmsg"
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
	// included (SPEC CON-1; CD-1: no cooldown): the watch reads c only once
	// the open has taken clientWatchDelay (forward_watch.go), so a fast
	// open costs no goroutine, read or timer for it, and the usual CONNECT
	// (no Via: ours alone) reuses its goroutine's context (workers.go).
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
		// (connect_watch.go): the answer goes on from there.
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
	idle, halfClose := s.engine.TunnelTimeouts() // the bounds of a new tunnel (SPEC OPS-7)
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
// CONNECT head (SPEC CON-2); false when either write failed. br goes back
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
// while its path was opening (SPEC CON-1, HTTP-6: host, candidate, phase,
// reason): the attempts the departure cancelled (with their phases), or
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
