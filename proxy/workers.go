package proxy

import (
	"context"
	"net"
	"runtime"
)

// Connection goroutines are reused (CPU per new tunnel). A
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
	var oc openCtx
	for {
		s.serveConn(c, cs, &oc)
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

// openCtx is a connection goroutine's context for opening tunnels: the
// parent of every attempt's context, cancelled with errClientGone when the
// client leaves during the open (SPEC CON-1, connect.go). One that nothing
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
