package proxy

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Client-gone watch of plain requests (a client that hangs up cancels the
// upstream request, like net/http's background read), and of CONNECT opens
// (connect.go).
//
// Watching a client connection costs a goroutine blocked in a read of it,
// and stopping the watch a past read deadline and a hand-off. A request
// answered within clientWatchDelay is not worth that (the watch
// was a third of the plain path's scheduler work at c=1), and neither is a
// timer per request (its arming often wakes the netpoller). So requests
// register with the server's watchSweeper, one goroutine that ticks every
// clientWatchDelay while requests are in flight and starts the watch of
// those older than that; a client leaving a longer request (an agent
// cancelling a model call) still cancels it, at most two ticks later.

// clientWatchDelay is how long a request runs before its client is watched.
const clientWatchDelay = 20 * time.Millisecond

// sweeperIdleTicks is how many ticks without a request in flight the
// sweeper goroutine waits before it exits (a new request starts it again).
const sweeperIdleTicks = 50

// watchSweeper starts the client watches of one server. The zero value is
// ready; done, when set, ends the sweeper (Server.Shutdown), and wg, when
// set, counts the sweeper goroutine (Shutdown waits for it).
type watchSweeper struct {
	done  <-chan struct{}
	wg    *sync.WaitGroup
	delay time.Duration // zero: clientWatchDelay (tests set their own)

	// ticks counts the sweeper's ticks (and starts): a request registered
	// at tick n has run at least delay at tick n+2, so registering reads
	// no clock.
	ticks atomic.Int64

	mu sync.Mutex
	// pending: the registered watches not yet watching, a list through
	// their prev and next (a map insert and delete per plain
	// request before, each hashing under the lock every connection takes).
	pending watchList
	running bool // the sweeper goroutine runs
}

// watchList is a doubly linked list of clientWatches (under ws.mu).
type watchList struct{ first *clientWatch }

// add puts w, not in any list, first.
func (l *watchList) add(w *clientWatch) {
	w.prev, w.next, w.listed = nil, l.first, true
	if l.first != nil {
		l.first.prev = w
	}
	l.first = w
}

// remove takes w out of l; a w not in l is left alone.
func (l *watchList) remove(w *clientWatch) {
	if !w.listed {
		return
	}
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		l.first = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	}
	w.prev, w.next, w.listed = nil, nil, false
}

// clientWatch is one request's watch of its client connection.
type clientWatch struct {
	c      net.Conn
	br     *bufio.Reader
	cancel context.CancelCauseFunc
	since  int64 // ws.ticks when registered
	ws     *watchSweeper
	done   chan struct{} // closed when run returns

	started bool // under ws.mu: run was started
	// prev, next and listed: w's place in ws.pending (under ws.mu).
	prev, next *clientWatch
	listed     bool
	// clearDeadline: start clears c's read deadline first (forward left
	// the idle deadline armed, connCtx.armIdle).
	clearDeadline bool

	// tunnel marks a CONNECT's watch (connect.go): it reads past
	// early bytes and tells a half-close from a departure. quit (made by
	// start) ends its wait after a half-close; probed is what it wrote to
	// c (read after stop).
	tunnel bool
	quit   chan struct{}
	probed int
}

// watch registers a request on c: from clientWatchDelay on, a client that
// closes its connection cancels it with errClientGone. Bytes of a
// pipelined next request stay in br. The watch's stop ends it and must be
// called before br is read again.
func (ws *watchSweeper) watch(c net.Conn, br *bufio.Reader, cancel context.CancelCauseFunc) *clientWatch {
	return ws.register(&clientWatch{c: c, br: br, cancel: cancel, since: ws.ticks.Load(), ws: ws})
}

// watchInto is watch in w, a watch that is new or stopped (a connection's
// plain requests share one, forward). clearDeadline: c's read
// deadline is cleared when the watch starts (before its read).
func (ws *watchSweeper) watchInto(w *clientWatch, c net.Conn, br *bufio.Reader, cancel context.CancelCauseFunc, clearDeadline bool) *clientWatch {
	*w = clientWatch{c: c, br: br, cancel: cancel, since: ws.ticks.Load(), ws: ws, clearDeadline: clearDeadline}
	return ws.register(w)
}

