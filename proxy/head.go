package proxy

import (
	"bufio"
	"bytes"
	"cmp"
	"io"
	"net"
	"slices"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
)

// Slow-head bounds (2,000 connections that each sent a head one
// byte at a time were all kept for 5 min). A connection's first head must
// be complete Config.HeadTimeout after accept; between requests the proxy
// waits idleTimeout for the first byte of the next head, then HeadTimeout
// for the rest. At most Config.MaxPendingHeads connections may be waiting
// for a head that is not complete (keep-alive connections between requests
// do not count); past that the oldest of them is closed.

// Non-HTTP clients (SPEC HTTP-5d). A request line starts with a method, an
// RFC 9110 §5.6.2 token, or with the empty lines RFC 9112 §2.2 lets a
// server skip. A first byte that is neither cannot become a request: the
// usual one is 0x16, a TLS ClientHello from a client given an https://
// proxy URL for this plain-HTTP proxy, which would otherwise wait for a
// line end until the head timeout and get a bare close. Such a client is
// answered 400 at once with a body that says what happened, its
// connection is closed, and the refusal is counted (Traffic.NotHTTP).

// readHead reads the next request head on c; first is true for the
// connection's first request. Errors are ReadRequestHead's, a read
// deadline error, or errClientGone (the client left between requests, or
// the connection was closed as the oldest pending one). The head is read
// into the one cc's last plain request left (httpmsg.ReadRequestHeadInto).
//
// Between requests the idle deadline bounds the wait for the next head.
// When the head then arrives whole it stays armed (cc.armIdle): forward
// clears it only where its own reads need that, and serveConn before a
// CONNECT or a hand-off (cc.clearIdle).
func (s *Server) readHead(c net.Conn, cs *connState, br *bufio.Reader, first bool, cc *connCtx) (*httpmsg.RequestHead, error) {
	reuse := cc.nextHead()
	if !first && br.Buffered() == 0 {
		cc.armIdle(c, s.epoch)
		if _, err := br.Peek(1); err != nil {
			return nil, errClientGone
		}
		if err := s.checkRequestStart(br); err != nil {
			return nil, err
		}
		if headBuffered(br) {
			// The whole head is here: parsing it reads nothing from c, so
			// neither the head deadline nor the pending-head mark (both
			// bound a client slow to send its head) is needed (a
			// timer operation, a clock read and four atomics fewer).
			return httpmsg.ReadRequestHeadInto(br, reuse)
		}
	}
	now := time.Now()
	s.pendingHead(c, cs, now)
	defer s.headDone(cs)
	// The head deadline replaces the idle one (no clearing in between: each
	// deadline change is a runtime timer operation).
	c.SetReadDeadline(now.Add(s.engine.HeadTimeout()))
	defer c.SetReadDeadline(time.Time{})
	cc.idleArmed = false
	if err := s.checkRequestStart(br); err != nil {
		return nil, err
	}
	return httpmsg.ReadRequestHeadInto(br, reuse)
}

// headBuffered reports whether br holds a complete request head (up to its
// blank line; a head ending in bare LFs takes the general path).
func headBuffered(br *bufio.Reader) bool {
	b, _ := br.Peek(br.Buffered())
	return bytes.Contains(b, []byte("\r\n\r\n"))
}

// idleSlack is how old the armed idle deadline may be when a wait for
// the next head keeps it instead of arming a new one: a connection's idle
// bound is then between idleTimeout-idleSlack and idleTimeout (arming
// and clearing the deadline per request costs two runtime timer operations
// and a clock read).
const idleSlack = time.Second

// armIdle makes c's read deadline idleTimeout from now, within idleSlack
// (one monotonic clock read when the armed one is recent enough).
func (cc *connCtx) armIdle(c net.Conn, epoch time.Time) {
	now := time.Since(epoch)
	if cc.idleArmed && now-cc.idleSince < idleSlack {
		return
	}
	c.SetReadDeadline(epoch.Add(now + idleTimeout))
	cc.idleArmed, cc.idleSince = true, now
}

// nextHead returns the head the last plain request left for reuse, or nil;
// either way the next head read owns it (a CONNECT or hand-off keeps its
// head).
func (cc *connCtx) nextHead() *httpmsg.RequestHead {
	if cc.ps == nil {
		return nil
	}
	h := cc.ps.head
	cc.ps.head = nil
	return h
}

