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
func (s *Server) readHead(c net.Conn, cs *connState, br *bufio.Reader, first bool) (*httpmsg.RequestHead, error) {
	if !first && br.Buffered() == 0 {
		c.SetReadDeadline(time.Now().Add(idleTimeout))
		if _, err := br.Peek(1); err != nil {
			return nil, errClientGone
		}
	}
	now := time.Now()
	s.pendingHead(c, cs, now)
	defer s.headDone(cs)
	// The head deadline replaces the idle one (no clearing in between: each
	// deadline change is a runtime timer operation, issue 20).
	c.SetReadDeadline(now.Add(s.engine.cfg.HeadTimeout))
	defer c.SetReadDeadline(time.Time{})
	return httpmsg.ReadRequestHead(br)
}

// pendingHead marks c as waiting for a complete head since now. Going past
// MaxPendingHeads closes the connection that has waited longest (its read
// fails and its goroutine ends). The common case is two atomic operations
// and no lock (issue 20); only a connection over the cap takes the
// server's lock to find the oldest.
func (s *Server) pendingHead(c net.Conn, cs *connState, now time.Time) {
	cs.pendingSince.Store(int64(now.Sub(s.epoch)) + 1)
	if s.nPending.Add(1) <= int64(s.engine.cfg.MaxPendingHeads) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Another connection over the cap may have closed one meanwhile.
	for s.nPending.Load() > int64(s.engine.cfg.MaxPendingHeads) {
		var oldest net.Conn
		var ocs *connState
		var since int64
		for pc, pcs := range s.conns {
			t := pcs.pendingSince.Load()
			if pc != c && t != 0 && (oldest == nil || t < since) {
				oldest, ocs, since = pc, pcs, t
			}
		}
		if oldest == nil {
			return
		}
		// The CAS loses when the connection completed its head meanwhile
		// (headDone counted it then): look again.
		if ocs.pendingSince.CompareAndSwap(since, 0) {
			s.nPending.Add(-1)
			oldest.Close()
			s.log.Debug("closed the oldest connection without a complete request head", "limit", s.engine.cfg.MaxPendingHeads)
		}
	}
}

// headDone forgets cs as waiting for a head, unless the cap already did
// (the connection was closed as the oldest).
func (s *Server) headDone(cs *connState) {
	if cs.pendingSince.Swap(0) != 0 {
		s.nPending.Add(-1)
	}
}

// pendingHeads is the number of connections waiting for a complete head.
func (s *Server) pendingHeads() int { return int(s.nPending.Load()) }