// register adds w to the watches the sweeper starts.
func (ws *watchSweeper) register(w *clientWatch) *clientWatch {
	ws.mu.Lock()
	select {
	case <-ws.done: // shutting down: no sweeper runs; watch at once
		ws.start(w)
		ws.mu.Unlock()
		return w
	default:
	}
	ws.pending.add(w)
	if !ws.running {
		ws.running = true
		if ws.wg != nil {
			ws.wg.Add(1) // the caller's connection is counted too, so Wait has not returned
		}
		go ws.loop()
	}
	ws.mu.Unlock()
	return w
}

// loop starts the watches of requests older than clientWatchDelay, every
// clientWatchDelay, until done or sweeperIdleTicks ticks without requests.
func (ws *watchSweeper) loop() {
	if ws.wg != nil {
		defer ws.wg.Done()
	}
	delay := cmp.Or(ws.delay, clientWatchDelay)
	// Requests registered before this start have run at least delay at
	// the first tick: count the start as a tick.
	ws.ticks.Add(1)
	t := time.NewTicker(delay)
	defer t.Stop()
	for idle := 0; ; {
		select {
		case <-ws.done:
			// Shutdown: in-flight requests finish within the grace
			// period, and a client leaving one of them must still end it,
			// so every pending watch starts now.
			ws.mu.Lock()
			for ws.pending.first != nil {
				ws.start(ws.pending.first)
			}
			ws.running = false
			ws.mu.Unlock()
			return
		case <-t.C:
			tick := ws.ticks.Add(1)
			ws.mu.Lock()
			for w := ws.pending.first; w != nil; {
				next := w.next // start takes w out of the list
				if tick-w.since >= 2 {
					ws.start(w)
				}
				w = next
			}
			if idle++; ws.pending.first != nil {
				idle = 0
			}
			if idle >= sweeperIdleTicks {
				ws.running = false
				ws.mu.Unlock()
				return
			}
			ws.mu.Unlock()
		}
	}
}

// start unregisters w and starts its watch; ws.mu is held.
func (ws *watchSweeper) start(w *clientWatch) {
	ws.pending.remove(w)
	w.started, w.done = true, make(chan struct{})
	if w.tunnel {
		w.quit = make(chan struct{}) // made here: an open that ends sooner pays nothing for it
	}
	if w.clearDeadline {
		// Before stop can see started (it takes ws.mu), so stop's past
		// deadline always comes after this.
		w.c.SetReadDeadline(time.Time{})
	}
	go w.run()
}

// run waits for the client's next byte or EOF.
func (w *clientWatch) run() {
	defer close(w.done)
	if w.tunnel {
		w.runTunnel()
		return
	}
	if _, err := w.br.Peek(1); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return // stopped
		}
		// EOF: the client closed (an agent's cancel). A half-close after
		// the request looks the same and is treated the same, like
		// net/http's server does: cancelling upstream work the client
		// abandoned matters more than half-close clients.
		w.cancel(errClientGone)
	}
}

// stop ends the watch: before it started it only unregisters the request;
// afterwards it aborts the pending Peek and waits for run to return. A nil
// w (no watch) does nothing.
func (w *clientWatch) stop() { w.stopRan() }

// stopRan is stop, reporting whether the watch had started (c's read
// deadline is clear then).
func (w *clientWatch) stopRan() bool {
	if w == nil {
		return false
	}
	ws := w.ws
	ws.mu.Lock()
	if !w.started {
		ws.pending.remove(w)
		ws.mu.Unlock()
		return false // br was not touched
	}
	ws.mu.Unlock()
	if w.quit != nil {
		close(w.quit)
	}
	w.c.SetReadDeadline(time.Unix(1, 0)) // a Peek not yet begun fails at once too
	<-w.done
	w.c.SetReadDeadline(time.Time{})
	return true
}
