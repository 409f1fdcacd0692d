package proxy

import (
	"bufio"
	"net"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/httpmsg"
)

// Slow-head bounds (issue 13: 2,000 connections that each sent a head one
// byte at a time were all kept for 5 min). A connection's first head must
// be complete Config.HeadTimeout after accept; between requests the proxy
// waits idleTimeout for the first byte of the next head, then HeadTimeout
// for the rest. At most Config.MaxPendingHeads connections may be waiting
// for a head that is not complete (keep-alive connections between requests
// do not count); past that the oldest of them is closed.

// readHead reads the next request head on c; first is true for the
// connection's first request. Errors are ReadRequestHead's, a read
// deadline error, or errClientGone (the client left between requests, or
// the connection was closed as the oldest pending one).
func (s *Server) readHead(c net.Conn, br *bufio.Reader, first bool) (*httpmsg.RequestHead, error) {
	if !first && br.Buffered() == 0 {
		c.SetReadDeadline(time.Now().Add(idleTimeout))
		if _, err := br.Peek(1); err != nil {
			return nil, errClientGone
		}
	}
	s.pendingHead(c, true)
	defer s.pendingHead(c, false)
	// The head deadline replaces the idle one (no clearing in between: each
	// deadline change is a runtime timer operation, issue 20).
	c.SetReadDeadline(time.Now().Add(s.engine.cfg.HeadTimeout))
	defer c.SetReadDeadline(time.Time{})
	return httpmsg.ReadRequestHead(br)
}

// pendingHead registers (add) or forgets c as waiting for a complete head.
// Adding past MaxPendingHeads closes the connection that has waited
// longest (its read fails and its goroutine ends).
func (s *Server) pendingHead(c net.Conn, add bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		delete(s.pending, c)
		return
	}
	s.pending[c] = time.Now()
	if len(s.pending) <= s.engine.cfg.MaxPendingHeads {
		return
	}
	var oldest net.Conn
	var since time.Time
	for pc, t := range s.pending {
		if pc != c && (oldest == nil || t.Before(since)) {
			oldest, since = pc, t
		}
	}
	if oldest != nil {
		delete(s.pending, oldest)
		oldest.Close()
		s.log.Debug("closed the oldest connection without a complete request head", "limit", s.engine.cfg.MaxPendingHeads)
	}
}

// pendingHeads is the number of connections waiting for a complete head.
func (s *Server) pendingHeads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}
