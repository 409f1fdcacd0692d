package proxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strconv"

	"github.com/dual-proxy/dual-proxy/internal/httpmsg"
	"github.com/dual-proxy/dual-proxy/proxy/dial"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// connectEstablished is the exact CONNECT success answer (SPEC CON-2): no
// Content-Length, no Transfer-Encoding (RFC 9110 §9.3.6).
const connectEstablished = "HTTP/1.1 200 Connection established\r\n\r\n"

// handleConnect serves "CONNECT host:port" (SPEC CON-1..CON-3): open a path
// through the first working candidate, answer 200, relay bytes both ways.
//
// It reports true when the tunnel relay owns c from now on: the relay
// closes c and calls s.untrack(c) when the tunnel ends. out gives the
// buffered writer for error answers.
func (s *Server) handleConnect(c net.Conn, br *bufio.Reader, out func() *bufio.Writer, head *httpmsg.RequestHead) (relayed bool) {
	host, port, err := splitConnectTarget(head.Target)
	if err != nil {
		writeSimple(out(), 400, "bad CONNECT target: "+err.Error()+"\n", nil)
		return false
	}
	up, cand, err := s.engine.openTunnel(dial.WithVia(s.baseCtx, s.engine.viaChain(head.Vias())), host, port)
	if isLocal(err) {
		writeSimple(out(), 503, localAnswer(err), nil)
		return false
	}
	if err != nil {
		writeSimple(out(), 502, "dual-proxy: "+err.Error()+"\n", nil)
		return false
	}
	if !s.trackUpstream(up, true) {
		up.Close()
		return false
	}
	// Open from before the client sees the 200 (metrics, traffic.go).
	s.engine.traffic.open.Add(1)
	abandon := func() bool {
		s.engine.traffic.open.Add(-1)
		s.trackUpstream(up, false)
		up.Close()
		return false
	}
	if _, err := io.WriteString(c, connectEstablished); err != nil {
		return abandon()
	}
	// Bytes the client sent right after its CONNECT head (SPEC CON-2).
	if n := br.Buffered(); n > 0 {
		early, _ := br.Peek(n)
		if _, err := up.Write(early); err != nil {
			return abandon()
		}
		br.Discard(n)
	}
	relay(c, up, s.engine.cfg.TunnelIdleTimeout, s.engine.cfg.TunnelHalfCloseTimeout, func(sent, received int64) {
		s.engine.countTunnel(cand, sent, received)
		s.engine.traffic.open.Add(-1)
		s.trackUpstream(up, false)
		s.untrack(c)
	})
	return true
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
