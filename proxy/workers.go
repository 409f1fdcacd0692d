package proxy

import (
	"net"
	"runtime"
)

// Connection goroutines are reused (issue 20: CPU per new tunnel). A
// goroutine that serves a CONNECT grows its stack twice, from 2 to 8 KiB,
// on the way through the head read and the dial (≈ 7 % of the proxy's CPU
// per new tunnel went to runtime.newstack); a fresh goroutine per
// connection paid that every time. When serveConn returns, its goroutine
// waits for the next accepted connection instead of exiting, so the next
// one starts on the grown stack. The tunnel itself still relays on two
// fresh goroutines with small stacks (relay.go), so an idle tunnel keeps
// its ≈ 4 KiB of stacks; only a bounded number of connection goroutines
// wait idle, and the garbage collector shrinks the stacks of those that
// wait long.

// connJob is an accepted, tracked connection handed to a waiting
// connection goroutine.
type connJob struct {
	c  net.Conn
	cs *connState
}

// maxIdleServers returns how many connection goroutines may wait for a
// next connection: about as many as a busy proxy on this machine has
// between accept and tunnel at once (8 at least; 4 per core).
func maxIdleServers() int64 { return int64(max(8, 4*runtime.GOMAXPROCS(0))) }

// dispatch serves c on a waiting connection goroutine, or on a new one
// when none waits. c is tracked (s.wg counts it), so the new goroutine's
// s.wg.Add cannot race Shutdown's Wait.
func (s *Server) dispatch(c net.Conn, cs *connState) {
	select {
	case s.jobs <- connJob{c: c, cs: cs}:
	default:
		s.wg.Add(1)
		go s.serveLoop(c, cs)
	}
}

// serveLoop serves c, then the connections dispatch hands it, until more
// than s.maxIdle goroutines would wait or the server shuts down.
func (s *Server) serveLoop(c net.Conn, cs *connState) {
	defer s.wg.Done()
	for {
		s.serveConn(c, cs)
		c, cs = nil, nil // a waiting goroutine keeps no connection alive
		if s.idleServers.Add(1) > s.maxIdle {
			s.idleServers.Add(-1)
			return
		}
		select {
		case j := <-s.jobs:
			s.idleServers.Add(-1)
			c, cs = j.c, j.cs
		case <-s.done:
			s.idleServers.Add(-1)
			return
		}
	}
}