// pendingHead marks c as waiting for a complete head since now. Going past
// MaxPendingHeads closes the connection that has waited longest (its read
// fails and its goroutine ends). The common case is two atomic operations
// and no lock; only a connection over the cap takes the
// server's lock to close the oldest.
func (s *Server) pendingHead(c net.Conn, cs *connState, now time.Time) {
	cs.pendingSince.Store(int64(now.Sub(s.epoch)) + 1)
	if s.nPending.Add(1) <= s.maxPending {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Another connection over the cap may have closed one meanwhile.
	for s.nPending.Load() > s.maxPending {
		if len(s.victims) == 0 && !s.collectVictims(c) {
			return
		}
		v := s.victims[0]
		s.victims[0] = pendingConn{}
		s.victims = s.victims[1:]
		// The CAS loses when the connection completed its head since the
		// walk (headDone counted it then) or waits for a later one: next.
		if v.cs.pendingSince.CompareAndSwap(v.since, 0) {
			s.nPending.Add(-1)
			v.c.Close()
			s.log.Debug("closed the oldest connection without a complete request head", "limit", s.maxPending)
		}
	}
}

// pendingConn is a connection that waited for a head since since (ns from
// the server's epoch, +1) when the victims were collected.
type pendingConn struct {
	c     net.Conn
	cs    *connState
	since int64
}

// collectVictims fills s.victims (s.mu held) with every connection but c
// waiting for a head, oldest first, and reports whether there is one. One
// walk of all tracked connections serves the evictions of about as many
// arrivals as were pending, instead of one walk per arrival past the cap
// (a slow-head attack with many tunnels open made each arrival walk them
// all). Oldest-first stays exact: a connection that starts waiting after
// the walk is younger than every one collected, and one that completed
// its head and waits again has a new since, which the CAS rejects.
func (s *Server) collectVictims(c net.Conn) bool {
	s.walks++
	for pc, pcs := range s.conns {
		if t := pcs.pendingSince.Load(); pc != c && t != 0 {
			s.victims = append(s.victims, pendingConn{c: pc, cs: pcs, since: t})
		}
	}
	slices.SortFunc(s.victims, func(a, b pendingConn) int { return cmp.Compare(a.since, b.since) })
	return len(s.victims) > 0
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

// Answers to a first byte that cannot start a request line. They are
// *httpmsg.StatusError, so serveConn writes them as any refused head.
var (
	errTLSClient = &httpmsg.StatusError{Status: 400,
		Msg: "this is an HTTP proxy: use http:// in the proxy URL (the client began a TLS handshake)"}
	errSOCKSClient = &httpmsg.StatusError{Status: 400,
		Msg: "this is an HTTP proxy: use http:// in the proxy URL (the client spoke SOCKS)"}
	errNotHTTP = &httpmsg.StatusError{Status: 400,
		Msg: "this is an HTTP proxy: the request does not start with an HTTP request line"}
)

// checkRequestStart peeks at the next byte of br (a client's head is due)
// and returns the answer for it when it cannot start a request line,
// counting it; nil when it can, or when the peek fails (the head reader
// then reports that failure).
func (s *Server) checkRequestStart(br *bufio.Reader) error {
	b, err := br.Peek(1)
	if err != nil || startsRequestLine(b[0]) {
		return nil
	}
	kind, answer := classifyNotHTTP(b[0])
	s.engine.Counters().NotHTTP[kind].Add(1)
	return answer
}

// startsRequestLine reports whether a request head may begin with b: a
// method's first byte (a token character) or the CR or LF of an empty
// line before the request line (RFC 9112 §2.2).
func startsRequestLine(b byte) bool {
	return b == '\r' || b == '\n' || httpmsg.IsToken([]byte{b})
}

// classifyNotHTTP names what a client whose first byte is b (not one of
// startsRequestLine's) most likely speaks: 0x16 is a TLS handshake record
// (RFC 8446 §5.1), 0x04 and 0x05 the SOCKS versions (RFC 1928 §3).
func classifyNotHTTP(b byte) (int, *httpmsg.StatusError) {
	switch b {
	case 0x16:
		return engine.NotHTTPTLS, errTLSClient
	case 0x04, 0x05:
		return engine.NotHTTPSOCKS, errSOCKSClient
	}
	return engine.NotHTTPOther, errNotHTTP
}

// notHTTPLinger bounds how long a refused non-HTTP client's further bytes
// are read and dropped after the answer, and how many.
const (
	notHTTPLinger    = time.Second
	notHTTPLingerMax = 64 << 10 // bytes
)

// lingerIfNotHTTP runs after the answer to err was written on c: for a
// non-HTTP refusal it half-closes c and drops what the client still sends
// until it closes, for at most notHTTPLinger and notHTTPLingerMax bytes. A
// close with unread bytes queued sends a TCP reset, which can destroy the
// answer before the client reads it (net/http lingers for the same
// reason).
func lingerIfNotHTTP(c net.Conn, err error) {
	if err != errTLSClient && err != errSOCKSClient && err != errNotHTTP {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); !ok || cw.CloseWrite() != nil {
		return
	}
	c.SetReadDeadline(time.Now().Add(notHTTPLinger))
	io.CopyN(io.Discard, c, notHTTPLingerMax)
}
